package gateway

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/pincerbot/pincer/internal/config"
	"github.com/pincerbot/pincer/internal/llm"
	"github.com/pincerbot/pincer/internal/llm/llmtest"
)

// steerRig is a QQ group in steer mode whose queue holds two messages,
// with the model held in the middle of its first reply.
type steerRig struct {
	*qqRig
	hold     chan struct{}
	accepted int
}

func newSteerRig(t *testing.T, drop string, first, second llmtest.Reply) *steerRig {
	t.Helper()
	s := &steerRig{hold: make(chan struct{})}
	s.qqRig = newQQRig(t, func(c *config.Config) {
		c.Channels.OneBot.Receive.History.Enabled = false
		c.Channels.OneBot.Receive.Realtime.WindowMs = 50
		c.Messages.Queue.Mode, c.Messages.Queue.Cap, c.Messages.Queue.Drop = "steer", 2, drop
	})
	first.Hold = s.hold
	s.model.Script(first, second)
	return s
}

// ask sends a mention of the bot from a member and waits until pincer has
// taken it in.
func (s *steerRig) ask(t *testing.T, id, user int64, name, question string) {
	t.Helper()
	s.push(t, groupFrom(id, user, name, atBot(), text(" "+question)))
	s.accepted++
	s.metric(t, `pincer_inbound_messages_total{channel="onebot",outcome="accepted"}`, float64(s.accepted))
}

// waitModel waits until the model has been asked n times.
func (s *steerRig) waitModel(t *testing.T, n int) {
	t.Helper()
	for len(s.model.Requests()) < n {
		select {
		case <-s.ctx.Done():
			t.Fatalf("the model was asked %d times, want %d", len(s.model.Requests()), n)
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// chat lists a model request's messages as "role: text".
func chat(req llmtest.Request) []string {
	var out []string
	msgs, _ := req.Body["messages"].([]any)
	for _, m := range msgs {
		mm, _ := m.(map[string]any)
		text := mustString(mm["content"])
		if calls, ok := mm["tool_calls"].([]any); ok {
			for _, c := range calls {
				fn, _ := c.(map[string]any)["function"].(map[string]any)
				text += fmt.Sprintf("[call %v]", fn["name"])
			}
		}
		out = append(out, fmt.Sprint(mm["role"])+": "+text)
	}
	return out
}

// matches checks each line against its pattern, in order; envelopes are
// matched by the pattern ENV(name), any time in them.
func matches(t *testing.T, what string, got, patterns []string) {
	t.Helper()
	ok := len(got) == len(patterns)
	for i := 0; ok && i < len(got); i++ {
		p := regexp.QuoteMeta(patterns[i])
		p = regexp.MustCompile(`ENV\\\((.+?)\\\)`).ReplaceAllString(p, `\[onebot $1 [^\]]+\]`)
		ok = regexp.MustCompile("^" + p + "$").MatchString(got[i])
	}
	if !ok {
		t.Errorf("%s:\n%s\nwant:\n%s", what, strings.Join(got, "\n"), strings.Join(patterns, "\n"))
	}
}

// atsOf lists the QQ numbers a send @s.
func atsOf(s qqSend) string {
	var ats []string
	for _, m := range s.params.Message {
		if m.Type == "at" {
			ats = append(ats, fmt.Sprint(m.Data["qq"]))
		}
	}
	return strings.Join(ats, ",")
}

// quoteOf is the id of the message a send quotes.
func quoteOf(s qqSend) string {
	for _, m := range s.params.Message {
		if m.Type == "reply" {
			return fmt.Sprint(m.Data["id"])
		}
	}
	return ""
}

// TestQQSteerCapAndDropEndToEnd: while the reply to 张三 is being
// written, three more members ask, one more than the queue's cap of 2.
// Per drop policy, old drops 李四's (the oldest), new refuses 赵六's (the
// newest) and summarize drops 李四's and tells the model what it said.
// The two messages kept are steered into the turn: the model is asked
// once more, with each as its own message under its sender's name (and,
// for summarize, the dropped one summarized before them), and its answer
// goes to the newest of them, @-ing both askers. The given-up message is
// never answered.
func TestQQSteerCapAndDropEndToEnd(t *testing.T) {
	for _, tt := range []struct {
		drop    string
		answer  string   // the model's answer to the steered messages
		steered []string // the messages it is asked with
		text    string   // the answer's text as sent, the @s aside
		quote   string
		ats     string
	}{
		{"old", "@王五 三 @赵六 四", []string{"user: ENV(王五) 王五 (10003): 问题三", "user: ENV(赵六) 赵六 (10004): 问题四"}, "三 四", "4", "10003,10004"},
		{"new", "@李四 二 @王五 三", []string{"user: ENV(李四) 李四 (10002): 问题二", "user: ENV(王五) 王五 (10003): 问题三"}, "二 三", "3", "10002,10003"},
		{"summarize", "@王五 三 @赵六 四", []string{
			"user: ENV(王五) [Messages dropped while you were busy]\n- 李四: 问题二\n[End of dropped messages]\n王五 (10003): 问题三",
			"user: ENV(赵六) 赵六 (10004): 问题四",
		}, "三 四", "4", "10003,10004"},
	} {
		t.Run(tt.drop, func(t *testing.T) {
			s := newSteerRig(t, tt.drop, llmtest.Reply{Text: []string{"先回答", "张三。"}}, llmtest.Reply{Text: []string{tt.answer}})
			s.ask(t, 1, 10001, "张三", "问题一")
			s.waitModel(t, 1)
			s.ask(t, 2, 10002, "李四", "问题二")
			s.ask(t, 3, 10003, "王五", "问题三")
			s.ask(t, 4, 10004, "赵六", "问题四")
			s.metric(t, `pincer_queue_dropped_total{policy="`+tt.drop+`"}`, 1)
			close(s.hold)

			first := waitSend(t, s.peer, s.ctx)
			if sentText(first) != "先回答张三。" || quoteOf(first) != "1" {
				t.Errorf("the first reply %q quotes %q", sentText(first), quoteOf(first))
			}
			second := waitSend(t, s.peer, s.ctx)
			if got := strings.Join(strings.Fields(sentText(second)), " "); got != tt.text || quoteOf(second) != tt.quote || atsOf(second) != tt.ats {
				t.Errorf("the steered answer %q quotes %q and @s %q; want %q quoting %s and @-ing %s", sentText(second), quoteOf(second), atsOf(second), tt.text, tt.quote, tt.ats)
			}
			s.metric(t, `pincer_turns_total{outcome="replied"}`, 2)
			reqs := s.model.Requests()
			if len(reqs) != 2 {
				t.Fatalf("%d model requests; want the turn and its steered continuation", len(reqs))
			}
			matches(t, "the steered call", chat(reqs[1])[1:], append([]string{"user: ENV(张三) 张三 (10001): 问题一", "assistant: 先回答张三。"}, tt.steered...))
			if n := len(s.sends()); n != 2 {
				t.Errorf("%d messages sent, want the two replies: %q", n, s.sends())
			}
		})
	}
}

// TestQQSteerDropSummaryBetweenToolRounds: the first model call of the
// reply to 张三 asks for a tool; while it is written, three more members
// ask, over the cap of 2, so under summarize 李四's is dropped. The two
// kept join the turn after the tool round, and the dropped one's summary
// comes with them: it is not lost with the turn.
func TestQQSteerDropSummaryBetweenToolRounds(t *testing.T) {
	s := newSteerRig(t, "summarize",
		llmtest.Reply{Text: []string{"我查一下时间。"}, ToolCalls: []llm.ToolCall{{ID: "call_1", Name: "current_time", Arguments: "{}"}}},
		llmtest.Reply{Text: []string{"@王五 三 @赵六 四"}})
	s.ask(t, 1, 10001, "张三", "问题一")
	s.waitModel(t, 1)
	s.ask(t, 2, 10002, "李四", "问题二")
	s.ask(t, 3, 10003, "王五", "问题三")
	s.ask(t, 4, 10004, "赵六", "问题四")
	s.metric(t, `pincer_queue_dropped_total{policy="summarize"}`, 1)
	close(s.hold)

	reply := waitSend(t, s.peer, s.ctx)
	s.metric(t, `pincer_turns_total{outcome="replied"}`, 1)
	reqs := s.model.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d model requests; want the tool round and the call after it", len(reqs))
	}
	got := chat(reqs[1])
	matches(t, "the call after the tool round", got[1:], []string{
		"user: ENV(张三) 张三 (10001): 问题一",
		"assistant: 我查一下时间。[call current_time]",
		"tool: " + strings.TrimPrefix(got[3], "tool: "),
		"user: ENV(王五) [Messages dropped while you were busy]\n- 李四: 问题二\n[End of dropped messages]\n王五 (10003): 问题三",
		"user: ENV(赵六) 赵六 (10004): 问题四",
	})
	if quoteOf(reply) != "1" || atsOf(reply) != "10003,10004" {
		t.Errorf("the reply quotes %q and @s %q; want the turn's message and both steered askers", quoteOf(reply), atsOf(reply))
	}
	if sends := s.sends(); len(sends) != 1 {
		t.Errorf("sent %q; want one reply", sends)
	}
}
