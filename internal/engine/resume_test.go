package engine

import (
	"context"
	"encoding/json"
	"errors"
	"iter"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/pincerbot/pincer/internal/agent"
	"github.com/pincerbot/pincer/internal/channel"
	"github.com/pincerbot/pincer/internal/llm"
	"github.com/pincerbot/pincer/internal/msg"
	"github.com/pincerbot/pincer/internal/store"
	"github.com/pincerbot/pincer/internal/store/sqlite"
	"github.com/pincerbot/pincer/internal/texts"
)

// hangingProvider answers "re: <text>" but never answers messages whose
// text contains "hang" (until the call is cancelled), and counts calls.
type hangingProvider struct {
	mu    sync.Mutex
	calls []string
}

func (p *hangingProvider) ID() string { return "fake" }

func (p *hangingProvider) Stream(ctx context.Context, req llm.Request) iter.Seq2[llm.Event, error] {
	return func(yield func(llm.Event, error) bool) {
		last := req.Messages[len(req.Messages)-1].Text
		text := last[strings.Index(last, "] ")+2:]
		p.mu.Lock()
		p.calls = append(p.calls, text)
		p.mu.Unlock()
		if strings.Contains(text, "hang") {
			<-ctx.Done()
			yield(llm.Event{}, llm.Transport("fake", req.Model, ctx, ctx.Err()))
			return
		}
		if yield(llm.Event{Kind: llm.EventText, Text: "re: " + text}, nil) {
			yield(llm.Event{Kind: llm.EventDone}, nil)
		}
	}
}

func engineOn(t *testing.T, st store.Store, p llm.Provider, o Options) *Engine {
	t.Helper()
	o.Store = st
	o.Runner = agent.NewRunner(agent.Options{Providers: map[string]llm.Provider{"fake": p}, MaxTokens: 100, ContextTokens: 10000})
	o.Models = []llm.Ref{{Provider: "fake", Model: "m"}}
	o.Location = time.UTC
	return New(o)
}

func openDB(t *testing.T, path string) store.Store {
	t.Helper()
	st, err := sqlite.Open(context.Background(), path, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

var delivery = json.RawMessage(`{"to":"b1"}`)

// TestHungTurnsDoNotStarveOtherChats: with one slot, a turn whose provider
// never answers lends its slot after SlotPatience, so another chat is
// answered rather than waiting for the first-token timeout.
func TestHungTurnsDoNotStarveOtherChats(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := &hangingProvider{}
		e := engineOn(t, openDB(t, filepath.Join(t.TempDir(), "p.db")), p, Options{MaxConcurrent: 1})
		go func() { _ = e.Dispatch(context.Background(), message("1", "g1", "please hang", t0), &recorder{}) }()
		synctest.Wait()
		start := time.Now()
		r := &recorder{}
		if err := e.Dispatch(context.Background(), message("2", "g2", "quick one", t0), r); err != nil {
			t.Fatal(err)
		}
		if took := time.Since(start); took != SlotPatience {
			t.Errorf("the other chat waited %v; want the slot lent after %v", took, SlotPatience)
		}
		if got := outTexts(r.delivered); len(got) != 1 || got[0] != "re: quick one" {
			t.Errorf("delivered %q", got)
		}
		e.cancel()
	})
}

// TestTurnDeadline: a turn is cut at its deadline whatever its provider
// does, and a direct chat learns why.
func TestTurnDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		slow := &callsProvider{id: "fake", calls: []call{{text: []string{"."}, tools: lookup}}} // tools forever
		e, _ := callsEngine(t, Options{TurnTimeout: time.Minute, Locale: texts.EN}, slow)
		e.opts.Runner = agent.NewRunner(agent.Options{Providers: map[string]llm.Provider{"fake": &slowProvider{}}, MaxTokens: 100, ContextTokens: 10000})
		e.opts.Models = []llm.Ref{{Provider: "fake", Model: "m"}}
		r := &recorder{}
		start := time.Now()
		if err := e.Dispatch(context.Background(), message("1", "b", "hi", t0), r); err != nil {
			t.Fatal(err)
		}
		if took := time.Since(start); took != time.Minute {
			t.Errorf("the turn took %v", took)
		}
		if got := outTexts(r.delivered); len(got) != 1 || !strings.Contains(got[0], "time limit") {
			t.Errorf("delivered %q", got)
		}
	})
}

// slowProvider sends a word every 10 seconds, forever.
type slowProvider struct{}

func (slowProvider) ID() string { return "fake" }

func (slowProvider) Stream(ctx context.Context, req llm.Request) iter.Seq2[llm.Event, error] {
	return func(yield func(llm.Event, error) bool) {
		for {
			select {
			case <-ctx.Done():
				yield(llm.Event{}, llm.Transport("fake", req.Model, ctx, ctx.Err()))
				return
			case <-time.After(10 * time.Second):
			}
			if !yield(llm.Event{Kind: llm.EventText, Text: "word "}, nil) {
				return
			}
		}
	}
}

// TestCrashedTurnIsResumedOnce: a turn admitted by a run that died is
// answered by the next run, through a rebuilt replier, with its reply id;
// a turn that died again after its resume is given up; one whose reply is
// in the outbox already is not asked again.
func TestCrashedTurnIsResumedOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "p.db")
		st := openDB(t, path)
		hang := &hangingProvider{}
		first := engineOn(t, st, hang, Options{})
		m := message("1", "b1", "hang on, then answer", t0)
		mc := NewMsgContext(m)
		mc.Delivery = delivery
		go func() { _ = first.DispatchContext(context.Background(), mc, &recorder{}) }()
		synctest.Wait()
		first.cancel() // the process dies: nothing finishes the turn
		synctest.Wait()

		answered := &recorder{}
		var rebuilt []json.RawMessage
		resume := func(mc MsgContext) (channel.Replier, bool) {
			rebuilt = append(rebuilt, mc.Delivery)
			return answered, true
		}
		second := engineOn(t, st, &hangingProvider{}, Options{})
		// The provider of this run answers: it hangs only on "hang".
		second.opts.Runner = agent.NewRunner(agent.Options{Providers: map[string]llm.Provider{"fake": &echoProvider{}}, MaxTokens: 100, ContextTokens: 10000})
		n, err := second.Resume(context.Background(), resume)
		if err != nil || n != 1 {
			t.Fatalf("resumed %d: %v", n, err)
		}
		if err := second.Close(context.Background()); err != nil {
			t.Fatal(err)
		}
		if len(rebuilt) != 1 || string(rebuilt[0]) != string(delivery) {
			t.Errorf("the replier was rebuilt from %q", rebuilt)
		}
		if len(answered.delivered) != 1 || answered.delivered[0].ID != TurnKey(m)+"#1" || !strings.Contains(answered.delivered[0].Text, "hang on, then answer") {
			t.Errorf("resumed reply %+v", answered.delivered)
		}
		tr, _ := st.Transcript(context.Background(), "agent:main:webchat:direct:b1")
		users := 0
		for _, turn := range tr {
			if turn.Role == store.RoleUser {
				users++
			}
		}
		if users != 1 {
			t.Errorf("the resumed message is in the transcript %d times", users)
		}
		if pending, _ := st.PendingTurns(context.Background()); len(pending) != 0 {
			t.Errorf("still journaled: %+v", pending)
		}
		if n, _ := engineOn(t, st, &echoProvider{}, Options{}).Resume(context.Background(), resume); n != 0 {
			t.Errorf("a finished turn was resumed again: %d", n)
		}

		// A turn answered, its reply in the transcript and the outbox
		// already: not asked again.
		m2 := message("2", "b1", "answered", t0)
		third := engineOn(t, st, &hangingProvider{}, Options{})
		admitted(t, third, st, m2, []store.Turn{third.userTurn(NewMsgContext(m2), m2.Text, tr), {Role: store.RoleAssistant, Text: "the reply"}}, "the reply")
		if n, _ := third.Resume(context.Background(), resume); n != 0 {
			t.Errorf("an answered turn was asked again")
		}

		// A turn resumed once and dying again is given up.
		m3 := message("3", "b1", "hang forever", t0)
		mc3 := NewMsgContext(m3)
		mc3.Delivery = delivery
		if _, err := st.AdmitTurn(context.Background(), TurnKey(m3), time.Hour, mustEncode(t, mc3), store.Consumed{}); err != nil {
			t.Fatal(err)
		}
		if _, err := st.ResumeTurn(context.Background(), TurnKey(m3)); err != nil {
			t.Fatal(err)
		}
		if n, _ := engineOn(t, st, &echoProvider{}, Options{}).Resume(context.Background(), resume); n != 0 {
			t.Errorf("a turn resumed once was resumed again")
		}
		if pending, _ := st.PendingTurns(context.Background()); len(pending) != 0 {
			t.Errorf("given-up turns stay journaled: %+v", pending)
		}
	})
}

func mustEncode(t *testing.T, mc MsgContext) []byte {
	t.Helper()
	b, err := encodeTurn(mc)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// failingStore fails every admission, as a full disk would.
type failingStore struct{ store.Store }

func (failingStore) AdmitTurn(context.Context, string, time.Duration, []byte, store.Consumed) (bool, error) {
	return false, errors.New("database or disk is full")
}

// TestStorageFailureIsToldInDirectChats: when a message cannot be stored,
// a direct chat is told; a group is not.
func TestStorageFailureIsToldInDirectChats(t *testing.T) {
	st := failingStore{openDB(t, filepath.Join(t.TempDir(), "p.db"))}
	e := engineOn(t, st, &echoProvider{}, Options{Locale: texts.EN})
	direct := &recorder{}
	if err := e.Dispatch(context.Background(), message("1", "b1", "hi", t0), direct); err == nil {
		t.Error("no error")
	}
	if got := outTexts(direct.delivered); len(got) != 1 || !strings.Contains(got[0], "could not be handled") || !direct.delivered[0].IsError {
		t.Errorf("direct chat got %q", got)
	}
	group := &recorder{}
	g := message("2", "g1", "hi", t0)
	g.Peer = msg.Peer{Kind: msg.Group, ID: "g1"}
	_ = e.Dispatch(context.Background(), g, group)
	if len(group.delivered) != 0 {
		t.Errorf("a group got %q", outTexts(group.delivered))
	}
}

// finishCounter counts the journal entries a store is asked to finish.
type finishCounter struct {
	store.Store
	mu   sync.Mutex
	keys []string
}

func (f *finishCounter) FinishTurn(ctx context.Context, keys ...string) error {
	f.mu.Lock()
	f.keys = append(f.keys, keys...)
	f.mu.Unlock()
	return f.Store.FinishTurn(ctx, keys...)
}

// TestAnsweredTurnIsFinishedOnce: a journaled message that was answered
// is taken out of the journal once, by its turn, not a second time by its
// dispatcher.
func TestAnsweredTurnIsFinishedOnce(t *testing.T) {
	f := &finishCounter{Store: openDB(t, filepath.Join(t.TempDir(), "p.db"))}
	e := engineOn(t, f, &hangingProvider{}, Options{})
	mc := MsgContext{Message: message("1", "b1", "hi", t0), Body: "hi", BodyForAgent: "hi", RawBody: "hi", CommandBody: "hi", Delivery: delivery}
	if err := e.DispatchContext(context.Background(), mc, &recorder{}); err != nil {
		t.Fatal(err)
	}
	key := TurnKey(mc.Message)
	if len(f.keys) != 1 || f.keys[0] != key {
		t.Errorf("finished %q, want %q once", f.keys, key)
	}
	pending, err := f.PendingTurns(context.Background())
	if err != nil || len(pending) != 0 {
		t.Errorf("journal after the answer: %v %v", pending, err)
	}
}
