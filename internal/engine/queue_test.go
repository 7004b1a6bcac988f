package engine

import (
	"context"
	"errors"
	"iter"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/pincerbot/pincer/internal/channel"
	"github.com/pincerbot/pincer/internal/llm"
	"github.com/pincerbot/pincer/internal/msg"
)

// gateProvider answers "re: <user text>", but only after taking a token
// from gate for each call. The user text is that of the user messages
// after the last reply, each without its envelope, joined by " + ".
type gateProvider struct {
	gate chan struct{}
	mu   sync.Mutex
	seen []string // the new user messages of each call
	reqs []llm.Request
}

func (p *gateProvider) ID() string { return "fake" }

// newUserTexts lists the user messages since the last assistant message,
// without envelopes.
func newUserTexts(msgs []llm.Message) []string {
	var out []string
	for i := len(msgs) - 1; i >= 0 && msgs[i].Role == llm.RoleUser; i-- {
		t := msgs[i].Text
		out = append([]string{t[strings.Index(t, "] ")+2:]}, out...)
	}
	return out
}

func (p *gateProvider) Stream(ctx context.Context, req llm.Request) iter.Seq2[llm.Event, error] {
	return func(yield func(llm.Event, error) bool) {
		last := strings.Join(newUserTexts(req.Messages), " + ")
		p.mu.Lock()
		p.reqs = append(p.reqs, req)
		p.seen = append(p.seen, last)
		p.mu.Unlock()
		if !yield(llm.Event{Kind: llm.EventText, Text: "re: "}, nil) {
			return
		}
		select {
		case <-p.gate:
		case <-ctx.Done():
			yield(llm.Event{}, llm.Transport("fake", req.Model, ctx, ctx.Err()))
			return
		}
		if yield(llm.Event{Kind: llm.EventText, Text: last}, nil) {
			yield(llm.Event{Kind: llm.EventDone}, nil)
		}
	}
}

func (p *gateProvider) calls() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.seen...)
}

type queueRig struct {
	e       *Engine
	p       *gateProvider
	results map[string]chan error
	replies map[string]*recorder
}

func newQueueRig(t *testing.T, qs QueueSettings) *queueRig {
	p := &gateProvider{gate: make(chan struct{})}
	e, _ := newEngine(t, p)
	e.opts.Queue = qs
	return &queueRig{e: e, p: p, results: map[string]chan error{}, replies: map[string]*recorder{}}
}

// send dispatches text in the background and lets it settle.
func (q *queueRig) send(id, text string, heartbeat bool) {
	m := message(id, "b1", text, t0)
	r := &recorder{}
	res := make(chan error, 1)
	q.results[id], q.replies[id] = res, r
	go func() {
		mc := NewMsgContext(m)
		mc.SessionKey = q.e.SessionKey(m)
		mc.Heartbeat = heartbeat
		q.e.inflight.Add(1)
		defer q.e.inflight.Done()
		res <- q.e.dispatch(context.Background(), q.e.log, Finalize(mc, q.e.opts.Policy), r)
	}()
	synctest.Wait()
}

// release lets the waiting model call finish.
func (q *queueRig) release() {
	q.p.gate <- struct{}{}
	synctest.Wait()
}

func (q *queueRig) reply(id string) []string { return outTexts(q.replies[id].delivered) }

func TestQueueFollowup(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := newQueueRig(t, QueueSettings{Mode: QueueFollowup, Cap: 20, Drop: DropOld})
		q.send("a", "first", false)
		q.send("b", "second", false)
		q.send("c", "third", false)
		for range 3 {
			q.release()
		}
		if diff := cmp.Diff([]string{"first", "second", "third"}, q.p.calls()); diff != "" {
			t.Errorf("each message is its own turn, in order (-want +got):\n%s", diff)
		}
		for id, want := range map[string]string{"a": "re: first", "b": "re: second", "c": "re: third"} {
			if got := q.reply(id); len(got) != 1 || got[0] != want {
				t.Errorf("%s got %q", id, got)
			}
			if err := <-q.results[id]; err != nil {
				t.Errorf("%s: %v", id, err)
			}
		}
	})
}

func TestQueueCollect(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := newQueueRig(t, QueueSettings{Mode: QueueCollect, Cap: 20, Drop: DropOld, Debounce: 500 * time.Millisecond})
		q.send("a", "first", false)
		q.send("b", "second", false)
		time.Sleep(200 * time.Millisecond)
		q.send("c", "third", false)
		q.release() // the first turn ends; the collected turn waits for quiet
		time.Sleep(499 * time.Millisecond)
		synctest.Wait()
		if n := len(q.p.calls()); n != 1 {
			t.Fatalf("the collect turn started before the queue was quiet: %d calls", n)
		}
		time.Sleep(time.Millisecond)
		synctest.Wait()
		q.release()
		if diff := cmp.Diff([]string{"first", "second + third"}, q.p.calls()); diff != "" {
			t.Errorf("queued messages join one turn, each its own message (-want +got):\n%s", diff)
		}
		if err := <-q.results["b"]; !errors.Is(err, channel.ErrMerged) {
			t.Errorf("b: %v", err)
		}
		if got := q.reply("c"); len(got) != 1 || got[0] != "re: second + third" {
			t.Errorf("c got %q", got)
		}
	})
}

func TestQueueInterrupt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := newQueueRig(t, QueueSettings{Mode: QueueInterrupt})
		q.send("a", "first", false)
		q.send("b", "second", false) // stops a; b runs
		q.send("c", "third", false)  // stops b; c runs
		q.release()
		// Nothing of the stopped replies was shown, so nothing of them is
		// kept: the newest turn sees the earlier messages as unanswered.
		if diff := cmp.Diff([]string{"first", "first + second", "first + second + third"}, q.p.calls()); diff != "" {
			t.Errorf("(-want +got):\n%s", diff)
		}
		for _, id := range []string{"a", "b"} {
			if got := q.reply(id); len(got) != 0 {
				t.Errorf("the interrupted turn %s still sent %q", id, got)
			}
			if err := <-q.results[id]; err != nil {
				t.Errorf("%s: %v", id, err)
			}
		}
		if got := q.reply("c"); len(got) != 1 || got[0] != "re: first + second + third" {
			t.Errorf("c got %q", got)
		}
	})
}

func TestQueueSteer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := newQueueRig(t, QueueSettings{Mode: QueueSteer, Cap: 20, Drop: DropOld})
		q.send("a", "first", false)
		q.send("b", "actually, second", false)
		q.send("hb", "heartbeat", true)
		if err := <-q.results["hb"]; !errors.Is(err, ErrBusy) {
			t.Errorf("a heartbeat must be dropped while the session is busy: %v", err)
		}
		q.release()
		q.release()
		if diff := cmp.Diff([]string{"first", "actually, second"}, q.p.calls()); diff != "" {
			t.Errorf("(-want +got):\n%s", diff)
		}
		if got := q.reply("b"); len(got) != 1 || got[0] != "re: actually, second" {
			t.Errorf("the steered message's reply went to %q", got)
		}
		// The steered call continued the same turn: nothing else ran in between.
		if err := <-q.results["b"]; err != nil {
			t.Error(err)
		}
	})
}

func TestQueueCapPolicies(t *testing.T) {
	for _, tt := range []struct {
		drop    DropPolicy
		want    []string
		refused string
		notice  bool
	}{
		{DropOld, []string{"first", "3", "4"}, "2", false},
		{DropNew, []string{"first", "2", "3"}, "4", false},
		{DropSummarize, []string{"first", "3", "4"}, "2", true},
	} {
		t.Run(string(tt.drop), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				q := newQueueRig(t, QueueSettings{Mode: QueueFollowup, Cap: 2, Drop: tt.drop})
				q.send("1", "first", false)
				q.send("2", "2", false)
				q.send("3", "3", false)
				q.send("4", "4", false)
				for range 3 {
					q.release()
				}
				calls := q.p.calls()
				if tt.notice {
					if !strings.Contains(calls[1], "[Messages dropped while you were busy]\n- Ann: 2\n") {
						t.Errorf("no summary of the dropped message: %q", calls[1])
					}
					calls[1] = calls[1][strings.LastIndex(calls[1], "\n")+1:]
				}
				if diff := cmp.Diff(tt.want, calls); diff != "" {
					t.Errorf("(-want +got):\n%s", diff)
				}
				if err := <-q.results[tt.refused]; !errors.Is(err, ErrDropped) {
					t.Errorf("%s: %v", tt.refused, err)
				}
			})
		})
	}
}

func TestQueueSettingsPrecedence(t *testing.T) {
	e, st := newEngine(t, &echoProvider{})
	e.opts.Queue = QueueSettings{Mode: QueueSteer, Cap: 20, Drop: DropSummarize}
	e.opts.QueueByChannel = map[msg.ChannelID]QueueMode{"onebot": QueueCollect}
	ctx := context.Background()
	if got := e.queueSettingsFor(ctx, "k", "webchat", nil).Mode; got != QueueSteer {
		t.Errorf("default %s", got)
	}
	if got := e.queueSettingsFor(ctx, "k", "onebot", nil).Mode; got != QueueCollect {
		t.Errorf("by channel %s", got)
	}
	chat := &ChatSettings{QueueMode: QueueFollowup, QueueCap: 3}
	if got := e.queueSettingsFor(ctx, "k", "onebot", chat); got.Mode != QueueFollowup || got.Cap != 3 {
		t.Errorf("the chat's settings must win over the channel's: %+v", got)
	}
	if _, _, err := st.OpenSession(ctx, "k", "main"); err != nil {
		t.Fatal(err)
	}
	for k, v := range map[string]string{optQueueMode: "interrupt", optQueueCap: "5", optQueueDrop: "new"} {
		if err := st.SetSessionOption(ctx, "k", k, v); err != nil {
			t.Fatal(err)
		}
	}
	if got := e.queueSettingsFor(ctx, "k", "onebot", chat); got.Mode != QueueInterrupt || got.Cap != 5 || got.Drop != DropNew {
		t.Errorf("session settings must win: %+v", got)
	}
}

func TestGlobalConcurrencyLimit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := &gateProvider{gate: make(chan struct{})}
		e, _ := newEngine(t, p)
		e.slots = make(chan struct{}, 2)
		done := make(chan error, 3)
		for _, peer := range []string{"x", "y", "z"} {
			go func() { done <- e.Dispatch(context.Background(), message(peer, peer, "from "+peer, t0), &recorder{}) }()
		}
		synctest.Wait()
		if n := len(p.calls()); n != 2 {
			t.Fatalf("%d runs started with a limit of 2", n)
		}
		p.gate <- struct{}{}
		synctest.Wait()
		if n := len(p.calls()); n != 3 {
			t.Fatalf("the third run did not start when a slot freed: %d", n)
		}
		p.gate <- struct{}{}
		p.gate <- struct{}{}
		for range 3 {
			if err := <-done; err != nil {
				t.Error(err)
			}
		}
	})
}
