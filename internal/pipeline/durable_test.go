package pipeline

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/pincerbot/pincer/internal/channel"
	"github.com/pincerbot/pincer/internal/msg"
	"github.com/pincerbot/pincer/internal/store"
	"github.com/pincerbot/pincer/internal/store/sqlite"
)

// admitEngine admits each turn in the store the way the engine does (the
// dedup claim and what the turn consumes in one step) and records the
// turns it admitted.
type admitEngine struct {
	st store.Store
	mu sync.Mutex
	in []Turn
}

func (e *admitEngine) Turn(ctx context.Context, t Turn, _ channel.Replier) error {
	m := t.Message
	ok, err := e.st.AdmitTurn(ctx, "in:"+string(m.Channel)+":"+string(m.Account)+":"+m.Peer.String()+":"+string(m.ID), time.Hour, nil, t.Consume)
	if err != nil || !ok {
		return err
	}
	e.mu.Lock()
	e.in = append(e.in, t)
	e.mu.Unlock()
	return nil
}

func (e *admitEngine) turns() []Turn {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]Turn(nil), e.in...)
}

func durable(t *testing.T, st store.Store, eng Engine) *Pipeline {
	t.Helper()
	s := defaults()
	s.Digest.Enabled, s.Digest.Interval, s.Digest.MinMessages = true, 10*time.Minute, 3
	return durableWith(t, st, eng, s, nil)
}

// tempStore is a SQLite store in the test's directory, closed when the
// test ends.
func tempStore(t *testing.T) *sqlite.DB {
	t.Helper()
	return storeAt(t, filepath.Join(t.TempDir(), "pincer.db"))
}

// storeAt opens the SQLite store at path, closed when the test ends
// (closing it before, as a crash test does, is fine: Close is once).
func storeAt(t *testing.T, path string) *sqlite.DB {
	t.Helper()
	st, err := sqlite.Open(context.Background(), path, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// durableWith is a pipeline on st with settings s that reads the chat's
// history from h (none when nil).
func durableWith(t *testing.T, st store.Store, eng Engine, s Settings, h channel.HistoryFetcher) *Pipeline {
	t.Helper()
	p, _ := New(Options{
		Receive: s, Bot: fakeBot{}, Engine: eng, History: h, Location: cst, Store: st, Channel: "onebot", Account: "default",
		ReplierFor: func(m msg.Message) channel.Replier { return &replier{trigger: m, s: &sent{}} },
		Send:       func(context.Context, msg.Outbound) (msg.MessageID, error) { return "", nil },
	})
	t.Cleanup(p.turns.Close) // see newRig
	return p
}

// TestRestartLosesNothingAndDeliversNothingTwice feeds a pipeline, drops
// it without shutdown while a burst is still in its window (as kill -9
// would), and starts again on the same store: the burst is answered once,
// with the chatter before it as history, and the digest holds every
// message once.
func TestRestartLosesNothingAndDeliversNothingTwice(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		path := filepath.Join(t.TempDir(), "pincer.db")
		st1 := storeAt(t, path)
		eng1 := &admitEngine{st: st1}
		p1 := durable(t, st1, eng1)
		// Messages in windows wait for their batch; the crash ends those
		// waits.
		crashed, crash := context.WithCancel(ctx)
		send := func(p *Pipeline, m msg.Message) {
			go func() { _ = p.Dispatch(crashed, m, &replier{trigger: m, s: &sent{}}) }()
			synctest.Wait()
		}
		send(p1, gm("c1", "1001", "甲", "早上好", 0))
		send(p1, mention(gm("a1", "1002", "乙", "", time.Second), "帮我看看天气"))
		time.Sleep(time.Second) // A's window ends by quiet and is answered
		synctest.Wait()
		send(p1, gm("c2", "1003", "丙", "我也想知道", 2*time.Second))
		send(p1, mention(gm("b1", "1004", "丁", "", 3*time.Second), "明天开会吗"))
		send(p1, gm("b2", "1004", "丁", "几点", 3*time.Second))
		synctest.Wait()
		if got := eng1.turns(); len(got) != 1 || got[0].Message.ID != "a1" {
			t.Fatalf("before the crash: %+v", got)
		}
		// The crash: the process is gone with B's window open. Nothing
		// is flushed; the database file is all that is left.
		crash()
		if err := st1.Close(); err != nil {
			t.Fatal(err)
		}

		st2 := storeAt(t, path)
		eng2 := &admitEngine{st: st2}
		p2 := durable(t, st2, eng2)
		if err := p2.Restore(ctx); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Second)
		synctest.Wait()
		got := eng2.turns()
		if len(got) != 1 || got[0].Message.ID != "b1" || got[0].RawBody != "明天开会吗\n几点" {
			t.Fatalf("after the restart: %+v", got)
		}
		if body := got[0].BodyForAgent; !strings.Contains(body, "丙(1003): 我也想知道") || strings.Contains(body, "早上好") {
			t.Errorf("B's history is the chatter since A, restored:\n%s", body)
		}
		// The digest window came back whole: five messages, each once.
		time.Sleep(10 * time.Minute)
		synctest.Wait()
		var digest []Turn
		for _, tr := range eng2.turns() {
			if tr.NoCommands {
				digest = append(digest, tr)
			}
		}
		if len(digest) != 1 {
			t.Fatalf("digests %+v", digest)
		}
		lines := strings.Split(digest[0].BodyForAgent, "\n")[2:]
		want := []string{"早上好", "帮我看看天气", "我也想知道", "明天开会吗", "几点"}
		if len(lines) != len(want) {
			t.Fatalf("digest transcript %q", lines)
		}
		for i, w := range want {
			if !strings.HasSuffix(lines[i], w) {
				t.Errorf("digest line %d: %q, want …%s", i, lines[i], w)
			}
		}
		// Everything was handed on: nothing is left to restore.
		left, err := st2.BufferedEntries(ctx, "onebot/default")
		if err != nil || len(left) != 0 {
			t.Errorf("left buffered: %+v %v", left, err)
		}
		for _, view := range []store.Views{store.ViewHistory, store.ViewDigest} {
			if held, err := st2.HeldInbound(ctx, "onebot", "default", view, 100); err != nil || len(held) != 0 {
				t.Errorf("left in view %d: %+v %v", view, held, err)
			}
		}
		ids := []msg.MessageID{}
		for _, tr := range append(eng1.turns(), eng2.turns()...) {
			ids = append(ids, tr.Message.ID)
		}
		slices.Sort(ids)
		if len(ids) != 3 || len(slices.Compact(slices.Clone(ids))) != 3 {
			t.Errorf("turns %v: A, B and the digest, each exactly once", ids)
		}
	})
}

// TestGracefulRestartKeepsDigestAndHistory: a graceful stop answers open
// windows and keeps what history and digest windows hold.
func TestGracefulRestartKeepsDigestAndHistory(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		path := filepath.Join(t.TempDir(), "pincer.db")
		st1 := storeAt(t, path)
		eng1 := &admitEngine{st: st1}
		p1 := durable(t, st1, eng1)
		for _, m := range []msg.Message{gm("c1", "1001", "甲", "一", 0), gm("c2", "1002", "乙", "二", 0), mention(gm("x", "1003", "丙", "", 0), "在吗")} {
			go func() { _ = p1.Dispatch(ctx, m, &replier{trigger: m, s: &sent{}}) }()
			synctest.Wait()
		}
		if err := p1.Close(ctx); err != nil {
			t.Fatal(err)
		}
		if got := eng1.turns(); len(got) != 1 || !strings.Contains(got[0].BodyForAgent, "甲(1001): 一") {
			t.Fatalf("the open window is answered at shutdown, with its history: %+v", got)
		}
		st1.Close()
		st2 := storeAt(t, path)
		left, _ := st2.BufferedEntries(ctx, "onebot/default")
		digest, _ := st2.HeldInbound(ctx, "onebot", "default", store.ViewDigest, 50)
		history, _ := st2.HeldInbound(ctx, "onebot", "default", store.ViewHistory, 20)
		if len(digest) != 3 || len(history) != 0 || len(left) != 0 {
			t.Errorf("kept after a graceful stop: %d digest, %d history, %d realtime (digest waits; history went into the answer)", len(digest), len(history), len(left))
		}
	})
}
