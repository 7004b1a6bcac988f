package gateway

import (
	"context"
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pincerbot/pincer/internal/channel/onebot/onebottest"
	"github.com/pincerbot/pincer/internal/config"
	"github.com/pincerbot/pincer/internal/trace"
)

const botQQ = 3300000001

func qqGroupEvent(id int64, segs ...any) map[string]any {
	return map[string]any{
		"time": time.Now().Unix(), "self_id": botQQ, "post_type": "message", "message_type": "group",
		"message_id": id, "user_id": 10001, "group_id": 700000001,
		"sender": map[string]any{"user_id": 10001, "nickname": "张三"}, "message": segs,
	}
}

func seg(kind string, data map[string]any) map[string]any {
	return map[string]any{"type": kind, "data": data}
}

// startQQPreview runs a gateway on the built-in defaults (the preview
// agent, which answers with what it was sent) with history off, against a
// simulated implementation that answers actions with h, and waits for it
// to connect; ctx ends within 30 s.
func startQQPreview(t *testing.T, h onebottest.Handler) (*onebottest.Peer, *started, context.Context) {
	t.Helper()
	p := onebottest.New(t, h)
	cfg := config.Default()
	cfg.Channels.OneBot.WSURL = p.URL
	cfg.Channels.OneBot.SelfID = "3300000001"
	cfg.Channels.OneBot.Receive.History.Enabled = false
	g := startGateway(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	if err := p.Connected(ctx); err != nil {
		t.Fatal(err)
	}
	return p, g, ctx
}

type qqSend struct {
	action string
	params struct {
		GroupID int64 `json:"group_id"`
		Message []struct {
			Type string         `json:"type"`
			Data map[string]any `json:"data"`
		} `json:"message"`
	}
}

// waitSend waits for the next send action the peer receives.
func waitSend(t *testing.T, p *onebottest.Peer, ctx context.Context) qqSend {
	t.Helper()
	for {
		select {
		case a := <-p.Called():
			if !strings.HasPrefix(a, "send_") {
				continue
			}
			calls := p.Calls()
			for i := len(calls) - 1; i >= 0; i-- {
				if calls[i].Action == a {
					var s qqSend
					s.action = a
					if err := json.Unmarshal(calls[i].Params, &s.params); err != nil {
						t.Fatal(err)
					}
					return s
				}
			}
		case <-ctx.Done():
			t.Fatal("no send before the deadline")
		}
	}
}

// TestQQGroupMentionIsAnsweredEndToEnd runs the whole gateway against a
// OneBot implementation over a real forward WebSocket: a group message
// that does not mention the bot gets no answer of its own but is context
// for the next one; one that does gets a reaction and a quoted reply from
// the (preview) agent.
func TestQQGroupMentionIsAnsweredEndToEnd(t *testing.T) {
	p := onebottest.New(t, func(action string, _ json.RawMessage) (any, int, string) {
		switch action {
		case "get_login_info":
			return map[string]any{"user_id": botQQ, "nickname": "bot"}, 0, ""
		case "send_group_msg", "send_private_msg":
			return map[string]any{"message_id": 9001}, 0, ""
		}
		return nil, 0, ""
	})
	p.Token = "qq-token"
	cfg := config.Default()
	cfg.Channels.OneBot.WSURL = p.URL
	cfg.Channels.OneBot.AccessToken = "qq-token"
	cfg.Channels.OneBot.GroupAutoReact = true
	startGateway(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := p.Connected(ctx); err != nil {
		t.Fatal(err)
	}
	if err := p.Push(ctx, map[string]any{"post_type": "meta_event", "meta_event_type": "lifecycle", "sub_type": "connect", "self_id": botQQ}); err != nil {
		t.Fatal(err)
	}
	if err := p.Push(ctx, qqGroupEvent(1, seg("text", map[string]any{"text": "just chatting"}))); err != nil {
		t.Fatal(err)
	}
	if err := p.Push(ctx, qqGroupEvent(2, seg("at", map[string]any{"qq": botQQ}), seg("text", map[string]any{"text": " 你好"}))); err != nil {
		t.Fatal(err)
	}
	s := waitSend(t, p, ctx)
	if s.action != "send_group_msg" || s.params.GroupID != 700000001 {
		t.Fatalf("sent %+v", s)
	}
	if len(s.params.Message) < 2 || s.params.Message[0].Type != "reply" || s.params.Message[0].Data["id"] != "2" {
		t.Fatalf("the reply must quote the trigger: %+v", s.params.Message)
	}
	var text strings.Builder
	for _, m := range s.params.Message[1:] {
		if m.Type == "text" {
			text.WriteString(m.Data["text"].(string))
		}
	}
	// The chatter before the mention reaches the agent as history, the
	// mention itself as the message to answer.
	for _, want := range []string{"【历史聊天记录", "张三(10001): just chatting", "张三 (10001): 你好"} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("the preview agent echoes what it was sent; %q is missing from %q", want, text.String())
		}
	}
	sends := 0
	for _, c := range p.Calls() {
		if strings.HasPrefix(c.Action, "send_") {
			sends++
		}
	}
	if sends != 1 {
		t.Errorf("%d sends; the message without a mention must not be answered", sends)
	}
	reacted := false
	for _, c := range p.Calls() {
		reacted = reacted || (c.Action == "set_msg_emoji_like" && strings.Contains(string(c.Params), `"message_id":2`))
	}
	if !reacted {
		t.Error("groupAutoReact: the triggering message gets a reaction")
	}
}

// TestQQReverseWebSocketThroughTheGatewayListener checks that the reverse
// endpoint lives on gateway.listen, answers to the OneBot token rather
// than the gateway token, and carries a direct chat end to end.
func TestQQReverseWebSocketThroughTheGatewayListener(t *testing.T) {
	p := onebottest.New(t, func(action string, _ json.RawMessage) (any, int, string) {
		if strings.HasPrefix(action, "send_") {
			return map[string]any{"message_id": 9002}, 0, ""
		}
		return nil, 0, ""
	})
	cfg := config.Default()
	cfg.Gateway.Token = "gateway-secret"
	cfg.Channels.OneBot.AccessToken = "qq-token"
	cfg.Channels.OneBot.ReverseWS.Enabled = true
	s := startGateway(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	url := "ws" + strings.TrimPrefix(s.url, "http") + "/onebot/v11/ws"
	if err := p.DialReverse(ctx, url, onebottest.ReverseOptions{SelfID: botQQ, Authorization: "Bearer wrong"}); err == nil {
		t.Fatal("a wrong OneBot token must be refused")
	}
	if err := p.DialReverse(ctx, url, onebottest.ReverseOptions{SelfID: botQQ, Authorization: "Token qq-token"}); err != nil {
		t.Fatal(err)
	}
	if err := p.Connected(ctx); err != nil {
		t.Fatal(err)
	}
	dm := map[string]any{
		"time": time.Now().Unix(), "self_id": botQQ, "post_type": "message", "message_type": "private",
		"message_id": 5, "user_id": 10001, "sender": map[string]any{"user_id": 10001, "nickname": "张三"},
		"message": "[CQ:face,id=14]在吗",
	}
	if err := p.Push(ctx, dm); err != nil {
		t.Fatal(err)
	}
	sent := waitSend(t, p, ctx)
	if sent.action != "send_private_msg" {
		t.Fatalf("sent %+v", sent)
	}
	for _, m := range sent.params.Message {
		if m.Type == "reply" {
			t.Error("direct replies do not quote")
		}
	}
}

// TestQQSummaryEndToEnd: /summary fetches the group's history from the
// implementation and answers in plain text, quoting the command.
func TestQQSummaryEndToEnd(t *testing.T) {
	now := time.Now().Unix()
	p := onebottest.New(t, func(action string, params json.RawMessage) (any, int, string) {
		switch action {
		case "get_group_msg_history":
			if !strings.Contains(string(params), `"count":6`) {
				return nil, 100, "unexpected params " + string(params)
			}
			return map[string]any{"messages": []any{
				map[string]any{"message_id": 11, "time": now - 60, "user_id": 10002, "sender": map[string]any{"user_id": 10002, "nickname": "李四"}, "message": "明天开会"},
				map[string]any{"message_id": 12, "time": now - 30, "user_id": 10003, "sender": map[string]any{"user_id": 10003, "nickname": "王五"}, "message": "几点？"},
				map[string]any{"message_id": 13, "time": now, "user_id": 10001, "sender": map[string]any{"user_id": 10001, "nickname": "张三"}, "message": "/summary 5"},
			}}, 0, ""
		case "send_group_msg":
			return map[string]any{"message_id": 9003}, 0, ""
		}
		return nil, 0, ""
	})
	cfg := config.Default()
	cfg.Channels.OneBot.WSURL = p.URL
	cfg.Channels.OneBot.SelfID = "3300000001"
	startGateway(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := p.Connected(ctx); err != nil {
		t.Fatal(err)
	}
	if err := p.Push(ctx, qqGroupEvent(13, seg("text", map[string]any{"text": "/summary 5"}))); err != nil {
		t.Fatal(err)
	}
	s := waitSend(t, p, ctx)
	if len(s.params.Message) < 2 || s.params.Message[0].Type != "reply" || s.params.Message[0].Data["id"] != "13" {
		t.Fatalf("the summary quotes the command: %+v", s.params.Message)
	}
	var text strings.Builder
	for _, m := range s.params.Message[1:] {
		if m.Type == "text" {
			text.WriteString(m.Data["text"].(string))
		}
	}
	got := text.String()
	for _, want := range []string{"李四(10002): 明天开会", "王五(10003): 几点？", config.DefaultSummaryPrompt} {
		if !strings.Contains(got, want) {
			t.Errorf("%q missing from the summary turn:\n%s", want, got)
		}
	}
	if strings.Contains(got, "张三(10001): /summary") {
		t.Error("the command is left out of the transcript")
	}
	if strings.Contains(got, "`") || !strings.Contains(got, "(see pincer config example)") {
		t.Errorf("the reply is flattened to plain text (the preview's code span loses its backticks):\n%s", got)
	}
}

func TestReceiveSettingsFromConfig(t *testing.T) {
	r := config.DefaultReceive()
	r.Digest.MinMessages, r.Digest.MaxMessages = 90, 50
	r.History.MaxAgeMs = 60000
	s := ReceiveSettings(r)
	if s.Realtime.Window != 800*time.Millisecond || s.Realtime.MaxWindow != 3*time.Second || s.Digest.Interval != 5*time.Minute {
		t.Errorf("durations: %+v %+v", s.Realtime, s.Digest)
	}
	if s.Digest.MinMessages != 50 {
		t.Errorf("minMessages is clamped to maxMessages: %d", s.Digest.MinMessages)
	}
	if s.History.MaxAge != time.Minute || !s.History.Enabled || s.History.MaxChars != 4000 {
		t.Errorf("history %+v", s.History)
	}
	if !s.Mention.Enabled || !s.Mention.RequireMentionInGroup || s.Mention.KeywordMatch != "contains" || !s.Mention.AlwaysReplyInDirect || !s.Mention.TriggerOnReplyToSelf {
		t.Errorf("mention %+v", s.Mention)
	}
	if s.Summary.Count != 100 || s.Summary.MaxCount != 200 || s.Summary.Prompt != config.DefaultSummaryPrompt || len(s.Summary.Commands) != 2 {
		t.Errorf("summary %+v", s.Summary)
	}
}

// TestQQQuoteEndToEnd: a reply that mentions the bot triggers a turn whose
// body starts with the quoted message and its forward, fetched from the
// implementation.
func TestQQQuoteEndToEnd(t *testing.T) {
	p, g, ctx := startQQPreview(t, func(action string, params json.RawMessage) (any, int, string) {
		switch action {
		case "get_msg":
			return map[string]any{"message_id": 50, "time": 1774420200, "sender": map[string]any{"user_id": 10002, "nickname": "李四"},
				"message": []any{
					map[string]any{"type": "text", "data": map[string]any{"text": "转给你看"}},
					map[string]any{"type": "forward", "data": map[string]any{"id": "res-1"}},
				}}, 0, ""
		case "get_forward_msg":
			return map[string]any{"messages": []any{
				map[string]any{"sender": map[string]any{"user_id": 10003, "nickname": "王五"}, "time": 1774420100, "content": "原来的话"},
			}}, 0, ""
		case "send_group_msg":
			return map[string]any{"message_id": 9004}, 0, ""
		}
		return nil, 0, ""
	})
	if err := p.Push(ctx, qqGroupEvent(60,
		// QQ puts an @ of the quoted author after the reply; the user
		// added the @ of the bot.
		seg("reply", map[string]any{"id": "50"}), seg("at", map[string]any{"qq": 10002}), seg("text", map[string]any{"text": " "}),
		seg("at", map[string]any{"qq": botQQ}), seg("text", map[string]any{"text": " 这是什么"}))); err != nil {
		t.Fatal(err)
	}
	got := sentText(waitSend(t, p, ctx))
	for _, want := range []string{"[引用 李四(10002) 于 ", " 的消息：转给你看[合并转发]", "\n  - 王五(10003) ", "：原来的话\n]\n这是什么"} {
		if !strings.Contains(got, want) {
			t.Errorf("%q missing from\n%s", want, got)
		}
	}
	// Its trace says what the resolution did and spent of its budgets.
	rec := traceOf(t, ctx, g.url, "onebot:default:group:700000001", "60", "platform call")
	for _, step := range rec.Steps {
		if step.Stage == trace.StageQuote {
			for _, want := range []string{"quoted message of 李四 resolved", "forwards: 1 of at most", "2 platform call(s) of at most", "characters"} {
				if !strings.Contains(step.Detail, want) {
					t.Errorf("quote step %q lacks %q", step.Detail, want)
				}
			}
		}
	}
}

// TestQQRecalledQuoteIsAskedForAgain: a quoted message is fetched once
// for a while, but once a recall notice says its sender took it back, the
// next quote of it asks again and shows the failure the implementation
// answers, not the text it had.
func TestQQRecalledQuoteIsAskedForAgain(t *testing.T) {
	var recalled atomic.Bool
	var asked atomic.Int32
	p, _, ctx := startQQPreview(t, func(action string, params json.RawMessage) (any, int, string) {
		switch action {
		case "get_msg":
			asked.Add(1)
			if recalled.Load() {
				return nil, 100, "消息已撤回"
			}
			return map[string]any{"message_id": 50, "time": 1774420200, "sender": map[string]any{"user_id": 10002, "nickname": "李四"},
				"message": []any{map[string]any{"type": "text", "data": map[string]any{"text": "明天放假"}}}}, 0, ""
		case "send_group_msg":
			return map[string]any{"message_id": 9004}, 0, ""
		}
		return nil, 0, ""
	})
	ask := func(id int64) string {
		t.Helper()
		if err := p.Push(ctx, qqGroupEvent(id, seg("reply", map[string]any{"id": "50"}), seg("at", map[string]any{"qq": botQQ}), seg("text", map[string]any{"text": " 真的吗"}))); err != nil {
			t.Fatal(err)
		}
		return sentText(waitSend(t, p, ctx))
	}
	if got := ask(60); !strings.Contains(got, "的消息：明天放假") {
		t.Fatalf("the first quote:\n%s", got)
	}
	if got := ask(61); !strings.Contains(got, "的消息：明天放假") || asked.Load() != 1 {
		t.Fatalf("the second quote, %d get_msg: \n%s", asked.Load(), got)
	}
	recalled.Store(true)
	if err := p.Push(ctx, map[string]any{"time": time.Now().Unix(), "self_id": botQQ, "post_type": "notice", "notice_type": "group_recall",
		"group_id": 700000001, "user_id": 10002, "operator_id": 10002, "message_id": 50}); err != nil {
		t.Fatal(err)
	}
	// (The preview agent's answer shows the earlier turns too.)
	if got := ask(62); !strings.Contains(got, "[引用消息获取失败]\n]\n真的吗") || asked.Load() != 2 {
		t.Errorf("the quote after the recall, %d get_msg:\n%s", asked.Load(), got)
	}
}
