package pipeline

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/pincerbot/pincer/internal/msg"
	"github.com/pincerbot/pincer/internal/prompt"
	"github.com/pincerbot/pincer/internal/store"
	"github.com/pincerbot/pincer/internal/trace"
)

// expandingEnricher completes merged forwards as Feishu's enricher does,
// once release is closed (or at once when it is nil), and counts the
// forwards it was asked for.
type expandingEnricher struct {
	release chan struct{}
	asked   chan msg.MessageID
}

func (e *expandingEnricher) enrich(ctx context.Context, msgs []msg.Message) []msg.Message {
	for i := range msgs {
		if len(msgs[i].ForwardIDs) == 0 {
			continue
		}
		if e.asked != nil {
			e.asked <- msgs[i].ID
		}
		if e.release != nil {
			select {
			case <-e.release:
			case <-ctx.Done():
				msgs[i].ForwardIDs = nil
				continue
			}
		}
		msgs[i].Text, msgs[i].Segments = "【合并转发,共 1 条】\n[2026-10-08 09:12] 张三:告警看一下", nil
		msgs[i].ForwardIDs = nil
	}
	return msgs
}

// historyOf is the group history block of a turn's body.
func historyOf(t Turn) string {
	body := t.BodyForAgent
	start := strings.Index(body, prompt.HistoryHeader)
	end := strings.Index(body, prompt.HistoryFooter)
	if start < 0 || end < start {
		return ""
	}
	return strings.TrimSpace(body[start+len(prompt.HistoryHeader) : end])
}

// TestAPendingForwardIsTheWatermark: an untriggered group forward is
// logged as it came, pending, and expanded off the chat's order: a turn
// meanwhile reads the history before it and does not wait; once expanded,
// its excerpt is in the log and the next turn reads it and what came
// after. A restart while it is pending completes it again.
func TestAPendingForwardIsTheWatermark(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		path := filepath.Join(t.TempDir(), "pincer.db")
		st := storeAt(t, path)
		slow := &expandingEnricher{release: make(chan struct{}), asked: make(chan msg.MessageID, 4)}
		eng := &admitEngine{st: st}
		p := durable(t, st, eng)
		p.opts.Enrich = slow.enrich
		take := func(p *Pipeline, m msg.Message) {
			t.Helper()
			p.Take(ctx, m, &replier{trigger: m, s: &sent{}}, nil)
		}
		fwd := gm("f", "1002", "用户B", "Merged and Forwarded Message", time.Second)
		fwd.ForwardIDs = []msg.ForwardID{"f"}
		take(p, gm("a", "1001", "用户A", "先说一句", 0))
		take(p, fwd)
		if id := <-slow.asked; id != "f" {
			t.Fatalf("expanded %s", id)
		}
		take(p, gm("b", "1003", "用户C", "后面一句", 2*time.Second))
		take(p, mention(gm("q1", "1004", "用户D", "", 3*time.Second), "上面说了什么"))
		time.Sleep(5 * time.Second)
		synctest.Wait()
		turns := eng.turns()
		if len(turns) != 1 {
			t.Fatalf("%d turns while the forward is being expanded, want 1 that did not wait for it", len(turns))
		}
		if h := historyOf(turns[0]); !strings.Contains(h, "先说一句") || strings.Contains(h, "Merged") || strings.Contains(h, "后面一句") {
			t.Errorf("history while the forward is pending stops before it:\n%s", h)
		}
		logged, err := st.HeldInbound(ctx, "onebot", "default", store.ViewHistory, 10)
		if err != nil {
			t.Fatal(err)
		}
		if len(logged) == 0 || logged[0].Message.ID != "f" || !logged[0].Pending {
			t.Fatalf("the log after the turn: %+v", logged)
		}

		// A restart before the expansion ends: the pipeline that expanded
		// it is gone (kill -9: no Close), the next one expands it again.
		fast := &expandingEnricher{asked: make(chan msg.MessageID, 4)}
		eng2 := &admitEngine{st: st}
		p2 := durable(t, st, eng2)
		tr := trace.New(trace.Options{})
		p2.opts.Enrich, p2.opts.Trace = fast.enrich, tr
		tr.Begin(fwd)
		if err := p2.Restore(ctx); err != nil {
			t.Fatal(err)
		}
		if id := <-fast.asked; id != "f" {
			t.Fatalf("expanded %s after the restart", id)
		}
		synctest.Wait()
		if got := steps(tr, fwd); !strings.Contains(got, "forward : completed off the chat's order: ") {
			t.Errorf("the trace has no step of the expansion:\n%s", got)
		}
		take(p2, mention(gm("q2", "1004", "用户D", "", 10*time.Second), "现在呢"))
		time.Sleep(5 * time.Second)
		synctest.Wait()
		turns = eng2.turns()
		if len(turns) != 1 {
			t.Fatalf("%d turns after the restart", len(turns))
		}
		h := historyOf(turns[0])
		if !strings.Contains(h, "【合并转发,共 1 条】") || !strings.Contains(h, "后面一句") || strings.Contains(h, "Merged and Forwarded") || strings.Contains(h, "先说一句") {
			t.Errorf("history once the forward is expanded: the excerpt and what came after it:\n%s", h)
		}
		logged, err = st.RecentInbound(ctx, "onebot", "default", fwd.Peer, 10)
		if err != nil {
			t.Fatal(err)
		}
		for _, lm := range logged {
			if lm.Message.ID == "f" && (lm.Pending || !strings.HasPrefix(lm.Message.Text, "【合并转发") || len(lm.Message.ForwardIDs) != 0) {
				t.Errorf("the forward's entry in the log: %+v", lm)
			}
		}
		close(slow.release)
		if err := p2.Close(ctx); err != nil {
			t.Error(err)
		}
		if err := p.Close(ctx); err != nil {
			t.Error(err)
		}
		if err := st.Close(); err != nil {
			t.Error(err)
		}
	})
}

// TestATriggeringForwardIsWrittenBackToTheLog: a forward that @s the bot
// is expanded for its own turn, and its log entry then holds the excerpt,
// not pending, for whatever reads the log later.
func TestATriggeringForwardIsWrittenBackToTheLog(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		st := tempStore(t)
		eng := &admitEngine{st: st}
		p := durable(t, st, eng)
		tr := trace.New(trace.Options{})
		p.opts.Enrich, p.opts.Trace = (&expandingEnricher{}).enrich, tr
		fwd := mention(gm("f", "1002", "用户B", "", 0), "Merged and Forwarded Message")
		fwd.ForwardIDs = []msg.ForwardID{"f"}
		p.Take(ctx, fwd, &replier{trigger: fwd, s: &sent{}}, nil)
		time.Sleep(5 * time.Second)
		synctest.Wait()
		if turns := eng.turns(); len(turns) != 1 || !strings.Contains(turns[0].BodyForAgent, "【合并转发,共 1 条】") {
			t.Fatalf("turns: %+v", turns)
		}
		logged, err := st.RecentInbound(ctx, "onebot", "default", fwd.Peer, 10)
		if err != nil {
			t.Fatal(err)
		}
		if len(logged) != 1 || logged[0].Pending || !strings.HasPrefix(logged[0].Message.Text, "【合并转发") || len(logged[0].Message.ForwardIDs) != 0 {
			t.Errorf("the forward's log entry after its turn: %+v", logged)
		}
		if got := steps(tr, fwd); !strings.Contains(got, "forward : completed for its turn: ") {
			t.Errorf("the trace has no step of the expansion:\n%s", got)
		}
		if err := p.Close(ctx); err != nil {
			t.Error(err)
		}
	})
}
