package gateway

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/pincerbot/pincer/internal/channel/webchat"
	"github.com/pincerbot/pincer/internal/channel/webchat/webchattest"
	"github.com/pincerbot/pincer/internal/config"
	"github.com/pincerbot/pincer/internal/dashboard"
	"github.com/pincerbot/pincer/internal/llm"
	"github.com/pincerbot/pincer/internal/llm/llmtest"
	"github.com/pincerbot/pincer/internal/trace"
)

// limitStepOf is the limit step of a trace record.
func limitStepOf(rec trace.Record) trace.Step {
	for _, s := range rec.Steps {
		if s.Stage == trace.StageLimit {
			return s
		}
	}
	return trace.Step{}
}

// TestQQPerUserMessagesPerMinute: through the real gateway and a OneBot
// implementation over a WebSocket, with limits.perUser.messagesPerMinute
// 2, a person's third message in a minute makes no model call and its
// trace says which limit held it and when it resets; the direct chat is
// told once, the next message held is not told again, and the same
// person's @ in a group is held without a word to the group.
func TestQQPerUserMessagesPerMinute(t *testing.T) {
	r := newQQRig(t, func(c *config.Config) {
		c.Limits.PerUser.MessagesPerMinute = 2
		c.UI.Locale = "en"
	})
	r.model.Script(llmtest.Reply{Text: []string{"好的"}})
	for i := range 2 {
		r.push(t, privateFrom(int64(i+1), 10001, "问题"))
		r.metric(t, `pincer_turns_total{outcome="replied"}`, float64(i+1))
	}
	chat := "onebot:default:direct:10001"
	r.push(t, privateFrom(3, 10001, "问题"))
	step := limitStepOf(traceOf(t, r.ctx, r.gw.url, chat, "3", "limits.perUser.messagesPerMinute = 2"))
	if step.Outcome != "held" || !strings.Contains(step.Detail, "no model call; resets at ") || !strings.Contains(step.Detail, "the chat was told") {
		t.Errorf("limit step %+v", step)
	}
	if n := len(r.model.Requests()); n != 2 {
		t.Errorf("%d model calls, want 2", n)
	}
	notice := "⏳ No reply: the limit here is 2 per minute."
	if sends := r.sends(); len(sends) != 3 || !strings.HasPrefix(sends[2], notice) {
		t.Errorf("sent %q, want two replies and the notice", sends)
	}

	r.push(t, privateFrom(4, 10001, "问题"))
	step = limitStepOf(traceOf(t, r.ctx, r.gw.url, chat, "4", `"held"`))
	if strings.Contains(step.Detail, "told") {
		t.Errorf("the second message held told the chat again: %+v", step)
	}
	r.push(t, groupFrom(5, 10001, "张三", atBot(), text(" 问题")))
	traceOf(t, r.ctx, r.gw.url, "onebot:default:group:700000001", "5", "limits.perUser.messagesPerMinute = 2")
	if sends := r.sends(); len(sends) != 3 {
		t.Errorf("sent %q after the held messages, want only the first notice", sends)
	}
	if n := len(r.model.Requests()); n != 2 {
		t.Errorf("%d model calls, want 2", n)
	}
}

// TestQQTokensPerDay: the usage an OpenAI-compatible server reports counts
// against limits.perChat.tokensPerDay; the turn after the budget is spent
// makes no model call, its trace says so, and /status shows the day's
// use.
func TestQQTokensPerDay(t *testing.T) {
	r := newQQRig(t, func(c *config.Config) {
		c.Limits.PerChat.TokensPerDay = 100
		c.UI.Locale = "en"
	})
	r.model.Script(llmtest.Reply{Text: []string{"好的"}, Usage: &llm.Usage{InputTokens: 90, OutputTokens: 30}})
	r.push(t, privateFrom(1, 10001, "问题"))
	r.metric(t, `pincer_turns_total{outcome="replied"}`, 1)
	r.push(t, privateFrom(2, 10001, "问题"))
	step := limitStepOf(traceOf(t, r.ctx, r.gw.url, "onebot:default:direct:10001", "2", "limits.perChat.tokensPerDay = 100 reached (120 tokens used today)"))
	if !strings.Contains(step.Detail, "resets at ") {
		t.Errorf("limit step %+v", step)
	}
	if n := len(r.model.Requests()); n != 1 {
		t.Errorf("%d model calls, want 1", n)
	}
	r.push(t, privateFrom(3, 10001, "/status"))
	if got := r.sentWith(t, "Tokens today"); !strings.Contains(got, "Tokens today: 120 of 100 in this chat, 120 by you") {
		t.Errorf("/status says %q", got)
	}
	res, err := http.Get(r.gw.url + "/api/dashboard/status")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var st dashboard.Status
	if err := json.NewDecoder(res.Body).Decode(&st); err != nil {
		t.Fatal(err)
	}
	want := &dashboard.Tokens{Day: time.Now().Format(time.DateOnly),
		Users: []dashboard.TokenCount{{Key: "onebot:10001", Tokens: 120}},
		Chats: []dashboard.TokenCount{{Key: "onebot:default:direct:10001", Tokens: 120}}}
	if diff := cmp.Diff(want, st.Tokens); diff != "" {
		t.Errorf("the dashboard's tokens of today (-want +got):\n%s", diff)
	}
}

// sentWith waits for a message the bot sent that contains part.
func (r *qqRig) sentWith(t *testing.T, part string) string {
	t.Helper()
	for {
		for _, s := range r.sends() {
			if strings.Contains(s, part) {
				return s
			}
		}
		select {
		case <-r.ctx.Done():
			t.Fatalf("nothing sent with %q; sent %q", part, r.sends())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// TestWebchatTurnsOverALimitEnd: in the web chat, a message a limit holds
// ends its request like any other: the first with the notice, the next
// with nothing, and neither reaches the model.
func TestWebchatTurnsOverALimitEnd(t *testing.T) {
	fake := llmtest.NewOpenAI(t)
	cfg := withOpenAI(fake.URL)
	cfg.Limits.PerUser.MessagesPerMinute = 1
	cfg.UI.Locale = "en"
	g := startGateway(t, cfg)
	c := webchattest.New(g.url)
	var replies []string
	for range 3 {
		res, _, err := c.Post("问题", "")
		if err != nil {
			t.Fatal(err)
		}
		events, err := webchattest.Events(res)
		if err != nil {
			t.Fatal(err)
		}
		replies = append(replies, webchattest.Text(events, webchat.EventReply))
	}
	if n := len(fake.Requests()); n != 1 {
		t.Errorf("%d model calls, want 1", n)
	}
	if !strings.HasPrefix(replies[1], "⏳ No reply: the limit here is 1 per minute.") || replies[2] != "" {
		t.Errorf("replies %q", replies)
	}
}

// TestQQChatLimitsAreLayered: limits set in a chat's entry hold there and
// are named by their key in the trace; another group, with no entry and
// no top-level limits, answers the same person every time.
func TestQQChatLimitsAreLayered(t *testing.T) {
	r := newQQRig(t, withChats(t, `{ groups: { '700000009': { limits: { perUser: { messagesPerMinute: 1 } } } } }`))
	strict := func(id int64) map[string]any {
		return inGroup(700000009, id, 10001, "张三", atBot(), text(" 问题"))
	}
	r.push(t, strict(1))
	r.metric(t, `pincer_turns_total{outcome="replied"}`, 1)
	r.push(t, strict(2))
	step := limitStepOf(traceOf(t, r.ctx, r.gw.url, "onebot:default:group:700000009", "2", "channels.onebot.groups.700000009.limits.perUser.messagesPerMinute = 1"))
	if step.Outcome != "held" {
		t.Errorf("limit step %+v", step)
	}
	for i := range 3 {
		r.push(t, groupFrom(int64(10+i), 10001, "张三", atBot(), text(" 问题")))
		r.metric(t, `pincer_turns_total{outcome="replied"}`, float64(2+i))
	}
	if n := len(r.model.Requests()); n != 4 {
		t.Errorf("%d model calls, want 4 (one in the strict group, three in the other)", n)
	}
}
