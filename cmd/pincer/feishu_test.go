package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/pincerbot/pincer/internal/channel/feishu/feishusim"
	"github.com/pincerbot/pincer/internal/llm/llmtest"
)

// TestServeFeishuWebhookMergeForward runs "pincer serve" with a Feishu app
// in webhook mode against a simulated open platform and a model server:
// an encrypted, signed event for a nested merged forward in a group, with
// an @ of the bot, reaches the model as the spec's excerpt, and the
// model's answer is posted once, as a reply to the forward, even when the
// platform delivers the event again.
func TestServeFeishuWebhookMergeForward(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	const (
		key   = "an-encrypt-key"
		group = "oc_serve00000000000000000000001"
		userA = "ou_serve0000000000000000000000a"
		userB = "ou_serve0000000000000000000000b"
	)
	sim, platform := feishuPlatform(t, key, group, map[string]string{userA: "张三", userB: "李四"})
	model := llmtest.NewOpenAI(t)
	model.Script(llmtest.Reply{Text: []string{"看过了，", "告警已恢复。"}})
	cfg := feishuWebhookConfig(model.URL, platform, key, "streaming: 'off',", "")
	p, _ := startServe(t, t.TempDir(), cfg)
	defer p.stop()
	defer func() {
		if t.Failed() {
			t.Logf("pincer's log:\n%s", p.stderr)
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	base := time.Date(2026, 10, 8, 1, 20, 0, 0, time.UTC) // 09:20 in Shanghai
	fwd := feishusim.Message{
		ID: "om_serve_fwd", ChatID: group, MsgType: "merge_forward", SenderID: userA,
		Mentions: []feishusim.Mention{{Key: "@_user_1", ID: feishusim.DefaultBotOpenID, Name: feishusim.DefaultBotName}},
		Children: []feishusim.Message{
			{ID: "om_serve_c1", SenderID: userA, Content: `{"text":"外层说明"}`, CreateTime: base},
			{ID: "om_serve_c2", MsgType: "merge_forward", SenderID: userA, CreateTime: base.Add(time.Minute), Children: []feishusim.Message{
				{ID: "om_serve_c2a", SenderID: userB, Content: `{"text":"内层原文"}`, CreateTime: time.Date(2026, 10, 7, 10, 0, 0, 0, time.UTC)},
			}},
		},
	}
	hook := p.url + "/feishu/events"
	first := postFeishu(t, ctx, sim, p.url, fwd)
	var sent []feishusim.SentMessage
	for len(sent) == 0 {
		if ctx.Err() != nil {
			t.Fatal("no reply")
		}
		time.Sleep(50 * time.Millisecond)
		sent = sim.Sent()
	}
	reqs := model.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d model requests", len(reqs))
	}
	body, _ := json.Marshal(reqs[0].Body)
	var req struct {
		Messages []struct {
			Role    string `json:"role"`
			Content any    `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		t.Fatal(err)
	}
	user := fmt.Sprint(req.Messages[len(req.Messages)-1].Content)
	excerpt := "【合并转发,共 2 条】\n" +
		"[2026-10-08 09:20] 张三:外层说明\n" +
		"[2026-10-08 09:21] 张三:\n" +
		"  【合并转发,共 1 条】\n" +
		"  [2026-10-07 18:00] 李四:内层原文"
	if !strings.Contains(user, excerpt) {
		t.Errorf("the model's user message lacks the excerpt:\n%s", user)
	}
	if strings.Contains(user, "Merged and Forwarded Message") {
		t.Error("the platform's fixed text reached the model")
	}
	var text struct {
		Text string `json:"text"`
	}
	if err := json.Unmarshal([]byte(sent[0].Content), &text); err != nil || text.Text != "看过了，告警已恢复。" {
		t.Errorf("sent %+v (%v)", sent[0], err)
	}
	if sent[0].ReplyTo != fwd.ID {
		t.Errorf("the reply answers %q, want the forward", sent[0].ReplyTo)
	}
	// The platform delivers the event again (a missed ack), and pincer is
	// still answering nothing twice.
	if d, err := sim.PostEvent(ctx, hook, fwd.ID, feishusim.EventOptions{EventID: first.EventID}); err != nil || d.Status != 200 {
		t.Fatalf("redelivery: %v %+v", err, d)
	}
	time.Sleep(500 * time.Millisecond)
	if n := len(sim.Sent()); n != 1 {
		t.Errorf("%d replies, want 1", n)
	}
	if n := len(model.Requests()); n != 1 {
		t.Errorf("%d model requests, want 1", n)
	}
	if err := p.stop(); err != nil {
		t.Errorf("exit after SIGTERM: %v", err)
	}
}

// TestFeishuSimulator is the try-it-without-Feishu path: pincer serve in
// webhook mode pointed at "pincer dev feishu-sim"; a typed @ line is
// answered (by the preview agent, which echoes), and /forward sends a
// nested merged forward that reaches the agent as its excerpt.
func TestFeishuSimulator(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	listen := ln.Addr().String()
	ln.Close()
	stdin, typing := io.Pipe()
	out := &logBuf{}
	code := make(chan int, 1)
	go func() {
		code <- feishuSim([]string{"--listen", "127.0.0.1:0", "--webhook", "http://" + listen + "/feishu/events"}, stdin, out, io.Discard)
	}()
	simURL := waitFor(t, out, regexp.MustCompile(`simulator on (http://\S+);`))[1]
	if !strings.Contains(out.String(), "verificationToken: '"+feishusim.DefaultVerificationToken+"'") {
		t.Errorf("the simulator does not say how to configure pincer:\n%s", out)
	}
	p, _ := startServe(t, t.TempDir(), fmt.Sprintf(`{ gateway: { listen: '%s' }, channels: { feishu: {
	  appId: '%s', appSecret: '%s', domain: '%s', mode: 'webhook', verificationToken: '%s',
	  receive: { realtime: { windowMs: 50 } } } } }`, listen, feishusim.DefaultAppID, feishusim.DefaultAppSecret, simURL, feishusim.DefaultVerificationToken))
	defer p.stop()
	// The first lines may find pincer still learning who its bot is
	// (503, which the simulator prints); say it again until it is taken.
	for i := 0; ; i++ {
		if _, err := io.WriteString(typing, "@你好\n"); err != nil {
			t.Fatal(err)
		}
		time.Sleep(300 * time.Millisecond)
		if strings.Contains(out.String(), "bot: ") || i == 20 {
			break
		}
	}
	waitFor(t, out, regexp.MustCompile(`(?s)\[group\] bot: .*你好`))
	if _, err := io.WriteString(typing, "今天的告警\n/forward\n"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, out, regexp.MustCompile(`【合并转发,共 \d+ 条】`))
	// The forwarded @ line names whom it mentioned, as the chat showed it.
	waitFor(t, out, regexp.MustCompile(`测试用户:@`+regexp.QuoteMeta(feishusim.DefaultBotName)+` 你好`))
	if strings.Contains(out.String(), "@_user_") {
		t.Errorf("a mention key reached the agent:\n%s", out)
	}
	waitFor(t, out, regexp.MustCompile(`\(bot removed Typing\)`))
	if strings.Contains(out.String(), "Merged and Forwarded Message") {
		t.Errorf("the fixed text reached the agent:\n%s", out)
	}
	typing.Close()
	if c := <-code; c != 0 {
		t.Errorf("exit %d", c)
	}
}
