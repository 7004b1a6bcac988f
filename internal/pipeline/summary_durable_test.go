package pipeline

import (
	"context"
	"path/filepath"
	"testing"
	"testing/synctest"
	"time"

	"github.com/pincerbot/pincer/internal/channel"
	"github.com/pincerbot/pincer/internal/msg"
	"github.com/pincerbot/pincer/internal/store"
)

// slowHistory is a chat history that answers once release is closed.
type slowHistory struct {
	release chan struct{}
	msgs    []msg.Message
}

func (h *slowHistory) History(ctx context.Context, _ msg.Peer, _ channel.HistoryQuery) ([]msg.Message, error) {
	<-h.release
	return h.msgs, nil
}

// summaryPipeline is a pipeline on st with the default settings that
// reads the chat's history from h.
func summaryPipeline(t *testing.T, st store.Store, eng Engine, h channel.HistoryFetcher) *Pipeline {
	t.Helper()
	return durableWith(t, st, eng, defaults(), h)
}

// noneStored fails the test when st holds buffered entries of the
// pipeline's account.
func noneStored(t *testing.T, st store.Store, why string) {
	t.Helper()
	left, err := st.BufferedEntries(context.Background(), "onebot/default")
	if err != nil {
		t.Fatal(err)
	}
	if len(left) != 0 {
		t.Fatalf("%s: stored entries left: %+v", why, left)
	}
}

// TestASummaryCutByACrashIsAnsweredAfterTheRestart: a /summary whose
// process dies while it reads the chat's history (before its turn is
// admitted, so the engine's journal does not have it) is answered by the
// next start, once; one answered leaves nothing to answer again.
func TestASummaryCutByACrashIsAnsweredAfterTheRestart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		path := filepath.Join(t.TempDir(), "pincer.db")
		st1 := storeAt(t, path)
		chat := []msg.Message{gm("h1", "1002", "乙", "明天几点开会", -time.Minute), gm("h2", "1003", "丙", "十点", -30*time.Second)}
		stuck := &slowHistory{release: make(chan struct{}), msgs: chat}
		eng1 := &admitEngine{st: st1}
		p1 := summaryPipeline(t, st1, eng1, stuck)
		cmd := mention(gm("cmd", "1001", "甲", "", 0), "/summary 2")
		go func() { _ = p1.Dispatch(ctx, cmd, &replier{trigger: cmd, s: &sent{}}) }()
		synctest.Wait()
		if n := len(eng1.turns()); n != 0 {
			t.Fatalf("the summary was answered before its history came: %d turns", n)
		}
		// The crash, while the history is being read.
		if err := st1.Close(); err != nil {
			t.Fatal(err)
		}
		defer close(stuck.release) // the dead process's goroutine ends with the test

		st2 := storeAt(t, path)
		eng2 := &admitEngine{st: st2}
		p2 := summaryPipeline(t, st2, eng2, &history{msgs: chat})
		if err := p2.Restore(ctx); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		got := eng2.turns()
		if len(got) != 1 || got[0].Message.ID != "cmd" || !got[0].Standalone {
			t.Fatalf("after the restart: %+v; want the summary of cmd answered once", got)
		}
		// Its admission consumed the stored command: a third start has
		// nothing to answer.
		eng3 := &admitEngine{st: st2}
		p3 := summaryPipeline(t, st2, eng3, &history{msgs: chat})
		if err := p3.Restore(ctx); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if got := eng3.turns(); len(got) != 0 {
			t.Fatalf("a summary answered before was answered again: %+v", got)
		}
		noneStored(t, st2, "after the summary was answered")
	})
}

// TestASummaryAnsweredByANoticeLeavesNothingStored: a /summary answered
// without a turn (nothing to summarize) is not taken up again.
func TestASummaryAnsweredByANoticeLeavesNothingStored(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		st := tempStore(t)
		eng := &admitEngine{st: st}
		p := summaryPipeline(t, st, eng, &history{})
		cmd := mention(gm("cmd", "1001", "甲", "", 0), "/summary")
		s := &sent{}
		if err := p.Dispatch(ctx, cmd, &replier{trigger: cmd, s: s}); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if out := s.list(); len(out) != 1 || out[0].Text != textSummaryEmpty {
			t.Fatalf("sent %+v; want the notice that there is nothing to summarize", out)
		}
		noneStored(t, st, "a summary answered by a notice")
	})
}

// TestASummaryOfAReleasedChatIsLeftToItsNextOwner: a /summary whose chat
// is released while it reads the history is not answered here; the
// process that takes the chat over answers it, once.
func TestASummaryOfAReleasedChatIsLeftToItsNextOwner(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		st := tempStore(t)
		all := func(msg.Peer) bool { return true }
		chat := []msg.Message{gm("h1", "1002", "乙", "明天几点开会", -time.Minute)}
		stuck := &slowHistory{release: make(chan struct{}), msgs: chat}
		eng1 := &admitEngine{st: st}
		p1 := summaryPipeline(t, st, eng1, stuck)
		if err := p1.RestoreWhere(ctx, all); err != nil {
			t.Fatal(err)
		}
		cmd := mention(gm("cmd", "1001", "甲", "", 0), "/summary 1")
		outcome := make(chan error, 1)
		go func() { outcome <- p1.Dispatch(ctx, cmd, &replier{trigger: cmd, s: &sent{}}) }()
		synctest.Wait()
		p1.Release(all)
		close(stuck.release)
		if err := <-outcome; err != ErrReleased {
			t.Fatalf("the released chat's summary ended with %v; want ErrReleased", err)
		}
		if got := eng1.turns(); len(got) != 0 {
			t.Fatalf("answered by the process that let the chat go: %+v", got)
		}
		eng2 := &admitEngine{st: st}
		p2 := summaryPipeline(t, st, eng2, &history{msgs: chat})
		if err := p2.RestoreWhere(ctx, all); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if got := eng2.turns(); len(got) != 1 || got[0].Message.ID != "cmd" {
			t.Fatalf("the next owner answered %+v; want the summary of cmd, once", got)
		}
	})
}
