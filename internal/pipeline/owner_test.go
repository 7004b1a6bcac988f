package pipeline

import (
	"context"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/pincerbot/pincer/internal/msg"
	"github.com/pincerbot/pincer/internal/prompt"
	"github.com/pincerbot/pincer/internal/trace"
)

// askingBot knows only "bot-1" and leaves every other quoted id to the
// platform, whose answers the test gives.
type askingBot struct {
	mu    sync.Mutex
	asked map[msg.MessageID][]func(bool, error)
}

func (b *askingBot) Self() msg.UserID { return selfID }
func (b *askingBot) SentByBot(_ context.Context, _ msg.Peer, id msg.MessageID) (bool, bool) {
	if id == "bot-1" {
		return true, true
	}
	return false, false
}

func (b *askingBot) AskSentByBot(_ context.Context, id msg.MessageID, then func(bool, error)) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.asked == nil {
		b.asked = map[msg.MessageID][]func(bool, error){}
	}
	b.asked[id] = append(b.asked[id], then)
}

// answer answers the questions about id, from a goroutine of the
// "connection".
func (b *askingBot) answer(id msg.MessageID, mine bool, err error) {
	b.mu.Lock()
	waiting := b.asked[id]
	delete(b.asked, id)
	b.mu.Unlock()
	go func() {
		for _, then := range waiting {
			then(mine, err)
		}
	}()
}

func (b *askingBot) pending() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.asked)
}

func replyTo(m msg.Message, id msg.MessageID) msg.Message {
	m.ReplyTo = id
	m.Segments = append([]msg.Segment{{Kind: msg.SegReply, ID: string(id)}}, m.Segments...)
	return m
}

func askingRig(t *testing.T, r Settings) (*rig, *askingBot, *trace.Recorder) {
	t.Helper()
	g := newRig(t, r)
	bot := &askingBot{}
	tr := trace.New(trace.Options{})
	g.p.opts.Bot, g.p.opts.Trace = bot, tr
	return g, bot, tr
}

func steps(tr *trace.Recorder, m msg.Message) string {
	rec, _, _ := tr.Get(context.Background(), trace.KeyOf(m))
	var b strings.Builder
	for _, s := range rec.Steps {
		b.WriteString(s.Stage + " " + s.Outcome + ": " + s.Detail + "\n")
	}
	return b.String()
}

// TestReplyToAnUnknownMessageNeverHoldsTheChat: a reply whose quoted
// author only the platform knows is taken in at once, and the chat's next
// messages with it, while the platform is asked; when it says the quoted
// message is the bot's, the reply's window opens then and its sender's
// next line joins it, answered with the history from before it.
func TestReplyToAnUnknownMessageNeverHoldsTheChat(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g, bot, tr := askingRig(t, defaults())
		g.send(t, gm("a", "1001", "用户A", "今晚几点集合", 0))
		thanks := replyTo(gm("d", "1004", "用户D", "谢谢", time.Second), "-2093321870")
		g.send(t, thanks)
		if _, done := g.result("d"); !done {
			t.Fatal("the reply waits for the platform's answer")
		}
		g.send(t, gm("e", "1005", "用户E", "不客气", 2*time.Second))
		if _, done := g.result("e"); !done {
			t.Fatal("the chat's next message waits behind the question")
		}
		if bot.pending() != 1 {
			t.Fatalf("%d questions, want 1", bot.pending())
		}
		if s := steps(tr, thanks); !strings.Contains(s, "trigger not triggered") || !strings.Contains(s, "asked of the platform") {
			t.Errorf("trace before the answer:\n%s", s)
		}
		bot.answer("-2093321870", true, nil)
		synctest.Wait()
		g.send(t, gm("d2", "1004", "用户D", "还有一个问题", 2500*time.Millisecond))
		time.Sleep(5 * time.Second)
		synctest.Wait()
		turns := g.eng.list()
		if len(turns) != 1 {
			t.Fatalf("%d turns, want the reply's", len(turns))
		}
		mc := turns[0].mc
		if mc.Message.ID != "d" {
			t.Errorf("the turn answers %q, want d", mc.Message.ID)
		}
		for _, want := range []string{prompt.HistoryHeader, "用户A(1001): 今晚几点集合", "用户E(1005): 不客气", "谢谢\n还有一个问题"} {
			if !strings.Contains(mc.BodyForAgent, want) {
				t.Errorf("body lacks %q:\n%s", want, mc.BodyForAgent)
			}
		}
		if strings.Contains(mc.BodyForAgent, "用户D(1004): 谢谢") {
			t.Errorf("the reply is the batch, not its own history:\n%s", mc.BodyForAgent)
		}
		if s := steps(tr, thanks); !strings.Contains(s, "trigger triggered: a reply to the bot's message -2093321870 (the platform said so after") {
			t.Errorf("trace after the answer:\n%s", s)
		}
	})
}

// TestReplyToSomeoneElsesMessageStaysChatter: the platform's "not the
// bot's" and its failure leave the reply as the chatter it was taken in
// as, and each is traced; nothing is answered.
func TestReplyToSomeoneElsesMessageStaysChatter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g, bot, tr := askingRig(t, defaults())
		other := replyTo(gm("1", "1001", "A", "同意", 0), "5")
		g.send(t, other)
		failed := replyTo(gm("2", "1002", "B", "+1", 0), "6")
		g.send(t, failed)
		bot.answer("5", false, nil)
		bot.answer("6", false, context.DeadlineExceeded)
		time.Sleep(5 * time.Second)
		synctest.Wait()
		if n := len(g.eng.list()); n != 0 {
			t.Errorf("%d turns", n)
		}
		if s := steps(tr, other); strings.Count(s, "trigger ") != 1 || !strings.Contains(s, "asked of the platform") {
			t.Errorf("trace of a reply to someone else: one trigger step, saying it was asked:\n%s", s)
		}
		if s := steps(tr, failed); !strings.Contains(s, "could not be learned (context deadline exceeded") {
			t.Errorf("trace of a failed question:\n%s", s)
		}
		if n := g.p.history.Len("group:20000002"); n != 2 {
			t.Errorf("history holds %d, want both replies", n)
		}
	})
}

// TestSettledRepliesAreNotAsked: a reply the bot knows, one in its
// sender's open window, and one that triggers by its @ ask nothing.
func TestSettledRepliesAreNotAsked(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g, bot, _ := askingRig(t, defaults())
		g.send(t, replyTo(gm("1", "1001", "A", "谢谢", 0), "bot-1"))
		g.send(t, replyTo(gm("2", "1001", "A", "再问一个", 0), "7"))
		g.send(t, replyTo(mention(gm("3", "1002", "B", "", 0), "你好"), "8"))
		if n := bot.pending(); n != 0 {
			t.Errorf("%d questions to the platform", n)
		}
		time.Sleep(5 * time.Second)
		synctest.Wait()
		if n := len(g.eng.list()); n != 2 {
			t.Errorf("%d turns, want A's (with its second line) and B's", n)
		}
	})
}

// TestCloseAnswersAReplyStillAsked: a shutdown waits for the question in
// flight and answers the reply it turns into a trigger with the other
// open bursts.
func TestCloseAnswersAReplyStillAsked(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g, bot, _ := askingRig(t, defaults())
		g.send(t, replyTo(gm("1", "1001", "A", "谢谢", 0), "9"))
		closed := make(chan error, 1)
		go func() { closed <- g.p.Close(context.Background()) }()
		synctest.Wait()
		select {
		case err := <-closed:
			t.Fatalf("Close returned (%v) with a question in flight", err)
		default:
		}
		bot.answer("9", true, nil)
		if err := <-closed; err != nil {
			t.Fatal(err)
		}
		turns := g.eng.list()
		if len(turns) != 1 || turns[0].mc.Message.ID != "1" {
			t.Errorf("turns %+v", turns)
		}
	})
}
