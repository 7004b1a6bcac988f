package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pincerbot/pincer/internal/channel/feishu/feishusim"
	"github.com/pincerbot/pincer/internal/config"
)

const (
	larkGroup = "oc_group000000000000000000000001"
	larkUserA = "ou_a0000000000000000000000000000a"
	larkUserB = "ou_b0000000000000000000000000000b"
)

// larkRig is the gateway with one Feishu app in webhook mode against a
// simulated open platform.
type larkRig struct {
	sim  *feishusim.Sim
	gw   *started
	hook string
	cfg  config.Config
}

// restart stops the gateway and starts another on its data directory.
func (r *larkRig) restart(t *testing.T) {
	t.Helper()
	r.gw.stop()
	if err := <-r.gw.result; err != nil {
		t.Fatalf("gateway: %v", err)
	}
	r.gw.result <- nil // for the first gateway's cleanup
	r.gw = startGatewayIn(t, r.cfg, r.gw.dataDir)
	r.hook = r.gw.url + "/feishu/events"
}

func newLarkRig(t *testing.T, edit func(*config.Config)) *larkRig {
	t.Helper()
	sim := feishusim.New(feishusim.Options{EncryptKey: "encrypt-key-for-tests"})
	srv := httptest.NewServer(sim.Handler())
	t.Cleanup(srv.Close)
	for id, name := range map[string]string{larkUserA: "张三", larkUserB: "李四"} {
		if err := sim.AddUser(id, name); err != nil {
			t.Fatal(err)
		}
	}
	if err := sim.AddChat(larkGroup, feishusim.ChatGroup); err != nil {
		t.Fatal(err)
	}
	cfg := config.Default()
	f := &cfg.Channels.Feishu
	f.AppID, f.AppSecret = feishusim.DefaultAppID, feishusim.DefaultAppSecret
	f.Domain, f.Mode = srv.URL, config.FeishuWebhookMode
	f.VerificationToken, f.EncryptKey = feishusim.DefaultVerificationToken, "encrypt-key-for-tests"
	f.Receive.Realtime.WindowMs = 50
	// Replies are read as the messages they are; the streaming cards'
	// tests turn cards on.
	f.Streaming = config.FeishuStreamingOff
	if edit != nil {
		edit(&cfg)
	}
	gw := startGateway(t, cfg)
	return &larkRig{sim: sim, gw: gw, hook: gw.url + "/feishu/events", cfg: cfg}
}

// askBot is 李四's message in the group that @s the bot with text.
func askBot(id, text string) feishusim.Message {
	return feishusim.Message{
		ID: id, ChatID: larkGroup, SenderID: larkUserB, Content: `{"text":"@_user_1 ` + text + `"}`,
		Mentions: []feishusim.Mention{{Key: "@_user_1", ID: feishusim.DefaultBotOpenID, Name: feishusim.DefaultBotName}},
	}
}

// post delivers an event and checks the webhook took it.
func (r *larkRig) post(t *testing.T, ctx context.Context, ev any, opts feishusim.EventOptions) *feishusim.Delivery {
	t.Helper()
	for {
		d, err := r.sim.PostEvent(ctx, r.hook, ev, opts)
		if err != nil {
			t.Fatal(err)
		}
		if d.Status == 503 {
			// Not running yet: the platform retries.
			select {
			case <-ctx.Done():
				t.Fatal("the webhook never took the event")
			case <-time.After(50 * time.Millisecond):
			}
			if m, ok := ev.(feishusim.Message); ok {
				ev = m.ID // stored already: deliver it again
			}
			continue
		}
		if d.Status != 200 {
			t.Fatalf("webhook answered %d: %s", d.Status, d.Response)
		}
		return d
	}
}

// waitSent waits until the platform has n messages from the bot.
func (r *larkRig) waitSent(t *testing.T, ctx context.Context, n int) []feishusim.SentMessage {
	t.Helper()
	for {
		if s := r.sim.Sent(); len(s) >= n {
			return s
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%d messages sent, want %d", len(r.sim.Sent()), n)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func larkText(t *testing.T, s feishusim.SentMessage) string {
	t.Helper()
	var text struct {
		Text string `json:"text"`
	}
	if s.MsgType == "text" {
		if err := json.Unmarshal([]byte(s.Content), &text); err != nil {
			t.Fatal(err)
		}
		return text.Text
	}
	return s.Content
}

// TestFeishuNestedMergeForwardEndToEnd: an encrypted, signed webhook
// event for a nested merged forward with an @ of the bot in a group
// reaches the agent as the spec's excerpt, and the reply is posted once,
// as a reply to the forward, with a Typing reaction added and removed.
// Delivering the same event again, and the same message under a new
// event id, posts nothing more.
func TestFeishuNestedMergeForwardEndToEnd(t *testing.T) {
	r := newLarkRig(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	base := time.Date(2026, 10, 8, 1, 12, 0, 0, time.UTC) // 09:12 in Shanghai
	fwd := feishusim.Message{
		ID: "om_fwd0000000000000000000000001", ChatID: larkGroup, MsgType: "merge_forward", SenderID: larkUserA,
		Mentions: []feishusim.Mention{{Key: "@_user_1", ID: feishusim.DefaultBotOpenID, Name: feishusim.DefaultBotName}},
		Children: []feishusim.Message{
			{ID: "om_c1", MsgType: "text", SenderID: larkUserA, Content: `{"text":"大家好,这个告警看一下"}`, CreateTime: base},
			{ID: "om_c2", MsgType: "image", SenderID: larkUserB, Content: `{"image_key":"img_1"}`, CreateTime: base.Add(time.Minute)},
			{ID: "om_c3", MsgType: "merge_forward", SenderID: larkUserA, CreateTime: base.Add(2 * time.Minute), Children: []feishusim.Message{
				{ID: "om_c3a", MsgType: "text", SenderID: larkUserB, Content: `{"text":"内层原文"}`, CreateTime: base.Add(-time.Hour)},
			}},
		},
	}
	d := r.post(t, ctx, fwd, feishusim.EventOptions{})
	sent := r.waitSent(t, ctx, 1)
	got := larkText(t, sent[0])
	want := "【合并转发,共 3 条】\n" +
		"[2026-10-08 09:12] 张三:大家好,这个告警看一下\n" +
		"[2026-10-08 09:13] 李四:[图片 msg=om_c2]\n" +
		"[2026-10-08 09:14] 张三:\n" +
		"  【合并转发,共 1 条】\n" +
		"  [2026-10-08 08:12] 李四:内层原文"
	if !strings.Contains(got, want) {
		t.Errorf("the agent (the preview agent echoes its input) did not get the excerpt:\n%s\nwant it to contain:\n%s", got, want)
	}
	if strings.Contains(got, "Merged and Forwarded Message") {
		t.Error("the platform's fixed text reached the agent")
	}
	if sent[0].ReplyTo != fwd.ID || sent[0].UUID == "" {
		t.Errorf("the reply must answer the forward with an idempotency key: %+v", sent[0])
	}
	// A redelivery of the event, and the message under a fresh event id.
	r.post(t, ctx, fwd.ID, feishusim.EventOptions{EventID: d.EventID})
	r.post(t, ctx, fwd.ID, feishusim.EventOptions{})
	// The typing reaction is removed after the reply.
	for {
		rs := r.sim.Reactions()
		if len(rs) == 1 && rs[0].Removed {
			if rs[0].MessageID != fwd.ID || rs[0].EmojiType != "Typing" {
				t.Errorf("reaction %+v", rs[0])
			}
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("typing reaction not added and removed once: %+v", rs)
		case <-time.After(20 * time.Millisecond):
		}
	}
	time.Sleep(300 * time.Millisecond) // nothing should come; a second reply would be a bug
	if n := len(r.sim.Sent()); n != 1 {
		t.Errorf("%d messages sent, want 1", n)
	}
}

// TestFeishuUntriggeredForwardReachesHistoryAsExcerpt: a merged forward
// nobody @s is expanded in the background; the next @ in the group gets
// it in its history as the excerpt, never as the platform's fixed text,
// and a forward the platform refuses to expand (230027) stays the fixed
// text without any error text reaching the agent.
func TestFeishuUntriggeredForwardReachesHistoryAsExcerpt(t *testing.T) {
	r := newLarkRig(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	at := time.Date(2026, 10, 8, 1, 30, 0, 0, time.UTC)
	r.post(t, ctx, feishusim.Message{
		ID: "om_quiet_fwd", ChatID: larkGroup, MsgType: "merge_forward", SenderID: larkUserA,
		Children: []feishusim.Message{{ID: "om_q1", SenderID: larkUserB, Content: `{"text":"会议改到三点"}`, CreateTime: at}},
	}, feishusim.EventOptions{})
	r.sim.FailNext("/open-apis/im/v1/messages/om_denied_fwd", 230027)
	r.post(t, ctx, feishusim.Message{
		ID: "om_denied_fwd", ChatID: larkGroup, MsgType: "merge_forward", SenderID: larkUserB,
		Children: []feishusim.Message{{ID: "om_d1", SenderID: larkUserB, Content: `{"text":"看不到我"}`, CreateTime: at}},
	}, feishusim.EventOptions{})
	// Expanded off the chat's order; an @ before that would see the
	// history up to the first forward (see the watermark test).
	db := filepath.Join(r.gw.dataDir, "pincer.db")
	waitLogged(t, ctx, db, "om_quiet_fwd", false)
	waitLogged(t, ctx, db, "om_denied_fwd", false)
	r.post(t, ctx, askBot("om_ask", "上面说了什么"), feishusim.EventOptions{})
	got := larkText(t, r.waitSent(t, ctx, 1)[0])
	for _, want := range []string{"张三", "【合并转发,共 1 条】", "[2026-10-08 09:30] 李四:会议改到三点", "Merged and Forwarded Message", "上面说了什么"} {
		if !strings.Contains(got, want) {
			t.Errorf("the agent's input lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "看不到我") || strings.Contains(got, "230027") {
		t.Errorf("a refused forward leaked into the agent's input:\n%s", got)
	}
}

// TestFeishuCardIsReadAsItsSenderWroteIt: an event carries a card's
// degraded projection ("please upgrade your client"); the next reply's
// history has the card as its sender wrote it.
func TestFeishuCardIsReadAsItsSenderWroteIt(t *testing.T) {
	r := newLarkRig(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r.post(t, ctx, feishusim.Message{
		ID: "om_card", ChatID: larkGroup, MsgType: "interactive", SenderID: larkUserA,
		Content:     `{"title":"","elements":[[{"tag":"text","text":"[图片]请升级至最新版本客户端，以查看内容"}]]}`,
		CardContent: `{"schema":"2.0","header":{"title":{"tag":"plain_text","content":"构建结果"}},"body":{"elements":[{"tag":"markdown","content":"**失败**：单元测试 3 个未通过"}]}}`,
	}, feishusim.EventOptions{})
	waitLogged(t, ctx, filepath.Join(r.gw.dataDir, "pincer.db"), "om_card", false)
	r.post(t, ctx, askBot("om_card_ask", "构建怎么了"), feishusim.EventOptions{})
	got := larkText(t, r.waitSent(t, ctx, 1)[0])
	for _, want := range []string{"构建结果", "单元测试 3 个未通过", "构建怎么了"} {
		if !strings.Contains(got, want) {
			t.Errorf("the agent's input lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "请升级") {
		t.Errorf("the degraded card reached the agent:\n%s", got)
	}
}

// TestFeishuRecalledMessageIsNotShown: a message its sender recalls
// before the next reply reaches the agent's history as recalled, not as
// what it said.
func TestFeishuRecalledMessageIsNotShown(t *testing.T) {
	r := newLarkRig(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r.post(t, ctx, feishusim.Message{ID: "om_oops", ChatID: larkGroup, SenderID: larkUserA, Content: `{"text":"我的密码是 hunter2"}`}, feishusim.EventOptions{})
	if err := r.sim.Recall("om_oops"); err != nil {
		t.Fatal(err)
	}
	r.post(t, ctx, feishusim.CustomEvent{Type: "im.message.recalled_v1", Event: map[string]any{
		"message_id": "om_oops", "chat_id": larkGroup, "recall_time": fmt.Sprint(time.Now().UnixMilli()), "recall_type": "message_owner",
	}}, feishusim.EventOptions{})
	r.post(t, ctx, askBot("om_after", "他刚才说了什么"), feishusim.EventOptions{})
	got := larkText(t, r.waitSent(t, ctx, 1)[0])
	if strings.Contains(got, "hunter2") {
		t.Errorf("a recalled message reached the agent:\n%s", got)
	}
	if !strings.Contains(got, "张三(ou_a0000000000000000000000000000a): (已撤回)") {
		t.Errorf("the history does not say the message was recalled:\n%s", got)
	}
}

// TestFeishuBotReplyChainEndToEnd: another app that keeps @-ing the bot
// in a group is answered maxBotReplyChain times in a row, then not, until
// a person speaks.
func TestFeishuBotReplyChainEndToEnd(t *testing.T) {
	r := newLarkRig(t, func(c *config.Config) {
		c.Channels.Feishu.MaxBotReplyChain = 2
		c.Channels.Feishu.Receive.Realtime.Enabled = false
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	other := func(id string) feishusim.Message {
		return feishusim.Message{
			ID: id, ChatID: larkGroup, SenderID: "cli_otherbot0000001", SenderType: "app", Content: `{"text":"@_user_1 该你了"}`,
			Mentions: []feishusim.Mention{{Key: "@_user_1", ID: feishusim.DefaultBotOpenID, Name: feishusim.DefaultBotName}},
		}
	}
	r.post(t, ctx, other("om_bot000000000000000000000001"), feishusim.EventOptions{})
	r.waitSent(t, ctx, 1)
	r.post(t, ctx, other("om_bot000000000000000000000002"), feishusim.EventOptions{})
	r.waitSent(t, ctx, 2)
	r.post(t, ctx, other("om_bot000000000000000000000003"), feishusim.EventOptions{})
	// The third is traced as held back by the chain, with no reply.
	traceOf(t, ctx, r.gw.url, "feishu:default:group:"+larkGroup, "om_bot000000000000000000000003", "maxBotReplyChain 2")
	if n := len(r.sim.Sent()); n != 2 {
		t.Fatalf("%d replies, want 2", n)
	}
	r.post(t, ctx, feishusim.Message{ID: "om_human00000000000000000000001", ChatID: larkGroup, SenderID: larkUserA, Content: `{"text":"你们俩别聊了"}`}, feishusim.EventOptions{})
	r.post(t, ctx, other("om_bot000000000000000000000004"), feishusim.EventOptions{})
	r.waitSent(t, ctx, 3)
}

// TestFeishuRecalledMentionIsNotAnswered: an @ its sender recalls while
// its realtime window is still open gets no reply.
func TestFeishuRecalledMentionIsNotAnswered(t *testing.T) {
	r := newLarkRig(t, func(c *config.Config) {
		c.Channels.Feishu.Receive.Realtime.WindowMs = 2500
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r.post(t, ctx, feishusim.Message{
		ID: "om_ask0000000000000000000000001", ChatID: larkGroup, SenderID: larkUserA, Content: `{"text":"@_user_1 我的密码是 hunter2 对吗"}`,
		Mentions: []feishusim.Mention{{Key: "@_user_1", ID: feishusim.DefaultBotOpenID, Name: feishusim.DefaultBotName}},
	}, feishusim.EventOptions{})
	if err := r.sim.Recall("om_ask0000000000000000000000001"); err != nil {
		t.Fatal(err)
	}
	r.post(t, ctx, feishusim.CustomEvent{Type: "im.message.recalled_v1", Event: map[string]any{
		"message_id": "om_ask0000000000000000000000001", "chat_id": larkGroup, "recall_time": fmt.Sprint(time.Now().UnixMilli()), "recall_type": "message_owner",
	}}, feishusim.EventOptions{})
	traceOf(t, ctx, r.gw.url, "feishu:default:group:"+larkGroup, "om_ask0000000000000000000000001", "recalled by its sender before the reply")
	if n := len(r.sim.Sent()); n != 0 {
		t.Errorf("%d messages sent for a recalled @", n)
	}
}
