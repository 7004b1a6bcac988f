package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pincerbot/pincer/internal/channel/onebot/onebottest"
	"github.com/pincerbot/pincer/internal/config"
	"github.com/pincerbot/pincer/internal/llm"
	"github.com/pincerbot/pincer/internal/llm/llmtest"
)

// qqRig is a running gateway with a QQ account on a fake OneBot
// implementation and an OpenAI-compatible model server.
type qqRig struct {
	peer  *onebottest.Peer
	model *llmtest.Server
	gw    *started
	ctx   context.Context
	sent  atomic.Int64
}

// newQQRig starts the rig; edit adjusts the configuration. The model
// answers "ok" until scripted otherwise.
func newQQRig(t *testing.T, edit func(*config.Config)) *qqRig {
	t.Helper()
	return newQQRigAnswering(t, nil, edit)
}

// qqAnswer answers an action the rig's implementation is asked, when ok.
type qqAnswer func(action string, params json.RawMessage) (data any, retcode int, message string, ok bool)

// newQQRigAnswering is newQQRig whose implementation asks answer first.
func newQQRigAnswering(t *testing.T, answer qqAnswer, edit func(*config.Config)) *qqRig {
	t.Helper()
	r := &qqRig{model: llmtest.NewOpenAI(t)}
	r.peer = onebottest.New(t, func(action string, params json.RawMessage) (any, int, string) {
		if answer != nil {
			if data, code, text, ok := answer(action, params); ok {
				return data, code, text
			}
		}
		switch action {
		case "get_login_info":
			return map[string]any{"user_id": botQQ, "nickname": "bot"}, 0, ""
		case "send_group_msg", "send_private_msg":
			return map[string]any{"message_id": 9000 + r.sent.Add(1)}, 0, ""
		}
		return nil, 0, ""
	})
	cfg := withOpenAI(r.model.URL)
	cfg.Channels.OneBot.WSURL = r.peer.URL
	cfg.Channels.OneBot.SelfID = strconv.Itoa(botQQ)
	if edit != nil {
		edit(&cfg)
	}
	r.gw = startGateway(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	r.ctx = ctx
	if err := r.peer.Connected(ctx); err != nil {
		t.Fatal(err)
	}
	return r
}

// push sends an event from the implementation.
func (r *qqRig) push(t *testing.T, ev map[string]any) {
	t.Helper()
	if err := r.peer.Push(r.ctx, ev); err != nil {
		t.Fatal(err)
	}
}

// groupFrom is a group message event of a named member.
func groupFrom(id int64, user int64, name string, segs ...any) map[string]any {
	ev := qqGroupEvent(id, segs...)
	ev["user_id"] = user
	ev["sender"] = map[string]any{"user_id": user, "nickname": name}
	return ev
}

func privateFrom(id int64, user int64, text string) map[string]any {
	return map[string]any{
		"time": time.Now().Unix(), "self_id": botQQ, "post_type": "message", "message_type": "private",
		"message_id": id, "user_id": user, "sender": map[string]any{"user_id": user, "nickname": "张三"}, "message": text,
	}
}

func text(s string) map[string]any { return seg("text", map[string]any{"text": s}) }
func atBot() map[string]any        { return seg("at", map[string]any{"qq": botQQ}) }

// sends lists the texts of every message the bot sent so far.
func (r *qqRig) sends() []string {
	var out []string
	for _, c := range r.peer.Calls() {
		if !strings.HasPrefix(c.Action, "send_") {
			continue
		}
		var s qqSend
		s.action = c.Action
		_ = json.Unmarshal(c.Params, &s.params)
		out = append(out, sentText(s))
	}
	return out
}

// userMessages lists the user messages of a model request, in order.
func userMessages(req llmtest.Request) []string {
	var out []string
	msgs, _ := req.Body["messages"].([]any)
	for _, m := range msgs {
		mm, _ := m.(map[string]any)
		if mm["role"] == "user" {
			out = append(out, mustString(mm["content"]))
		}
	}
	return out
}

// metric waits until the gateway's metric series (a line's name and
// labels, e.g. `pincer_turns_total{outcome="failed"}`) reaches at least n.
func (r *qqRig) metric(t *testing.T, series string, n float64) {
	t.Helper()
	for {
		res, err := http.Get(r.gw.url + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		for _, l := range strings.Split(string(body), "\n") {
			if v, ok := strings.CutPrefix(l, series+" "); ok {
				if got, err := strconv.ParseFloat(v, 64); err == nil && got >= n {
					return
				}
			}
		}
		select {
		case <-r.ctx.Done():
			t.Fatalf("metrics never showed %s at %v:\n%s", series, n, grep(string(body), "pincer_turns"))
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func grep(s, prefix string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.HasPrefix(l, prefix) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// TestQQAckNeverHoldsUpAMessage: with groupAutoReact on and an
// implementation that never answers set_msg_emoji_like, the mention still
// opens its window at once, the follow-up joins it, and the reply comes
// long before the reaction times out.
func TestQQAckNeverHoldsUpAMessage(t *testing.T) {
	r := newQQRig(t, func(c *config.Config) {
		c.Channels.OneBot.GroupAutoReact = true
		c.Channels.OneBot.RequestTimeoutMs = 20000
	})
	r.peer.Silence("set_msg_emoji_like")
	r.push(t, groupFrom(1, 10001, "张三", atBot(), text(" 看看这个")))
	r.push(t, groupFrom(2, 10001, "张三", text("还有这个")))
	start := time.Now()
	s := waitSend(t, r.peer, r.ctx)
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("the reply waited %v for the reaction", took)
	}
	if len(s.params.Message) == 0 || s.params.Message[0].Type != "reply" || s.params.Message[0].Data["id"] != "1" {
		t.Errorf("the reply quotes the mention: %+v", s.params.Message)
	}
	reqs := r.model.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d model requests", len(reqs))
	}
	if got := strings.Join(userMessages(reqs[0]), "\n"); !strings.Contains(got, "看看这个\n还有这个") {
		t.Errorf("the follow-up must join the mention's batch: %q", got)
	}
}

// TestQQSteeredMessagesKeepTheirSenders: while a reply is being written,
// two more people ask; each reaches the model as their own message under
// their own name, and the reply answering them may mention both.
func TestQQSteeredMessagesKeepTheirSenders(t *testing.T) {
	hold := make(chan struct{})
	r := newQQRig(t, func(c *config.Config) { c.Channels.OneBot.Receive.History.Enabled = false })
	r.model.Script(llmtest.Reply{Text: []string{"first ", "answer"}, Hold: hold}, llmtest.Reply{Text: []string{"@李四 八点 @王五 老地方"}})
	r.push(t, groupFrom(1, 10001, "张三", atBot(), text(" 我们聚餐吗")))
	for len(r.model.Requests()) == 0 {
		time.Sleep(5 * time.Millisecond)
	}
	r.push(t, groupFrom(2, 10002, "李四", atBot(), text(" 几点？")))
	r.push(t, groupFrom(3, 10003, "王五", atBot(), text(" 在哪？")))
	// Both windows close (800 ms of quiet) and wait to steer into the
	// running turn.
	r.metric(t, `pincer_inbound_messages_total{channel="onebot",outcome="accepted"}`, 3)
	close(hold)
	first := waitSend(t, r.peer, r.ctx)
	second := waitSend(t, r.peer, r.ctx)
	if sentText(first) != "first answer" {
		t.Errorf("first reply %q", sentText(first))
	}
	reqs := r.model.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d model requests; want the turn and its steered continuation", len(reqs))
	}
	msgs := userMessages(reqs[1])
	if len(msgs) < 3 {
		t.Fatalf("user messages %q", msgs)
	}
	last := msgs[len(msgs)-2:]
	if last[0] > last[1] {
		last[0], last[1] = last[1], last[0] // the two windows close in either order
	}
	if !strings.Contains(last[0], " 李四 ") || !strings.HasSuffix(last[0], "几点？") || !strings.Contains(last[1], " 王五 ") || !strings.HasSuffix(last[1], "在哪？") {
		t.Errorf("each steered message keeps its sender: %q", last)
	}
	var ats []string
	for _, m := range second.params.Message {
		if m.Type == "at" {
			ats = append(ats, fmt.Sprint(m.Data["qq"]))
		}
	}
	if strings.Join(ats, ",") != "10002,10003" {
		t.Errorf("the reply may mention both askers: %v in %+v", ats, second.params.Message)
	}
}

// TestQQDigestIsNeverMergedIntoARealtimeTurn: a digest and a realtime
// batch that both flush while a reply is being written are not merged into
// one model call: the batch continues the running turn, the digest runs as
// a turn of its own through its own delivery (no quote, SKIP honoured).
func TestQQDigestIsNeverMergedIntoARealtimeTurn(t *testing.T) {
	hold := make(chan struct{})
	r := newQQRig(t, func(c *config.Config) {
		c.Channels.OneBot.Receive.Digest.Enabled = true
		c.Channels.OneBot.Receive.Digest.MaxMessages = 3
		c.Channels.OneBot.Receive.Digest.MinMessages = 1
		c.Channels.OneBot.Receive.History.Enabled = false
	})
	r.model.Script(llmtest.Reply{Text: []string{"the ", "answer"}, Hold: hold}, llmtest.Reply{Text: []string{"八点"}}, llmtest.Reply{Text: []string{"SKIP"}})
	r.push(t, groupFrom(1, 10001, "张三", atBot(), text(" 问个问题")))
	for len(r.model.Requests()) == 0 {
		time.Sleep(5 * time.Millisecond)
	}
	r.push(t, groupFrom(2, 10003, "王五", text("随便聊聊")))
	r.push(t, groupFrom(3, 10002, "李四", atBot(), text(" 几点集合？"))) // the digest is full: it flushes now
	// The digest and 李四's batch reach the engine.
	r.metric(t, `pincer_inbound_messages_total{channel="onebot",outcome="accepted"}`, 3)
	close(hold)
	r.metric(t, `pincer_turns_total{outcome="replied"}`, 2)
	r.metric(t, `pincer_turn_duration_seconds_count`, 3)
	reqs := r.model.Requests()
	if len(reqs) != 3 {
		t.Fatalf("%d model requests; want the turn, its steered continuation and the digest", len(reqs))
	}
	steered, digest := userMessages(reqs[1]), userMessages(reqs[2])
	if last := steered[len(steered)-1]; !strings.HasSuffix(last, "几点集合？") || strings.Contains(last, config.DefaultDigestPrompt) {
		t.Errorf("the second call continues the turn with the steered question alone: %q", last)
	}
	if last := digest[len(digest)-1]; !strings.Contains(last, "] "+config.DefaultDigestPrompt+"\n\n[") {
		t.Errorf("the third call is the digest alone: %q", last)
	}
	sends := r.peer.Calls()
	var quoted []string
	for _, c := range sends {
		if c.Action == "send_group_msg" {
			var s qqSend
			_ = json.Unmarshal(c.Params, &s.params)
			quoted = append(quoted, fmt.Sprint(s.params.Message[0].Data["id"])+":"+sentText(s))
		}
	}
	if strings.Join(quoted, "|") != "1:the answer|3:八点" {
		t.Errorf("sent %q; the digest's SKIP sends nothing", quoted)
	}
}

// TestQQCommandInsideAWindowActsAsCommand: /new sent right after a
// question is not sent to the model as text: the question is answered on
// its own and the command acts.
func TestQQCommandInsideAWindowActsAsCommand(t *testing.T) {
	r := newQQRig(t, func(c *config.Config) { c.Commands.AllowFrom = []string{"*"}; english(c) })
	r.model.Script(llmtest.Reply{Text: []string{"the answer"}})
	r.push(t, groupFrom(1, 10001, "张三", atBot(), text(" 问个问题")))
	r.push(t, groupFrom(2, 10001, "张三", text("/new")))
	a, b := waitSend(t, r.peer, r.ctx), waitSend(t, r.peer, r.ctx)
	got := sentText(a) + "|" + sentText(b)
	if !strings.Contains(got, "the answer") || !strings.Contains(got, "New session started") {
		t.Errorf("sent %q", got)
	}
	for _, req := range r.model.Requests() {
		if strings.Contains(strings.Join(userMessages(req), "\n"), "/new") {
			t.Errorf("the command reached the model: %q", userMessages(req))
		}
	}
}

// TestQQMidStreamFailureIsRetried: a stream that breaks off is not the
// answer: QQ showed nothing yet, so the call is made again and only the
// whole answer is sent.
func TestQQMidStreamFailureIsRetried(t *testing.T) {
	r := newQQRig(t, nil)
	r.model.Script(llmtest.Reply{Text: []string{"The answer ", "is 4", "2."}, CutAfter: 2}, llmtest.Reply{Text: []string{"The answer is 42."}})
	r.push(t, groupFrom(1, 10001, "张三", atBot(), text(" 答案是？")))
	s := waitSend(t, r.peer, r.ctx)
	if got := sentText(s); got != "The answer is 42." {
		t.Errorf("sent %q", got)
	}
	r.metric(t, `pincer_turns_total{outcome="replied"}`, 1)
	if got := r.sends(); len(got) != 1 {
		t.Errorf("sent %q", got)
	}
}

// TestQQFailuresAreSilentInGroupsAndExplainedInDirectChats: a model that
// keeps failing leaves a group without a message (the failure is counted);
// a direct chat learns which model failed and how.
func TestQQFailuresAreSilentInGroupsAndExplainedInDirectChats(t *testing.T) {
	r := newQQRig(t, english)
	r.model.Script(llmtest.Reply{Status: http.StatusInternalServerError})
	r.push(t, groupFrom(1, 10001, "张三", atBot(), text(" 在吗")))
	r.metric(t, `pincer_turns_total{outcome="failed"}`, 1)
	if got := r.sends(); len(got) != 0 {
		t.Errorf("a group got %q", got)
	}
	r.push(t, privateFrom(2, 10001, "在吗"))
	s := waitSend(t, r.peer, r.ctx)
	if got := sentText(s); s.action != "send_private_msg" || !strings.Contains(got, "openai/gpt-4o-mini failed with a server error (HTTP 500)") {
		t.Errorf("direct chat got %s %q", s.action, got)
	}
}

// TestQQBlocksRepeatAndStaySilent: with block streaming, a reply that
// repeats a paragraph sends it twice; a tool round's text is a block of
// its own and a final NO_REPLY is never sent.
func TestQQBlocksRepeatAndStaySilent(t *testing.T) {
	r := newQQRig(t, func(c *config.Config) {
		c.Agents.Defaults.BlockStreaming.Enabled = true
		c.Agents.Defaults.BlockStreaming.MinChars = 5
		c.Agents.Defaults.HumanDelay.Mode = "off"
		c.Channels.OneBot.Receive.History.Enabled = false
	})
	r.model.Script(llmtest.Reply{Text: []string{"啦啦啦，一起唱。\n\n", "第二段歌词。\n\n", "啦啦啦，一起唱。"}})
	r.push(t, groupFrom(1, 10001, "张三", atBot(), text(" 唱首歌")))
	r.metric(t, `pincer_turns_total{outcome="replied"}`, 1)
	if got := strings.Join(r.sends(), "|"); got != "啦啦啦，一起唱。|第二段歌词。|啦啦啦，一起唱。" {
		t.Errorf("sent %q", got)
	}

	r.model.Script(
		llmtest.Reply{Text: []string{"Let me check"}, ToolCalls: []llm.ToolCall{{ID: "c1", Name: "current_time", Arguments: "{}"}}},
		llmtest.Reply{Text: []string{"NO_", "REPLY"}},
	)
	r.push(t, groupFrom(2, 10001, "张三", atBot(), text(" 几点了")))
	r.metric(t, `pincer_turns_total{outcome="replied"}`, 2)
	sent := r.sends()
	if got := sent[len(sent)-1]; got != "Let me check" {
		t.Errorf("last send %q; want the tool round's text alone", got)
	}
	for _, s := range sent {
		if regexp.MustCompile(`(?i)no_?r?e?p?l?y?$`).MatchString(s) && strings.Contains(strings.ToUpper(s), "NO") {
			t.Errorf("the silent token leaked: %q", s)
		}
	}
}

// TestQQStoppedTurnAnswersSteeredMessagesOnce: a reply is stopped while two
// more questions wait to be steered into it; they get a turn of their own,
// and each reaches the model once.
func TestQQStoppedTurnAnswersSteeredMessagesOnce(t *testing.T) {
	hold := make(chan struct{})
	defer close(hold)
	r := newQQRig(t, func(c *config.Config) {
		c.Commands.AllowFrom = []string{"*"}
		c.Channels.OneBot.Receive.History.Enabled = false
		english(c)
	})
	r.model.Script(llmtest.Reply{Text: []string{"a long ", "story"}, Hold: hold}, llmtest.Reply{Text: []string{"八点，老地方"}})
	r.push(t, groupFrom(1, 10001, "张三", atBot(), text(" 讲个长故事")))
	for len(r.model.Requests()) == 0 {
		time.Sleep(5 * time.Millisecond)
	}
	r.push(t, groupFrom(2, 10002, "李四", atBot(), text(" 几点？")))
	r.push(t, groupFrom(3, 10003, "王五", atBot(), text(" 在哪？")))
	// Both windows close and wait to be steered.
	r.metric(t, `pincer_inbound_messages_total{channel="onebot",outcome="accepted"}`, 3)
	r.push(t, groupFrom(4, 10001, "张三", atBot(), text(" 停止")))
	a, b := waitSend(t, r.peer, r.ctx), waitSend(t, r.peer, r.ctx)
	if got := sentText(a) + "|" + sentText(b); !strings.Contains(got, "Stopped.") || !strings.Contains(got, "八点，老地方") {
		t.Errorf("sent %q", got)
	}
	reqs := r.model.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d model requests", len(reqs))
	}
	msgs := strings.Join(userMessages(reqs[1]), "\n")
	if strings.Count(msgs, "几点？") != 1 || strings.Count(msgs, "在哪？") != 1 {
		t.Errorf("each waiting question must reach the model once:\n%s", msgs)
	}
}

// TestQQSummaryWithoutHistoryActionUsesWhatPincerSaw: an implementation
// without get_group_msg_history still gets a summary, of the messages
// pincer saw itself.
func TestQQSummaryWithoutHistoryActionUsesWhatPincerSaw(t *testing.T) {
	model := llmtest.NewOpenAI(t)
	model.Script(llmtest.Reply{Text: []string{"大家在约明天开会。"}})
	var sent atomic.Int64
	peer := onebottest.New(t, func(action string, _ json.RawMessage) (any, int, string) {
		switch action {
		case "get_group_msg_history":
			return nil, 1404, "unknown action"
		case "send_group_msg":
			return map[string]any{"message_id": 9000 + sent.Add(1)}, 0, ""
		}
		return nil, 0, ""
	})
	cfg := withOpenAI(model.URL)
	cfg.Channels.OneBot.WSURL = peer.URL
	cfg.Channels.OneBot.SelfID = strconv.Itoa(botQQ)
	startGateway(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := peer.Connected(ctx); err != nil {
		t.Fatal(err)
	}
	for i, line := range []string{"明天开会", "几点？", "下午三点"} {
		if err := peer.Push(ctx, groupFrom(int64(11+i), int64(10002+i), []string{"李四", "王五", "赵六"}[i], text(line))); err != nil {
			t.Fatal(err)
		}
	}
	if err := peer.Push(ctx, groupFrom(20, 10001, "张三", text("/summary 5"))); err != nil {
		t.Fatal(err)
	}
	s := waitSend(t, peer, ctx)
	if got := sentText(s); got != "大家在约明天开会。" {
		t.Errorf("sent %q", got)
	}
	reqs := model.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d model requests", len(reqs))
	}
	body := strings.Join(userMessages(reqs[0]), "\n")
	for _, want := range []string{"李四(10002): 明天开会", "王五(10003): 几点？", "赵六(10004): 下午三点"} {
		if !strings.Contains(body, want) {
			t.Errorf("%q missing from the summary turn:\n%s", want, body)
		}
	}
	if strings.Contains(body, "/summary") {
		t.Errorf("the command itself is left out:\n%s", body)
	}
}

// TestHealthzReportsTheStoreAndAccounts: /healthz says which part is not
// working and why: a QQ account that cannot reach its implementation is
// degraded, a store whose directory was removed is down (503).
func TestHealthzReportsTheStoreAndAccounts(t *testing.T) {
	cfg := config.Default()
	cfg.Channels.OneBot.WSURL = "ws://127.0.0.1:1" // nothing listens there
	g := startGateway(t, cfg)
	get := func() (int, map[string]any) {
		t.Helper()
		res, err := http.Get(g.url + "/healthz")
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		var body map[string]any
		if err := json.NewDecoder(res.Body).Decode(&body); err != nil {
			t.Fatal(err)
		}
		return res.StatusCode, body
	}
	// The account is connecting, then waiting to try again after the dial
	// failed: degraded either way, with the dial's error once there is one.
	var code int
	var body map[string]any
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		code, body = get()
		if strings.Contains(fmt.Sprint(body["components"]), "127.0.0.1:1") || time.Now().After(deadline) {
			break
		}
	}
	if code != http.StatusOK || body["status"] != "degraded" {
		t.Errorf("an account that cannot connect: %d %v", code, body)
	}
	parts := fmt.Sprint(body["components"])
	if !strings.Contains(parts, "onebot/default") || !strings.Contains(parts, "127.0.0.1:1") {
		t.Errorf("the account and why it is degraded: %s", parts)
	}
	if err := os.RemoveAll(g.dataDir); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		code, body = get()
		if code == http.StatusServiceUnavailable || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if code != http.StatusServiceUnavailable || body["status"] != "down" || !strings.Contains(fmt.Sprint(body["components"]), "gone") {
		t.Errorf("a removed data directory: %d %v", code, body)
	}
}

// TestQQHungModelCallsDoNotStarveOtherGroups: eight groups' model calls
// hang (the provider accepted them and sends nothing) and fill every
// concurrency slot; a mention in a ninth group is still answered within
// seconds, not after the hung calls give up.
func TestQQHungModelCallsDoNotStarveOtherGroups(t *testing.T) {
	r := newQQRig(t, func(c *config.Config) {
		c.Agents.Defaults.MaxConcurrent = 8
		c.Agents.Defaults.FirstTokenTimeoutMs = 20000
		c.Gateway.ShutdownTimeoutMs = 1000 // the hung calls are cut when the test ends
		c.Channels.OneBot.Receive.History.Enabled = false
	})
	hung := make([]llmtest.Reply, 8)
	for i := range hung {
		hung[i] = llmtest.Reply{Stall: true}
	}
	r.model.Script(append(hung, llmtest.Reply{Text: []string{"马上到"}})...)
	for g := int64(1); g <= 8; g++ {
		ev := groupFrom(g, 10001, "张三", atBot(), text(" 在吗"))
		ev["group_id"] = 700000100 + g
		r.push(t, ev)
	}
	for len(r.model.Requests()) < 8 {
		time.Sleep(5 * time.Millisecond)
	}
	start := time.Now()
	r.push(t, groupFrom(9, 10002, "李四", atBot(), text(" 几点？")))
	s := waitSend(t, r.peer, r.ctx)
	if got := sentText(s); got != "马上到" {
		t.Errorf("sent %q", got)
	}
	if took := time.Since(start); took > 15*time.Second {
		t.Errorf("the ninth group waited %v, as long as the hung calls' first-token timeout", took)
	}
}
