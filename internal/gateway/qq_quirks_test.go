package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pincerbot/pincer/internal/channel/onebot"
	"github.com/pincerbot/pincer/internal/channel/onebot/onebottest"
	"github.com/pincerbot/pincer/internal/config"
	"github.com/pincerbot/pincer/internal/llm/llmtest"
	"github.com/pincerbot/pincer/internal/msg"
	"github.com/pincerbot/pincer/internal/store/sqlite"
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
	p, _, ctx := startQQPreview(t, func(action string, params json.RawMessage) (any, int, string) {
		switch action {
		case "get_msg":
			return map[string]any{"message_id": 50, "time": 1774420200, "sender": map[string]any{"user_id": 10002, "nickname": "李四"},
				"message": []any{map[string]any{"type": "text", "data": map[string]any{"text": "明早八点出发"}}}}, 0, ""
		case "send_group_msg":
			return map[string]any{"message_id": 9101}, 0, ""
		}
		return nil, 0, ""
	})
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

// runGatewayAt runs a gateway on the store at path until stop is called
// (or the test ends); stop returns what Run returned.
func runGatewayAt(t *testing.T, cfg config.Config, path string) (stop func() error) {
	t.Helper()
	cfg.Store.Path = path
	cfg.Agents.Defaults.Workspace = t.TempDir()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	result := make(chan error, 1)
	ready := make(chan struct{})
	go func() { result <- Run(ctx, cfg, Options{Listener: ln, Ready: readyWriter(ready)}) }()
	select {
	case <-ready:
	case err := <-result:
		cancel()
		t.Fatalf("gateway stopped before ready: %v", err)
	}
	stop = sync.OnceValue(func() error {
		cancel()
		return <-result
	})
	t.Cleanup(func() {
		if err := stop(); err != nil {
			t.Errorf("gateway: %v", err)
		}
	})
	return stop
}

// waitRecorded waits until the store at path records id as sent by the
// default QQ account.
func waitRecorded(t *testing.T, ctx context.Context, path string, id msg.MessageID) {
	t.Helper()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		// Opened anew each time: a store reads the sent ids once, at
		// its opening, and the gateway's write may come after.
		db, err := sqlite.Open(ctx, path, sqlite.Options{})
		if err != nil {
			t.Fatal(err)
		}
		ok, err := db.WasSent(ctx, onebot.ChannelID, msg.DefaultAccount, id)
		if cerr := db.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			t.Fatal(err)
		}
		if ok {
			return
		}
		select {
		case <-tick.C:
		case <-ctx.Done():
			t.Fatalf("%s was never recorded as sent", id)
		}
	}
}

// qqEventFrom is qqGroupEvent sent by another member.
func qqEventFrom(user int64, name string, id int64, segs ...any) map[string]any {
	ev := qqGroupEvent(id, segs...)
	ev["user_id"] = user
	ev["sender"] = map[string]any{"user_id": user, "nickname": name}
	return ev
}

// TestQQReplyToTheBotAfterARestartEndToEnd: the bot's sent message ids are
// kept in the store, so a reply (without a mention) to a message the bot
// sent before a restart still triggers, even where get_msg no longer
// knows the message (NapCat forgets its short ids).
func TestQQReplyToTheBotAfterARestartEndToEnd(t *testing.T) {
	handler := func(id int64) onebottest.Handler {
		return func(action string, params json.RawMessage) (any, int, string) {
			switch action {
			case "get_login_info":
				return map[string]any{"user_id": botQQ, "nickname": "bot"}, 0, ""
			case "get_msg":
				return nil, 100, "message not found"
			case "send_group_msg":
				return map[string]any{"message_id": id}, 0, ""
			}
			return nil, 0, ""
		}
	}
	path := filepath.Join(t.TempDir(), "pincer.db")
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()

	before := onebottest.New(t, handler(9201))
	cfg := config.Default()
	cfg.Channels.OneBot.WSURL = before.URL
	cfg.Channels.OneBot.SelfID = "3300000001"
	cfg.Channels.OneBot.Receive.History.Enabled = false
	stop := runGatewayAt(t, cfg, path)
	if err := before.Connected(ctx); err != nil {
		t.Fatal(err)
	}
	if err := before.Push(ctx, qqGroupEvent(70, seg("at", map[string]any{"qq": botQQ}), seg("text", map[string]any{"text": " 明天提醒我带伞"}))); err != nil {
		t.Fatal(err)
	}
	waitSend(t, before, ctx) // the bot's answer is message 9201
	// Stopping cuts a send whose answer is still on the way (the QQ
	// connection closes at once), so wait until the id is recorded.
	waitRecorded(t, ctx, path, "9201")
	if err := stop(); err != nil {
		t.Fatal(err)
	}

	after := onebottest.New(t, handler(9202))
	cfg.Channels.OneBot.WSURL = after.URL
	runGatewayAt(t, cfg, path)
	if err := after.Connected(ctx); err != nil {
		t.Fatal(err)
	}
	// Another member, so the reply opens a window of its own whatever the
	// restart restored of the first one.
	if err := after.Push(ctx, qqEventFrom(10003, "王五", 71, seg("reply", map[string]any{"id": "9201"}), seg("text", map[string]any{"text": "好的谢谢"}))); err != nil {
		t.Fatal(err)
	}
	s := waitSend(t, after, ctx)
	if len(s.params.Message) == 0 || s.params.Message[0].Type != "reply" || s.params.Message[0].Data["id"] != "71" {
		t.Errorf("the answer quotes the reply: %+v", s.params.Message)
	}
}

// TestQQReplyToTheBotFoundByGetMsgEndToEnd: a reply to an id neither
// memory nor the store knows triggers when get_msg says the bot sent it,
// and does not when get_msg names someone else.
func TestQQReplyToTheBotFoundByGetMsgEndToEnd(t *testing.T) {
	p := onebottest.New(t, func(action string, params json.RawMessage) (any, int, string) {
		switch action {
		case "get_msg":
			var q struct {
				MessageID int64 `json:"message_id"`
			}
			_ = json.Unmarshal(params, &q)
			switch q.MessageID {
			case 777:
				return map[string]any{"message_id": 777, "time": 1774420200, "user_id": botQQ,
					"sender": map[string]any{"user_id": botQQ, "nickname": "bot"}, "message": "我是机器人说的"}, 0, ""
			case 778:
				return map[string]any{"message_id": 778, "time": 1774420200, "user_id": 10002,
					"sender": map[string]any{"user_id": 10002, "nickname": "李四"}, "message": "我是李四说的"}, 0, ""
			}
			return nil, 100, "message not found"
		case "send_group_msg":
			return map[string]any{"message_id": 9301}, 0, ""
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
	// A reply to 李四's message first; the bot's get_msg tells it apart.
	if err := p.Push(ctx, qqEventFrom(10003, "王五", 80, seg("reply", map[string]any{"id": "778"}), seg("text", map[string]any{"text": "同意李四"}))); err != nil {
		t.Fatal(err)
	}
	for asked := false; !asked; {
		select {
		case a := <-p.Called():
			asked = a == "get_msg"
		case <-ctx.Done():
			t.Fatal("the owner of 778 was never asked")
		}
	}
	if err := p.Push(ctx, qqGroupEvent(81, seg("reply", map[string]any{"id": "777"}), seg("text", map[string]any{"text": "再说一遍"}))); err != nil {
		t.Fatal(err)
	}
	s := waitSend(t, p, ctx)
	if len(s.params.Message) == 0 || s.params.Message[0].Type != "reply" || s.params.Message[0].Data["id"] != "81" {
		t.Errorf("the first answer quotes the reply to the bot: %+v", s.params.Message)
	}
	if got := sentText(s); !strings.Contains(got, "[引用 bot(3300000001) 于 ") || !strings.Contains(got, "我是机器人说的") {
		t.Errorf("the quote shows the bot's message:\n%s", got)
	}
	for _, c := range p.Calls() {
		if strings.HasPrefix(c.Action, "send_") && strings.Contains(string(c.Params), `"id":"80"`) {
			t.Errorf("a reply to someone else's message was answered: %s", c.Params)
		}
	}
}

// TestQQSummaryPagesGoCQHTTPHistoryEndToEnd: go-cqhttp returns 20
// messages per history call whatever count says (anchored by
// message_seq), so /summary 50 pages back until the summary turn sees 50
// messages.
func TestQQSummaryPagesGoCQHTTPHistoryEndToEnd(t *testing.T) {
	const last = 121 // the command's seq
	now := time.Now().Unix()
	event := func(seq int64) map[string]any {
		ev := map[string]any{"post_type": "message", "message_type": "group", "group_id": 700000001,
			"message_id": 5000 + seq, "message_seq": seq, "time": now - (last-seq)*10,
			"user_id": 10002, "sender": map[string]any{"user_id": 10002, "nickname": "李四"},
			"message": fmt.Sprintf("第%03d条", seq)}
		if seq == last {
			ev["user_id"], ev["sender"], ev["message"] = 10001, map[string]any{"user_id": 10001, "nickname": "张三"}, "/summary 50"
		}
		return ev
	}
	p := onebottest.New(t, func(action string, params json.RawMessage) (any, int, string) {
		switch action {
		case "get_group_msg_history":
			var q struct {
				MessageSeq int64 `json:"message_seq"`
			}
			_ = json.Unmarshal(params, &q)
			anchor := q.MessageSeq
			if anchor == 0 {
				anchor = last
			}
			var msgs []any
			for seq := max(anchor-19, 1); seq <= min(anchor, last); seq++ {
				msgs = append(msgs, event(seq))
			}
			return map[string]any{"messages": msgs}, 0, ""
		case "send_group_msg":
			return map[string]any{"message_id": 9401}, 0, ""
		}
		return nil, 0, ""
	})
	model := llmtest.NewOpenAI(t)
	model.Script(llmtest.Reply{Text: []string{"总结好了"}})
	cfg := withOpenAI(model.URL)
	cfg.Channels.OneBot.WSURL = p.URL
	cfg.Channels.OneBot.SelfID = "3300000001"
	startGateway(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if err := p.Connected(ctx); err != nil {
		t.Fatal(err)
	}
	command := qqGroupEvent(5000+last, seg("text", map[string]any{"text": "/summary 50"}))
	command["message_seq"] = last
	if err := p.Push(ctx, command); err != nil {
		t.Fatal(err)
	}
	if got := sentText(waitSend(t, p, ctx)); got != "总结好了" {
		t.Errorf("sent %q", got)
	}
	reqs := model.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d model requests", len(reqs))
	}
	body := mustString(reqs[0].Body["messages"])
	for seq := 71; seq <= 120; seq++ {
		if want := fmt.Sprintf("第%03d条", seq); !strings.Contains(body, want) {
			t.Errorf("%s missing from the summary turn", want)
		}
	}
	if n := len(regexp.MustCompile(`第\d{3}条`).FindAllString(body, -1)); n != 50 {
		t.Errorf("the summary turn sees %d messages, want 50", n)
	}
	if strings.Contains(body, "第070条") {
		t.Error("only the newest 50 are summarised")
	}
	var pages []string
	for _, c := range p.Calls() {
		if c.Action == "get_group_msg_history" {
			pages = append(pages, string(c.Params))
		}
	}
	if len(pages) != 3 || strings.Contains(pages[0], "message_seq") || !strings.Contains(pages[1], `"message_seq":102`) || !strings.Contains(pages[2], `"message_seq":83`) {
		t.Errorf("history calls:\n%s", strings.Join(pages, "\n"))
	}
}
