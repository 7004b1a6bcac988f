package pipeline

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/pincerbot/pincer/internal/channel"
	"github.com/pincerbot/pincer/internal/msg"
	"github.com/pincerbot/pincer/internal/prompt"
	"github.com/pincerbot/pincer/internal/trigger"
)

const selfID = msg.UserID("123456789")

type fakeBot struct{}

func (fakeBot) Self() msg.UserID { return selfID }
func (fakeBot) SentByBot(_ context.Context, _ msg.Peer, id msg.MessageID) (bool, bool) {
	return id == "bot-1", true
}

// turn is one call of the fake engine.
type turn struct {
	mc Turn
	at time.Duration
}

// fakeEngine records turns and answers each with answer, through the
// replier it was given.
type fakeEngine struct {
	mu     sync.Mutex
	start  time.Time
	turns  []turn
	answer string
}

func (e *fakeEngine) Turn(ctx context.Context, mc Turn, r channel.Replier) error {
	e.mu.Lock()
	e.turns = append(e.turns, turn{mc: mc, at: time.Since(e.start)})
	answer := e.answer
	e.mu.Unlock()
	if answer != "" {
		_, err := r.Deliver(ctx, msg.Outbound{Account: mc.Message.Account, Peer: mc.Message.Peer, Text: answer})
		return err
	}
	return nil
}

func (e *fakeEngine) list() []turn {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]turn(nil), e.turns...)
}

// sent records what reaches the chat.
type sent struct {
	mu  sync.Mutex
	out []msg.Outbound
}

func (s *sent) add(out msg.Outbound) {
	s.mu.Lock()
	s.out = append(s.out, out)
	s.mu.Unlock()
}

func (s *sent) list() []msg.Outbound {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]msg.Outbound(nil), s.out...)
}

// replier quotes its message, like the QQ replier with replyToTrigger.
type replier struct {
	trigger msg.Message
	s       *sent
}

func (r *replier) Partial(string) {}
func (r *replier) Deliver(_ context.Context, out msg.Outbound) (msg.MessageID, error) {
	out.ReplyTo = r.trigger.ID
	r.s.add(out)
	return "sent-1", nil
}

type history struct {
	msgs []msg.Message
	err  error
	got  []channel.HistoryQuery
}

func (h *history) History(_ context.Context, _ msg.Peer, q channel.HistoryQuery) ([]msg.Message, error) {
	h.got = append(h.got, q)
	return h.msgs, h.err
}

type acks struct {
	mu  sync.Mutex
	ids []msg.MessageID
}

func (a *acks) Ack(_ context.Context, _ msg.Peer, id msg.MessageID) {
	a.mu.Lock()
	a.ids = append(a.ids, id)
	a.mu.Unlock()
}

var cst = time.FixedZone("CST", 8*3600)

const (
	digestPrompt  = "digest prompt: answer SKIP when there is nothing"
	summaryPrompt = "summary prompt"
)

// defaults are the reference plugin's receive defaults.
func defaults() Settings {
	return Settings{
		Mention:  trigger.Rules{Enabled: true, RequireMentionInGroup: true, KeywordMatch: trigger.Contains, TriggerOnReplyToSelf: true, AlwaysReplyInDirect: true},
		Realtime: RealtimeSettings{Enabled: true, Window: 800 * time.Millisecond, MaxWindow: 3 * time.Second, MaxMessages: 10, MaxChars: 8000},
		Digest:   DigestSettings{Interval: 5 * time.Minute, MaxMessages: 50, MinMessages: 3, Prompt: digestPrompt, Scope: "group", MaxTranscriptChars: 20000},
		Summary:  SummarySettings{Enabled: true, Commands: []string{"/summary", "/总结"}, Count: 100, MaxCount: 200, Prompt: summaryPrompt, Scope: "all", MaxTranscriptChars: 20000},
		History:  HistorySettings{Enabled: true, MaxMessages: 20, MaxChars: 4000},
	}
}

type rig struct {
	p    *Pipeline
	eng  *fakeEngine
	sent *sent
	hist *history
	acks *acks

	mu      sync.Mutex
	results map[msg.MessageID]error
}

func newRig(t *testing.T, r Settings) *rig {
	t.Helper()
	g := &rig{eng: &fakeEngine{start: time.Now()}, sent: &sent{}, hist: &history{}, acks: &acks{}, results: map[msg.MessageID]error{}}
	p, warnings := New(Options{
		Receive: r, Bot: fakeBot{}, Engine: g.eng, History: g.hist, Ack: g.acks, PlainText: true, Location: cst,
		Send:      func(_ context.Context, out msg.Outbound) (msg.MessageID, error) { g.sent.add(out); return "d-1", nil },
		IsCommand: func(s string) bool { return strings.HasPrefix(s, "/new") },
	})
	if len(warnings) > 0 {
		t.Fatal(warnings)
	}
	g.p = p
	// The goroutines kept for the next turn end with the test's bubble.
	t.Cleanup(p.turns.Close)
	return g
}

var clock = time.Date(2026, 11, 30, 2, 0, 0, 0, time.UTC) // 10:00:00 CST

func gm(id string, user, name, text string, at time.Duration) msg.Message {
	return msg.Message{
		ID: msg.MessageID(id), Channel: "onebot", Account: "default", Peer: msg.Peer{Kind: msg.Group, ID: "20000002"},
		Sender: msg.Sender{ID: msg.UserID(user), Name: name}, Time: clock.Add(at), Text: text, Segments: []msg.Segment{msg.Text(text)},
	}
}

func mention(m msg.Message, rest string) msg.Message {
	m.Text = "@机器人 " + rest
	m.Segments = []msg.Segment{{Kind: msg.SegAt, Target: selfID, Name: "机器人"}, msg.Text(" " + rest)}
	m.Mentions = []msg.UserID{selfID}
	return m
}

// send dispatches m as a channel does, on a goroutine of its own (a
// message in a window returns only once its batch is answered), and
// waits until it is taken in. It must run in a synctest bubble.
func (g *rig) send(t *testing.T, m msg.Message) {
	t.Helper()
	go func() {
		err := g.p.Dispatch(context.Background(), m, &replier{trigger: m, s: g.sent})
		g.mu.Lock()
		g.results[m.ID] = err
		g.mu.Unlock()
	}()
	synctest.Wait()
}

func (g *rig) result(id msg.MessageID) (error, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	err, ok := g.results[id]
	return err, ok
}

// TestHistorySpecTimeline is the history timeline of the spec: A and B
// chat, C mentions the bot, D chats after.
func TestHistorySpecTimeline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newRig(t, defaults())
		g.send(t, gm("a", "1001", "用户A", "今晚几点集合", 0))
		time.Sleep(5 * time.Second)
		g.send(t, gm("b", "1002", "用户B", "我八点有空", 5*time.Second))
		time.Sleep(5 * time.Second)
		g.send(t, mention(gm("c", "1003", "用户C", "", 10*time.Second), "帮我定个八点半的提醒"))
		time.Sleep(time.Second)
		synctest.Wait()
		turns := g.eng.list()
		if len(turns) != 1 {
			t.Fatalf("%d turns", len(turns))
		}
		mc := turns[0].mc
		want := prompt.HistoryHeader + "\n" +
			"[10:00:00] 用户A(1001): 今晚几点集合\n" +
			"[10:00:05] 用户B(1002): 我八点有空\n" +
			prompt.HistoryFooter + "\n" +
			"用户C (1003): 帮我定个八点半的提醒"
		if mc.BodyForAgent != want {
			t.Errorf("body:\n%s\nwant:\n%s", mc.BodyForAgent, want)
		}
		if mc.RawBody != "帮我定个八点半的提醒" || mc.CommandBody != mc.RawBody || mc.Message.ID != "c" {
			t.Errorf("raw %q command %q id %q: only the user's input", mc.RawBody, mc.CommandBody, mc.Message.ID)
		}
		if mc.NoCommands {
			t.Error("realtime turns use the normal authorization")
		}
		g.send(t, gm("d", "1004", "用户D", "顺便问下天气", 30*time.Second))
		if n := g.p.history.Len("group:20000002"); n != 1 {
			t.Errorf("the buffer starts again from D: %d messages", n)
		}
		if diff := cmp.Diff([]msg.MessageID{"c"}, g.acks.ids); diff != "" {
			t.Errorf("acks: %s", diff)
		}
	})
}

// TestHistoryKeepsToMaxCharsOfText: history.maxChars bounds the texts in
// the buffer, as the spec counts them (the trigger's own text too, as it
// joins the buffer before the snapshot leaves it out); the transcript
// shows all the buffer holds, its time and sender labels not counted
// against it: here three lines of 25 characters under a limit of 25.
func TestHistoryKeepsToMaxCharsOfText(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := defaults()
		s.History.MaxChars = 25
		g := newRig(t, s)
		for i, text := range []string{"一二三四五", "六七八九十", "甲乙丙丁戊", "己庚辛壬癸"} {
			g.send(t, gm(fmt.Sprint("h", i), "1001", "A", text, time.Duration(i)*time.Second))
			time.Sleep(time.Second)
		}
		g.send(t, mention(gm("c", "1003", "C", "", 4*time.Second), "总结一下"))
		time.Sleep(time.Second)
		synctest.Wait()
		turns := g.eng.list()
		if len(turns) != 1 {
			t.Fatalf("%d turns", len(turns))
		}
		want := prompt.HistoryHeader + "\n" +
			"[10:00:01] A(1001): 六七八九十\n" +
			"[10:00:02] A(1001): 甲乙丙丁戊\n" +
			"[10:00:03] A(1001): 己庚辛壬癸\n" +
			prompt.HistoryFooter + "\n" +
			"C (1003): 总结一下"
		if got := turns[0].mc.BodyForAgent; got != want {
			t.Errorf("body:\n%s\nwant:\n%s", got, want)
		}
	})
}

// TestRealtimeSpecTimelineThroughThePipeline: a mention and two
// follow-ups become one turn at +1500ms, the mention stripped once.
func TestRealtimeSpecTimelineThroughThePipeline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newRig(t, defaults())
		g.eng.answer = "好的"
		g.send(t, mention(gm("1", "1001", "A", "", 0), "帮我查一下明天的天气"))
		time.Sleep(300 * time.Millisecond)
		g.send(t, gm("2", "1001", "A", "北京的", 300*time.Millisecond))
		time.Sleep(400 * time.Millisecond)
		g.send(t, gm("3", "1001", "A", "还有明天要不要带伞", 700*time.Millisecond))
		time.Sleep(2 * time.Second)
		synctest.Wait()
		turns := g.eng.list()
		if len(turns) != 1 || turns[0].at != 1500*time.Millisecond {
			t.Fatalf("turns %+v", turns)
		}
		// A group's message is labelled with its sender.
		if got := turns[0].mc.BodyForAgent; got != "A (1001): 帮我查一下明天的天气\n北京的\n还有明天要不要带伞" {
			t.Errorf("body %q", got)
		}
		out := g.sent.list()
		if len(out) != 1 || out[0].ReplyTo != "1" || out[0].NoMentions {
			t.Errorf("the reply quotes the batch's first message and may mention: %+v", out)
		}
		for id, want := range map[msg.MessageID]error{"1": nil, "2": channel.ErrMerged, "3": channel.ErrMerged} {
			if err, ok := g.result(id); !ok || !errors.Is(err, want) {
				t.Errorf("Dispatch of %s returned %v (done %v), want %v", id, err, ok, want)
			}
		}
	})
}

func TestUntriggeredChatterIsNotAnswered(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newRig(t, defaults())
		g.send(t, gm("1", "1001", "A", "在吗", 0))
		time.Sleep(10 * time.Second)
		synctest.Wait()
		if len(g.eng.list()) != 0 || len(g.acks.ids) != 0 {
			t.Errorf("turns %v acks %v", g.eng.list(), g.acks.ids)
		}
	})
}

func TestEmptyRealtimeBatchIsSkipped(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := defaults()
		r.History.Enabled = false
		g := newRig(t, r)
		g.send(t, mention(gm("1", "1001", "A", "", 0), ""))
		time.Sleep(5 * time.Second)
		synctest.Wait()
		if len(g.eng.list()) != 0 {
			t.Errorf("a bare mention must not reach the agent: %+v", g.eng.list())
		}
		img := mention(gm("2", "1001", "A", "", 0), "")
		img.Segments = append(img.Segments, msg.Segment{Kind: msg.SegImage})
		g.send(t, img)
		time.Sleep(5 * time.Second)
		synctest.Wait()
		if len(g.eng.list()) != 1 {
			t.Error("an image alone is something to answer")
		}
	})
}

func TestCommandEndsItsWindowAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newRig(t, defaults())
		g.send(t, mention(gm("1", "1001", "A", "", 0), "/new"))
		synctest.Wait()
		turns := g.eng.list()
		if len(turns) != 1 || turns[0].at != 0 || turns[0].mc.CommandBody != "/new" {
			t.Fatalf("turns %+v", turns)
		}
	})
}

func TestSummaryCommand(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newRig(t, defaults())
		g.eng.answer = "## 今日总结\n- **周四** 开会"
		g.hist.msgs = []msg.Message{
			gm("h2", "1002", "乙", "第二条", 2*time.Second),
			gm("cmd", "1001", "甲", "/summary 2", 3*time.Second),
			gm("h1", "1001", "甲", "第一条", time.Second),
			{ID: "", Text: "malformed"},
			gm("h0", "1003", "丙", "太早的一条", 0),
		}
		// A realtime window is open when the command comes; it is
		// untouched.
		g.send(t, mention(gm("w1", "1005", "戊", "", 0), "在吗"))
		cmd := mention(gm("cmd", "1001", "甲", "", 3*time.Second), "/summary 2")
		g.send(t, cmd)
		turns := g.eng.list()
		if len(turns) != 1 {
			t.Fatalf("turns %+v", turns)
		}
		mc := turns[0].mc
		want := summaryPrompt + "\n\n[10:00:01] 甲(1001): 第一条\n[10:00:02] 乙(1002): 第二条"
		if mc.BodyForAgent != want {
			t.Errorf("body:\n%s\nwant:\n%s", mc.BodyForAgent, want)
		}
		if !mc.NoCommands || mc.RawBody != "" || mc.CommandBody != "" {
			t.Errorf("a summary is never command-authorized: %+v", mc)
		}
		if mc.Message.ID != "cmd" || mc.Message.Sender.ID != "1001" || mc.Message.Sender.Name != "甲" {
			t.Errorf("attributed to the command: its sender's id and name, its id: %+v", mc.Message)
		}
		if diff := cmp.Diff([]channel.HistoryQuery{{Count: 3}}, g.hist.got); diff != "" {
			t.Errorf("fetches count+1: %s", diff)
		}
		out := g.sent.list()
		if len(out) != 1 || out[0].Text != "【今日总结】\n• 周四 开会" || out[0].ReplyTo != "cmd" || !out[0].NoMentions {
			t.Errorf("flattened, quoting the command, no mentions: %+v", out)
		}
		time.Sleep(2 * time.Second)
		synctest.Wait()
		turns = g.eng.list()
		if len(turns) != 2 || turns[1].mc.RawBody != "在吗" {
			t.Errorf("the open window flushed on its own: %+v", turns)
		}
		if n := g.p.history.Len("group:20000002"); n != 0 {
			t.Errorf("the command entered the history buffer: %d", n)
		}
		if diff := cmp.Diff([]msg.MessageID{"w1", "cmd"}, g.acks.ids); diff != "" {
			t.Errorf("acks (receipt for the command): %s", diff)
		}
	})
}

func TestSummaryFailureAndEmpty(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newRig(t, defaults())
		g.hist.err = errors.New("retcode 100")
		g.send(t, gm("c1", "1001", "甲", "/总结", 0))
		g.hist.err = nil
		g.hist.msgs = []msg.Message{gm("c2", "1001", "甲", "/summary", 0)} // only the command itself
		g.send(t, gm("c2", "1001", "甲", "/summary", 0))
		if n := len(g.eng.list()); n != 0 {
			t.Errorf("neither calls the agent: %d turns", n)
		}
		out := g.sent.list()
		if len(out) != 2 || out[0].Text != "获取最近聊天记录失败：retcode 100" || out[1].Text != "最近没有可以总结的聊天记录。" {
			t.Errorf("notices %+v", out)
		}
		if out[0].ReplyTo != "c1" || out[1].ReplyTo != "c2" {
			t.Error("notices quote the command")
		}
	})
}

func TestSummaryScope(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := defaults()
		r.Summary.Scope = "direct"
		g := newRig(t, r)
		g.send(t, gm("c1", "1001", "甲", "/summary", 0))
		if len(g.hist.got) != 0 {
			t.Error("a group /summary outside the scope is plain text")
		}
		r.Summary.Scope, r.Summary.Peers = "all", []string{"group:1"}
		g = newRig(t, r)
		g.send(t, gm("c1", "1001", "甲", "/summary", 0))
		if len(g.hist.got) != 0 {
			t.Error("a /summary outside the peers is plain text")
		}
	})
}

func TestDigestTurns(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := defaults()
		r.Digest.Enabled, r.Digest.Interval, r.Digest.MinMessages = true, time.Minute, 2
		g := newRig(t, r)
		g.eng.answer = "**SKIP**"
		g.send(t, gm("1", "1001", "甲", "/reset", 0))
		g.send(t, gm("2", "1002", "乙", "@李四 明天见", time.Second))
		dm := gm("3", "1003", "丙", "私聊", 0)
		dm.Peer = msg.Peer{Kind: msg.Direct, ID: "1003"}
		g.send(t, dm) // scope group: not digested (answered as a direct chat)
		time.Sleep(61 * time.Second)
		synctest.Wait()
		var digests []Turn
		for _, tr := range g.eng.list() {
			if tr.mc.NoCommands {
				digests = append(digests, tr.mc)
			}
		}
		if len(digests) != 1 {
			t.Fatalf("digests %+v", digests)
		}
		mc := digests[0]
		want := digestPrompt + "\n\n[10:00:00] 甲(1001): /reset\n[10:00:01] 乙(1002): @李四 明天见"
		if mc.BodyForAgent != want || mc.RawBody != "" || mc.CommandBody != "" || mc.Message.Sender != (msg.Sender{}) {
			t.Errorf("digest context %+v", mc)
		}
		for _, out := range g.sent.list() {
			if out.Peer.Kind == msg.Group {
				t.Errorf("SKIP sends nothing: %+v", out)
			}
		}
		// A digest with something to say goes to the chat, flattened,
		// quoting nothing, converting no mention.
		g.eng.mu.Lock()
		g.eng.answer = "- 明天见 @李四"
		g.eng.mu.Unlock()
		g.send(t, gm("4", "1001", "甲", "a", 70*time.Second))
		g.send(t, gm("5", "1001", "甲", "b", 71*time.Second))
		time.Sleep(61 * time.Second)
		synctest.Wait()
		var got []msg.Outbound
		for _, out := range g.sent.list() {
			if out.Peer.Kind == msg.Group {
				got = append(got, out)
			}
		}
		if len(got) != 1 || got[0].Text != "• 明天见 @李四" || got[0].ReplyTo != "" || !got[0].NoMentions {
			t.Errorf("digest sends %+v", got)
		}
	})
}

func TestStepsAreIsolated(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := defaults()
		r.Digest.Enabled, r.Digest.MaxMessages = true, 1
		g := newRig(t, r)
		g.p.opts.IsCommand = func(string) bool { panic("broken command check") }
		g.send(t, mention(gm("1", "1001", "A", "", 0), "hi"))
		if g.p.history.Len("group:20000002") != 1 {
			t.Error("history still took the message")
		}
		time.Sleep(time.Second) // the window still ends by quiet
		synctest.Wait()
		if n := len(g.eng.list()); n != 2 {
			t.Errorf("%d turns: the realtime one and the digest", n)
		}
		digested := false
		for _, tr := range g.eng.list() {
			digested = digested || tr.mc.NoCommands
		}
		if !digested {
			t.Error("the digest step ran after the realtime step panicked")
		}
	})
}

func TestEmptyInputNoticeIsNeverDelivered(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newRig(t, defaults())
		g.eng.answer = "I didn't receive any text in your message. Please resend or add a caption."
		g.send(t, mention(gm("1", "1001", "A", "", 0), "😀"))
		time.Sleep(time.Second)
		synctest.Wait()
		if len(g.eng.list()) != 1 || len(g.sent.list()) != 0 {
			t.Errorf("turns %d sent %+v", len(g.eng.list()), g.sent.list())
		}
	})
}

func TestCloseFlushesOpenWindows(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newRig(t, defaults())
		g.send(t, mention(gm("1", "1001", "A", "", 0), "hi"))
		if err := g.p.Close(context.Background()); err != nil {
			t.Fatal(err)
		}
		if turns := g.eng.list(); len(turns) != 1 || turns[0].at != 0 {
			t.Errorf("turns %+v", turns)
		}
		if err := g.p.Dispatch(context.Background(), gm("2", "1", "A", "x", 0), &replier{s: g.sent}); !errors.Is(err, channel.ErrClosed) {
			t.Errorf("after Close: %v", err)
		}
	})
}

// TestCombinationExample is the spec's closing example: with mention (the
// default) and digest on, a question that mentions the bot is answered
// through a realtime window and also shows up, later, in the group's
// digest; neither path takes it from the other.
func TestCombinationExample(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := defaults()
		r.Digest.Enabled, r.Digest.Interval, r.Digest.MinMessages = true, 5*time.Minute, 1
		g := newRig(t, r)
		g.send(t, mention(gm("q", "1001", "甲", "", 0), "周五几点开会？"))
		time.Sleep(time.Second)
		synctest.Wait()
		turns := g.eng.list()
		if len(turns) != 1 || turns[0].mc.NoCommands || turns[0].mc.RawBody != "周五几点开会？" {
			t.Fatalf("the realtime answer: %+v", turns)
		}
		time.Sleep(5 * time.Minute)
		synctest.Wait()
		turns = g.eng.list()
		if len(turns) != 2 || !turns[1].mc.NoCommands || !strings.HasSuffix(turns[1].mc.BodyForAgent, "甲(1001): @机器人 周五几点开会？") {
			t.Errorf("the digest holds the same message: %+v", turns)
		}
	})
}

func TestQuoteBlockGoesFirstAndAFailingQuoterIsContained(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newRig(t, defaults())
		var seen []msg.Batch
		g.p.opts.Quote = func(_ context.Context, b msg.Batch) (string, string, []msg.Attachment) {
			seen = append(seen, b)
			if b.Messages[0].ID == "boom" {
				panic("resolver bug")
			}
			quoted := msg.Attachment{Message: "q1", Segment: msg.Segment{Kind: msg.SegImage, URL: "https://img.test/q.png"}, From: msg.AttachedQuote}
			return "[引用消息：原文\n]", "quoted message resolved", []msg.Attachment{quoted}
		}
		own := mention(gm("1", "1001", "A", "", 0), "这是什么")
		own.Segments = append(own.Segments, msg.Segment{Kind: msg.SegImage, URL: "https://img.test/own.png"})
		g.send(t, own)
		time.Sleep(time.Second)
		synctest.Wait()
		g.send(t, mention(gm("boom", "1001", "A", "", 0), "再问一次"))
		time.Sleep(time.Second)
		synctest.Wait()
		turns := g.eng.list()
		if len(turns) != 2 {
			t.Fatalf("turns %+v", turns)
		}
		if got := turns[0].mc.BodyForAgent; got != "A (1001): [引用消息：原文\n]\n这是什么" || turns[0].mc.RawBody != "这是什么" {
			t.Errorf("body %q raw %q", got, turns[0].mc.RawBody)
		}
		// The turn shows its own image first, then the quote's, which
		// learns the chat it was seen in.
		if media := turns[0].mc.Media; len(media) != 2 || media[0].Segment.URL != "https://img.test/own.png" || media[0].From != msg.AttachedHere ||
			media[0].Message != "1" || media[1].Segment.URL != "https://img.test/q.png" || media[1].From != msg.AttachedQuote ||
			media[1].Channel != own.Channel || media[1].Peer != own.Peer || media[1].Message != "q1" {
			t.Errorf("turn media = %+v", media)
		}
		if got := turns[1].mc.BodyForAgent; got != "A (1001): 再问一次" {
			t.Errorf("a panicking resolver leaves the block out: %q", got)
		}
		if len(seen) != 2 || seen[0].Kind != msg.Realtime || seen[0].Trigger != msg.TriggerMention {
			t.Errorf("the quoter sees the realtime batch: %+v", seen)
		}
	})
}

func TestRealtimeReplyMayMentionWhomTheAgentWasShown(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newRig(t, defaults())
		g.eng.answer = "@用户A 八点见"
		g.send(t, gm("a", "1001", "用户A", "今晚几点集合", 0))
		g.send(t, gm("b", "1002", "旧名", "我八点有空", 0))
		g.send(t, gm("b2", "1002", "用户B", "改名了", 0))
		g.send(t, mention(gm("c", "1003", "用户C", "", 0), "提醒我"))
		time.Sleep(time.Second)
		synctest.Wait()
		out := g.sent.list()
		if len(out) != 1 {
			t.Fatalf("sent %+v", out)
		}
		want := []msg.Sender{{ID: "1001", Name: "用户A"}, {ID: "1002", Name: "用户B"}, {ID: "1003", Name: "用户C"}}
		if diff := cmp.Diff(want, out[0].Mentionable); diff != "" {
			t.Errorf("mentionable (-want +got):\n%s", diff)
		}
	})
}
