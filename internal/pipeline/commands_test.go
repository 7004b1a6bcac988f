package pipeline

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/pincerbot/pincer/internal/channel"
	"github.com/pincerbot/pincer/internal/msg"
)

// TestCommandInsideAWindowActsAsCommand: a command sent while the
// sender's window is open is not merged into the batch: the burst before
// it is answered on its own, and the command is a turn of its own at once,
// with only its own text and no history.
func TestCommandInsideAWindowActsAsCommand(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newRig(t, defaults())
		g.send(t, gm("0", "1002", "B", "earlier chatter", 0))
		g.send(t, mention(gm("1", "1001", "A", "", 0), "question"))
		g.send(t, gm("2", "1001", "A", "/new", 100*time.Millisecond))
		turns := g.eng.list()
		if len(turns) != 2 {
			t.Fatalf("%d turns; want the burst and the command, at once", len(turns))
		}
		var burst, command Turn
		for _, tr := range turns {
			if tr.mc.CommandBody == "/new" {
				command = tr.mc
			} else {
				burst = tr.mc
			}
		}
		if burst.CommandBody != "question" || strings.Contains(burst.BodyForAgent, "/new") {
			t.Errorf("the burst must not carry the command: %+v", burst)
		}
		if command.BodyForAgent != "A (1001): /new" || command.Message.ID != "2" {
			t.Errorf("the command is its own turn, without history: %+v", command)
		}
	})
}

// TestStopInsideAWindowDropsTheBurst: a stop word ends the sender's open
// window without answering it, and goes to the engine at once.
func TestStopInsideAWindowDropsTheBurst(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newRig(t, defaults())
		g.p.opts.IsCommand = func(s string) bool { return s == "stop" }
		g.p.opts.IsAbort = func(s string) bool { return s == "stop" }
		g.send(t, mention(gm("1", "1001", "A", "", 0), "write me a long story"))
		g.send(t, gm("2", "1001", "A", "stop", 200*time.Millisecond))
		turns := g.eng.list()
		if len(turns) != 1 || turns[0].mc.CommandBody != "stop" {
			t.Fatalf("turns %+v; want the stop alone", turns)
		}
		if err, _ := g.result("1"); !errors.Is(err, channel.ErrStopped) {
			t.Errorf("the dropped message learns why: %v", err)
		}
		time.Sleep(5 * time.Second)
		synctest.Wait()
		if n := len(g.eng.list()); n != 1 {
			t.Errorf("%d turns; the dropped burst must never be answered", n)
		}
		if g.p.history.Len("group:20000002") != 1 {
			t.Error("what the user said stays in the history buffer; the stop word does not")
		}
	})
}

// slowAck holds every acknowledgement until released.
type slowAck struct {
	release chan struct{}
	mu      sync.Mutex
	ids     []msg.MessageID
}

func (a *slowAck) Ack(ctx context.Context, _ msg.Peer, id msg.MessageID) {
	select {
	case <-a.release:
	case <-ctx.Done():
	}
	a.mu.Lock()
	a.ids = append(a.ids, id)
	a.mu.Unlock()
}

// TestAckNeverHoldsUpAMessage: a slow reaction does not delay buffering,
// so a follow-up right after the mention joins its window.
func TestAckNeverHoldsUpAMessage(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newRig(t, defaults())
		ack := &slowAck{release: make(chan struct{})}
		g.p.opts.Ack = ack
		g.send(t, mention(gm("1", "1001", "A", "", 0), "look at this"))
		g.send(t, gm("2", "1001", "A", "and this", 10*time.Millisecond))
		if g.p.realtime.Open() != 1 {
			t.Fatal("the mention opened no window while its reaction was pending")
		}
		time.Sleep(time.Second)
		synctest.Wait()
		turns := g.eng.list()
		if len(turns) != 1 || turns[0].mc.CommandBody != "look at this\nand this" {
			t.Fatalf("turns %+v; the follow-up must join the burst", turns)
		}
		close(ack.release)
		if err := g.p.Close(context.Background()); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(ack.ids, []msg.MessageID{"1"}) {
			t.Errorf("acknowledged %v", ack.ids)
		}
	})
}

// TestDigestAndSummaryTurnsStandAlone: digest and summary turns are marked
// as turns of their own; realtime turns are not.
func TestDigestAndSummaryTurnsStandAlone(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := defaults()
		r.Digest.Enabled, r.Digest.MaxMessages, r.Digest.MinMessages = true, 2, 1
		g := newRig(t, r)
		g.hist.msgs = []msg.Message{gm("h1", "1003", "C", "hello", -time.Minute)}
		g.send(t, mention(gm("1", "1001", "A", "", 0), "hi"))
		g.send(t, gm("2", "1002", "B", "/summary", time.Second))
		g.send(t, gm("3", "1002", "B", "thanks", 2*time.Second))
		time.Sleep(time.Second)
		synctest.Wait()
		kinds := map[string]bool{}
		for _, tr := range g.eng.list() {
			switch {
			case tr.mc.CommandBody == "hi":
				kinds["realtime"] = tr.mc.Standalone
			case strings.HasPrefix(tr.mc.BodyForAgent, summaryPrompt):
				kinds["summary"] = tr.mc.Standalone
			case strings.HasPrefix(tr.mc.BodyForAgent, digestPrompt):
				kinds["digest"] = tr.mc.Standalone
			}
		}
		if len(kinds) != 3 || kinds["realtime"] || !kinds["summary"] || !kinds["digest"] {
			t.Errorf("standalone by kind: %v", kinds)
		}
	})
}

// TestSummaryFallsBackToTheLog: when the platform cannot read history,
// /summary summarizes what pincer logged itself.
func TestSummaryFallsBackToTheLog(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newRig(t, defaults())
		g.hist.err = errors.Join(errors.New("get_group_msg_history: unknown action"), channel.ErrHistoryUnsupported)
		local := &history{msgs: []msg.Message{gm("l1", "1004", "D", "logged by pincer", -time.Minute)}}
		g.p.opts.LocalHistory = local
		g.send(t, gm("2", "1002", "B", "/summary 5", 0))
		turns := g.eng.list()
		if len(turns) != 1 || !strings.Contains(turns[0].mc.BodyForAgent, "D(1004): logged by pincer") {
			t.Fatalf("turns %+v", turns)
		}
		if len(local.got) != 1 || local.got[0].Count != 6 {
			t.Errorf("local history asked %+v", local.got)
		}
	})
}
