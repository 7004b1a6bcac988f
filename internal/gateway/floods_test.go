package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/pincerbot/pincer/internal/channel/onebot"
	"github.com/pincerbot/pincer/internal/channel/onebot/onebottest"
	"github.com/pincerbot/pincer/internal/channel/onebot/wire"
	"github.com/pincerbot/pincer/internal/config"
	"github.com/pincerbot/pincer/internal/llm/llmtest"
	"github.com/pincerbot/pincer/internal/quote"
)

// The QQ account counts get_forward_msg's retry against a resolution's
// budget of calls.
var _ quote.LimitedForwardFetcher = (*onebot.Account)(nil)

// TestQQForwardFanOutIsBoundedEndToEnd: a mention carrying 2,000
// [CQ:forward] codes, none of which the implementation can load, is
// answered after at most 2 x maxNodes get_forward_msg calls (each failed
// id is asked with id and then with message_id), not 4,000.
func TestQQForwardFanOutIsBoundedEndToEnd(t *testing.T) {
	var forwards atomic.Int64
	p := onebottest.New(t, func(action string, _ json.RawMessage) (any, int, string) {
		switch action {
		case "get_forward_msg":
			forwards.Add(1)
			return nil, 100, "download forward message payload is empty"
		case "send_group_msg":
			return map[string]any{"message_id": 9004}, 0, ""
		}
		return nil, 0, ""
	})
	cfg := config.Default()
	cfg.Channels.OneBot.WSURL = p.URL
	cfg.Channels.OneBot.SelfID = "3300000001"
	cfg.Channels.OneBot.Receive.History.Enabled = false
	startGateway(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := p.Connected(ctx); err != nil {
		t.Fatal(err)
	}
	var text strings.Builder
	text.WriteString("[CQ:at,qq=3300000001] 这些是什么")
	for i := range 2000 {
		fmt.Fprintf(&text, "[CQ:forward,id=res-%d]", i)
	}
	ev := qqGroupEvent(61)
	ev["message"] = text.String()
	if err := p.Push(ctx, ev); err != nil {
		t.Fatal(err)
	}
	s := waitSend(t, p, ctx)
	maxNodes := cfg.Channels.OneBot.Quote.MaxNodes
	if n := forwards.Load(); n > int64(2*maxNodes) {
		t.Errorf("%d get_forward_msg calls for one message, want at most %d", n, 2*maxNodes)
	}
	if got := sentText(s); strings.Count(got, "[引用消息获取失败]") != maxNodes {
		t.Errorf("the reply shows %d failed forwards, want %d:\n%.500s", strings.Count(got, "[引用消息获取失败]"), maxNodes, got)
	}
}

// TestQQHugeMessageIsCutEndToEnd: a 16 MiB message that mentions the bot
// reaches the model cut to messages.inbound.maxChars characters, with the
// marker, and is answered.
func TestQQHugeMessageIsCutEndToEnd(t *testing.T) {
	r := newQQRig(t, func(c *config.Config) { c.Channels.OneBot.Receive.History.Enabled = false })
	r.model.Script(llmtest.Reply{Text: []string{"太长了"}})
	huge := strings.Repeat("这是一条很长很长的消息。\n", (16<<20)/len("这是一条很长很长的消息。\n"))
	r.push(t, groupFrom(62, 10001, "张三", atBot(), text(" "+huge)))
	if s := waitSend(t, r.peer, r.ctx); sentText(s) != "太长了" {
		t.Errorf("reply %q", sentText(s))
	}
	reqs := r.model.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d model requests", len(reqs))
	}
	users := userMessages(reqs[0])
	last := users[len(users)-1]
	limit := config.Default().Messages.Inbound.MaxCharsOrDefault()
	if n := utf8.RuneCountInString(last); n > limit+1000 {
		t.Errorf("the model was sent %d characters of a %d-byte message; the cap is %d", n, len(huge), limit)
	}
	if !strings.Contains(last, "这是一条很长很长的消息。") || !strings.Contains(last, wire.TruncatedMarker) {
		t.Errorf("the model did not get the start of the message, marked as cut: %.200q … %.200q", last, last[max(0, len(last)-200):])
	}
}

// TestQQMaxCharsIsConfigurable: messages.inbound.maxChars sets the cut.
func TestQQMaxCharsIsConfigurable(t *testing.T) {
	r := newQQRig(t, func(c *config.Config) {
		c.Channels.OneBot.Receive.History.Enabled = false
		c.Messages.Inbound.MaxChars = 100
	})
	r.model.Script(llmtest.Reply{Text: []string{"好"}})
	r.push(t, groupFrom(63, 10001, "张三", atBot(), text(" "+strings.Repeat("长", 500))))
	waitSend(t, r.peer, r.ctx)
	users := userMessages(r.model.Requests()[0])
	last := users[len(users)-1]
	body := last[strings.Index(last, "] ")+2:]
	if n := strings.Count(body, "长"); n > 100 || n < 80 || !strings.HasSuffix(body, wire.TruncatedMarker) {
		t.Errorf("cut to %d characters: %q", n, body)
	}
}
