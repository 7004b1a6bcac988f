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
