package gateway

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/pincerbot/pincer/internal/channel/onebot/onebottest"
	"github.com/pincerbot/pincer/internal/config"
)

// sentText is the text of a send, its segments joined.
func sentText(s qqSend) string {
	var b strings.Builder
	for _, m := range s.params.Message {
		if m.Type == "text" {
			b.WriteString(m.Data["text"].(string))
		}
	}
	return b.String()
}

// TestQQReplyThenMentionOfTheBotEndToEnd: "[reply][@bot] question" is a
// mention of the bot (only the at QQ inserts for the quoted author is
// noise), and the agent reads the question without the leading @.
func TestQQReplyThenMentionOfTheBotEndToEnd(t *testing.T) {
	p := onebottest.New(t, func(action string, params json.RawMessage) (any, int, string) {
		switch action {
		case "get_msg":
			return map[string]any{"message_id": 50, "time": 1774420200, "sender": map[string]any{"user_id": 10002, "nickname": "李四"},
				"message": []any{map[string]any{"type": "text", "data": map[string]any{"text": "明早八点出发"}}}}, 0, ""
		case "send_group_msg":
			return map[string]any{"message_id": 9101}, 0, ""
		}
		return nil, 0, ""
	})
	cfg := config.Default()
	cfg.Channels.OneBot.WSURL = p.URL
	cfg.Channels.OneBot.SelfID = "3300000001"
	cfg.Channels.OneBot.Receive.History.Enabled = false
	startGateway(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if err := p.Connected(ctx); err != nil {
		t.Fatal(err)
	}
	if err := p.Push(ctx, qqGroupEvent(61,
		seg("reply", map[string]any{"id": "50"}), seg("at", map[string]any{"qq": botQQ}), seg("text", map[string]any{"text": " 几点集合？"}))); err != nil {
		t.Fatal(err)
	}
	s := waitSend(t, p, ctx)
	got := sentText(s)
	for _, want := range []string{"[引用 李四(10002) 于 ", " 的消息：明早八点出发\n]\n几点集合？"} {
		if !strings.Contains(got, want) {
			t.Errorf("%q missing from\n%s", want, got)
		}
	}
	if strings.Contains(got, "@3300000001") {
		t.Errorf("the leading mention is stripped:\n%s", got)
	}
}

// TestQQQuotedGoCQHTTPNestedForwardEndToEnd: a quoted message carries a
// merged forward that go-cqhttp answers in its Shape B, with a nested
// forward inlined as a node list (reference §13 E); the nested node's text
// reaches the agent, indented one level deeper than its node.
func TestQQQuotedGoCQHTTPNestedForwardEndToEnd(t *testing.T) {
	p := onebottest.New(t, func(action string, params json.RawMessage) (any, int, string) {
		switch action {
		case "get_msg":
			return map[string]any{"message_id": 50, "time": 1759990100, "sender": map[string]any{"user_id": 10002, "nickname": "李四"},
				"message": "看这个[CQ:forward,id=Xq7c2L0VwF1r8bH3kN9sPg]"}, 0, ""
		case "get_forward_msg":
			if !strings.Contains(string(params), "Xq7c2L0VwF1r8bH3kN9sPg") {
				return nil, 100, "unknown forward " + string(params)
			}
			return json.RawMessage(`{"messages": [
			  {"sender": {"user_id": 10005, "nickname": "Eve"}, "time": 1759990000, "group_id": 0,
			   "content": "路线已发群文件&#91;v2&#93;"},
			  {"sender": {"user_id": 10006, "nickname": "Frank"}, "time": 1759990060, "group_id": 0,
			   "content": [{"sender": {"user_id": 10007, "nickname": "Gina"}, "time": 1759900000,
			                "content": "上次的装备清单"}]}
			]}`), 0, ""
		case "send_group_msg":
			return map[string]any{"message_id": 9102}, 0, ""
		}
		return nil, 0, ""
	})
	cfg := config.Default()
	cfg.Channels.OneBot.WSURL = p.URL
	cfg.Channels.OneBot.SelfID = "3300000001"
	cfg.Channels.OneBot.Receive.History.Enabled = false
	startGateway(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if err := p.Connected(ctx); err != nil {
		t.Fatal(err)
	}
	if err := p.Push(ctx, qqGroupEvent(62,
		seg("reply", map[string]any{"id": "50"}), seg("at", map[string]any{"qq": 10002}), seg("text", map[string]any{"text": " "}),
		seg("at", map[string]any{"qq": botQQ}), seg("text", map[string]any{"text": " 总结一下"}))); err != nil {
		t.Fatal(err)
	}
	got := sentText(waitSend(t, p, ctx))
	for _, want := range []string{
		"的消息：看这个[合并转发]\n",
		"\n  - Eve(10005) ", "：路线已发群文件[v2]\n",
		"\n  - Frank(10006) ", "：[合并转发]\n",
		"\n    - Gina(10007) ", "：上次的装备清单\n]\n总结一下",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("%q missing from\n%s", want, got)
		}
	}
	for _, c := range p.Calls() {
		if c.Action == "get_forward_msg" && strings.Contains(string(c.Params), "inline:") {
			t.Errorf("a made-up id went to the implementation: %s", c.Params)
		}
	}
}
