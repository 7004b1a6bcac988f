package pipeline

import (
	"context"
	"path/filepath"
	"testing"
	"testing/synctest"
	"time"

	"github.com/pincerbot/pincer/internal/msg"
	"github.com/pincerbot/pincer/internal/store"
)

// askingPipeline is a durable pipeline on st whose channel asks bot
// whose a quoted message is.
func askingPipeline(t *testing.T, st store.Store, eng Engine, bot *askingBot) *Pipeline {
	t.Helper()
	p := durableWith(t, st, eng, defaults(), nil)
	p.opts.Bot = bot
	return p
}

// quotedUnknown is the id of a message neither the store nor the bot
// knows: only the platform can tell whose it is.
const quotedUnknown = msg.MessageID("-2093321870")

// takeInReply hands p a reply that quotes quotedUnknown and waits until
// it is taken in, its question asked.
func takeInReply(t *testing.T, p *Pipeline) {
	t.Helper()
	reply := replyTo(gm("r", "1004", "用户D", "那我八点到", 0), quotedUnknown)
	if err := p.Dispatch(context.Background(), reply, &replier{trigger: reply, s: &sent{}}); err != nil {
		t.Fatal(err)
	}
	synctest.Wait()
}

// answeredOnce fails the test unless eng answered exactly one turn, of
// the message id.
func answeredOnce(t *testing.T, eng *admitEngine, id msg.MessageID, when string) {
	t.Helper()
	got := eng.turns()
	if len(got) != 1 || got[0].Message.ID != id {
		t.Fatalf("%s: turns %+v; want the one of %s", when, got, id)
	}
}

// askedAgainAndAnswered is the next start (or owner) on st, restored by
// restore: it asks the platform again whose the quoted message is and,
// told it is the bot's, answers the reply once and leaves nothing stored.
func askedAgainAndAnswered(t *testing.T, st store.Store, restore func(*Pipeline) error, when string) {
	t.Helper()
	bot := &askingBot{}
	eng := &admitEngine{st: st}
	p := askingPipeline(t, st, eng, bot)
	if err := restore(p); err != nil {
		t.Fatal(err)
	}
	synctest.Wait()
	if bot.pending() != 1 {
		t.Fatalf("%s: %d questions; want the reply's asked again", when, bot.pending())
	}
	bot.answer(quotedUnknown, true, nil)
	time.Sleep(5 * time.Second) // the reply's realtime window
	synctest.Wait()
	answeredOnce(t, eng, "r", when)
	noneStored(t, st, "after the reply was answered "+when)
}

// TestAReplyToTheBotAskedWhenTheProcessDiedIsAnsweredAfterTheRestart: a
// reply whose quoted message only the platform knows, taken in while the
// platform is asked, is asked again by the next start when the process
// died before the answer, and answered once; nothing is left stored.
func TestAReplyToTheBotAskedWhenTheProcessDiedIsAnsweredAfterTheRestart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		path := filepath.Join(t.TempDir(), "pincer.db")
		st1 := storeAt(t, path)
		bot1 := &askingBot{}
		p1 := askingPipeline(t, st1, &admitEngine{st: st1}, bot1)
		takeInReply(t, p1)
		if bot1.pending() != 1 {
			t.Fatalf("%d questions; want the reply's", bot1.pending())
		}
		// The crash, before the platform answers.
		if err := st1.Close(); err != nil {
			t.Fatal(err)
		}

		st2 := storeAt(t, path)
		askedAgainAndAnswered(t, st2, func(p *Pipeline) error { return p.Restore(ctx) }, "after the restart")
	})
}

// TestARepliedToSomeoneElseLeavesNoQuestionStored: "not the bot's", and a
// failure to learn whose, end the question: a later start asks nothing.
func TestARepliedToSomeoneElseLeavesNoQuestionStored(t *testing.T) {
	for _, c := range []struct {
		name string
		err  error
	}{{"not the bot's", nil}, {"unknown", context.DeadlineExceeded}} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				st := tempStore(t)
				bot := &askingBot{}
				eng := &admitEngine{st: st}
				p := askingPipeline(t, st, eng, bot)
				takeInReply(t, p)
				bot.answer(quotedUnknown, false, c.err)
				time.Sleep(5 * time.Second)
				synctest.Wait()
				if got := eng.turns(); len(got) != 0 {
					t.Fatalf("answered %+v", got)
				}
				noneStored(t, st, "after the answer")
			})
		})
	}
}

// TestAQuestionWhoseWindowWasStoredIsNotAskedAgain: a process that died
// after the answer opened the reply's window (its entry stored) but
// before it removed the question leaves both; the next start restores
// the window and does not ask again, so the reply is answered once, not
// twice in one batch.
func TestAQuestionWhoseWindowWasStoredIsNotAskedAgain(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		st := tempStore(t)
		reply := replyTo(gm("r", "1004", "用户D", "那我八点到", 0), quotedUnknown)
		scope := "onebot/default"
		if _, _, err := st.LogInboundBuffered(ctx, reply, store.ViewHistory, store.Buffered{Scope: scope, Kind: kindAsk, Key: reply.Peer.String(), Message: reply}); err != nil {
			t.Fatal(err)
		}
		rtKey := reply.Peer.String() + "::" + string(reply.Sender.ID)
		if _, err := st.Buffer(ctx, []store.Buffered{{Scope: scope, Kind: kindRealtime, Key: rtKey, Message: reply, Trigger: msg.TriggerReplyToSelf}}); err != nil {
			t.Fatal(err)
		}
		bot := &askingBot{}
		eng := &admitEngine{st: st}
		p := askingPipeline(t, st, eng, bot)
		if err := p.Restore(ctx); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if bot.pending() != 0 {
			t.Fatalf("asked again although its window was restored: %d questions", bot.pending())
		}
		time.Sleep(5 * time.Second)
		synctest.Wait()
		answeredOnce(t, eng, "r", "the restored window")
		if got := eng.turns()[0].Message.Text; got != reply.Text {
			t.Errorf("the batch is %q; want the reply once", got)
		}
		noneStored(t, st, "after the reply was answered")
	})
}

// TestAQuestionOfAReleasedChatIsAskedByItsNextOwner: the platform's
// answer that comes after the chat was released is not acted on by the
// process that let the chat go; the next owner asks again and answers.
func TestAQuestionOfAReleasedChatIsAskedByItsNextOwner(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		st := tempStore(t)
		all := func(msg.Peer) bool { return true }
		bot1 := &askingBot{}
		eng1 := &admitEngine{st: st}
		p1 := askingPipeline(t, st, eng1, bot1)
		if err := p1.RestoreWhere(ctx, all); err != nil {
			t.Fatal(err)
		}
		takeInReply(t, p1)
		p1.Release(all)
		bot1.answer(quotedUnknown, true, nil)
		time.Sleep(5 * time.Second)
		synctest.Wait()
		if got := eng1.turns(); len(got) != 0 {
			t.Fatalf("answered by the process that let the chat go: %+v", got)
		}

		askedAgainAndAnswered(t, st, func(p *Pipeline) error { return p.RestoreWhere(ctx, all) }, "by the next owner")
	})
}

// TestAnAnswerLearnedAfterTheShutdownIsAnsweredAfterTheRestart: a reply
// to the bot whose answer comes after the shutdown answered the open
// bursts is not lost: the next start asks again and answers it.
func TestAnAnswerLearnedAfterTheShutdownIsAnsweredAfterTheRestart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		st := tempStore(t)
		bot1 := &askingBot{}
		eng1 := &admitEngine{st: st}
		p1 := askingPipeline(t, st, eng1, bot1)
		takeInReply(t, p1)
		// The shutdown waits for the question a while, then goes on.
		cctx, cancel := context.WithTimeout(ctx, time.Second)
		_ = p1.Close(cctx)
		cancel()
		bot1.answer(quotedUnknown, true, nil)
		synctest.Wait()
		if got := eng1.turns(); len(got) != 0 {
			t.Fatalf("answered after the shutdown: %+v", got)
		}

		askedAgainAndAnswered(t, st, func(p *Pipeline) error { return p.Restore(ctx) }, "after the restart")
	})
}

// TestCloseDoesNotWaitLongForAnUnansweredQuestion: a question the
// implementation does not answer (it has no connection to ask over) holds
// the shutdown closeAsksWithin at most, and stays stored for the next
// start.
func TestCloseDoesNotWaitLongForAnUnansweredQuestion(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		st := tempStore(t)
		bot := &askingBot{}
		p := askingPipeline(t, st, &admitEngine{st: st}, bot)
		takeInReply(t, p)
		start := time.Now()
		if err := p.Close(ctx); err != nil {
			t.Fatal(err)
		}
		if d := time.Since(start); d != closeAsksWithin {
			t.Errorf("Close took %v with a question unanswered; want closeAsksWithin", d)
		}
		// The answer that comes after the shutdown is left to the next
		// start, which asks again.
		bot.answer(quotedUnknown, true, nil)
		synctest.Wait()
		left, err := st.BufferedEntries(ctx, "onebot/default")
		if err != nil {
			t.Fatal(err)
		}
		if len(left) != 1 || left[0].Kind != kindAsk {
			t.Errorf("stored after the shutdown: %+v; want the question", left)
		}
	})
}
