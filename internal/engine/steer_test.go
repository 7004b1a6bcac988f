package engine

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/google/go-cmp/cmp"

	"github.com/pincerbot/pincer/internal/channel"
	"github.com/pincerbot/pincer/internal/msg"
)

// sendFrom dispatches text from a named sender of group g1 in the
// background; standalone marks a digest-like turn.
func (q *queueRig) sendFrom(id, sender, text string, standalone bool) {
	m := message(id, "g1", text, t0)
	m.Peer = msg.Peer{Kind: msg.Group, ID: "g1"}
	m.Sender = msg.Sender{ID: msg.UserID(strings.ToLower(sender)), Name: sender}
	r := &recorder{}
	res := make(chan error, 1)
	q.results[id], q.replies[id] = res, r
	go func() {
		mc := NewMsgContext(m)
		mc.SessionKey = q.e.SessionKey(m)
		mc.Standalone = standalone
		q.e.inflight.Add(1)
		defer q.e.inflight.Done()
		res <- q.e.dispatch(context.Background(), q.e.log, Finalize(mc, q.e.opts.Policy), r)
	}()
	synctest.Wait()
}

// lastRequest is the user messages of the provider's last call after its
// last reply, envelopes included.
func (p *gateProvider) lastNewMessages() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	msgs := p.reqs[len(p.reqs)-1].Messages
	var out []string
	for i := len(msgs) - 1; i >= 0 && msgs[i].Role == "user"; i-- {
		out = append([]string{msgs[i].Text}, out...)
	}
	return out
}

// TestSteerKeepsEverySender: messages of different people steered into a
// running turn each reach the model as their own message under their own
// name; the reply answers them all, may mention them all, and goes to the
// newest.
func TestSteerKeepsEverySender(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := newQueueRig(t, QueueSettings{Mode: QueueSteer, Cap: 20, Drop: DropSummarize})
		q.sendFrom("a", "Ann", "first", false)
		q.sendFrom("b", "Bob", "what time?", false)
		q.sendFrom("c", "Cid", "and where?", false)
		q.release()
		q.release()
		if diff := cmp.Diff([]string{"first", "what time? + and where?"}, q.p.calls()); diff != "" {
			t.Errorf("(-want +got):\n%s", diff)
		}
		got := q.p.lastNewMessages()
		if len(got) != 2 || !strings.Contains(got[0], " Bob ") || !strings.HasSuffix(got[0], "what time?") ||
			!strings.Contains(got[1], " Cid ") || !strings.HasSuffix(got[1], "and where?") {
			t.Errorf("each steered message keeps its sender: %q", got)
		}
		if err := <-q.results["b"]; !errors.Is(err, channel.ErrMerged) {
			t.Errorf("b: %v", err)
		}
		if err := <-q.results["c"]; err != nil {
			t.Errorf("c: %v", err)
		}
		out := q.replies["c"].delivered
		if len(out) != 1 || out[0].Text != "re: what time? + and where?" {
			t.Fatalf("the reply goes to the newest message: %+v", out)
		}
		var names []string
		for _, s := range out[0].Mentionable {
			names = append(names, s.Name)
		}
		if !slices.Contains(names, "Bob") || !slices.Contains(names, "Cid") {
			t.Errorf("everyone answered may be mentioned: %v", names)
		}
	})
}

// TestSteerCapAndDrop: the queue cap and drop policy apply to steered
// messages as to queued ones.
func TestSteerCapAndDrop(t *testing.T) {
	for _, tt := range []struct {
		drop    DropPolicy
		want    string
		refused string
		notice  bool
	}{
		{DropOld, "3 + 4", "2", false},
		{DropNew, "2 + 3", "4", false},
		{DropSummarize, "3 + 4", "2", true},
	} {
		t.Run(string(tt.drop), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				q := newQueueRig(t, QueueSettings{Mode: QueueSteer, Cap: 2, Drop: tt.drop})
				q.sendFrom("1", "Ann", "first", false)
				q.sendFrom("2", "Bob", "2", false)
				q.sendFrom("3", "Cid", "3", false)
				q.sendFrom("4", "Dan", "4", false)
				if err := <-q.results[tt.refused]; !errors.Is(err, ErrDropped) {
					t.Errorf("%s: %v", tt.refused, err)
				}
				q.release()
				q.release()
				calls := q.p.calls()
				if len(calls) != 2 {
					t.Fatalf("calls %q", calls)
				}
				got := calls[1]
				if tt.notice {
					if !strings.Contains(got, "[Messages dropped while you were busy]\n- Bob: 2\n") {
						t.Errorf("no summary of the dropped message: %q", got)
					}
					got = got[strings.LastIndex(got, "\n")+1:]
				}
				if got != tt.want {
					t.Errorf("steered %q, want %q", got, tt.want)
				}
			})
		})
	}
}

// TestStoppedTurnPutsBackSteeredOnce: when the running turn is stopped,
// the messages steered behind it get a turn of their own, each once.
func TestStoppedTurnPutsBackSteeredOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := newQueueRig(t, QueueSettings{Mode: QueueSteer, Cap: 20, Drop: DropOld})
		q.sendFrom("a", "Ann", "first", false)
		q.sendFrom("b", "Bob", "second", false)
		q.sendFrom("c", "Cid", "third", false)
		q.e.abort(q.e.SessionKey(msg.Message{Channel: "webchat", Peer: msg.Peer{Kind: msg.Group, ID: "g1"}}))
		synctest.Wait()
		q.release()
		msgs := q.p.lastNewMessages()
		joined := strings.Join(msgs, "\n")
		if strings.Count(joined, "second") != 1 || strings.Count(joined, "third") != 1 {
			t.Errorf("each steered message must reach the model once: %q", msgs)
		}
		if n := len(q.p.calls()); n != 2 {
			t.Errorf("%d calls; want the stopped one and one for the steered messages", n)
		}
		if got := q.reply("c"); len(got) != 1 {
			t.Errorf("the steered messages are answered once: %q", got)
		}
	})
}

// TestStandaloneTurnsAreNeverMerged: a digest is never steered into a
// running turn nor takes steered messages; each runs as its own turn with
// its own replier.
func TestStandaloneTurnsAreNeverMerged(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := newQueueRig(t, QueueSettings{Mode: QueueSteer, Cap: 20, Drop: DropOld})
		q.sendFrom("a", "Ann", "question", false)
		q.sendFrom("d1", "digest", "summarize the chat", true)
		q.release() // a ends; the digest runs on its own
		q.sendFrom("b", "Bob", "another question", false)
		q.release() // the digest ends; b runs after it
		q.release()
		if diff := cmp.Diff([]string{"question", "summarize the chat", "another question"}, q.p.calls()); diff != "" {
			t.Errorf("each flush is its own turn (-want +got):\n%s", diff)
		}
		for id, want := range map[string]string{"a": "re: question", "d1": "re: summarize the chat", "b": "re: another question"} {
			if got := q.reply(id); len(got) != 1 || got[0] != want {
				t.Errorf("%s got %q, want %q", id, got, want)
			}
		}
	})
}
