package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/pincerbot/pincer/internal/channel/onebot/onebottest"
	"github.com/pincerbot/pincer/internal/llm/llmtest"
)

// BenchmarkHugeMessageRSS reports the peak resident memory of a serve
// (VmHWM, MiB-peak) that takes in one 16 MiB QQ message mentioning the bot
// and answers it, and how much that message added to the peak of the
// same serve before it (MiB-added).
func BenchmarkHugeMessageRSS(b *testing.B) {
	binary(b)
	huge := strings.Repeat("这是一条很长很长的消息。\n", (16<<20)/len("这是一条很长很长的消息。\n"))
	var peak, added float64
	for b.Loop() {
		model := llmtest.NewOpenAI(b)
		model.Script(llmtest.Reply{Text: []string{"好的"}})
		sent := make(chan struct{}, 1)
		peer := onebottest.New(b, func(action string, _ json.RawMessage) (any, int, string) {
			switch action {
			case "get_login_info":
				return map[string]any{"user_id": restartBotQQ, "nickname": "bot"}, 0, ""
			case "send_group_msg":
				sent <- struct{}{}
				return map[string]any{"message_id": 9001}, 0, ""
			}
			return nil, 0, ""
		})
		p, _ := startServe(b, b.TempDir(), freePortConfig(`
			models: { providers: { openai: { baseUrl: '`+model.URL+`/v1', apiKey: 'k' } } },
			agents: { defaults: { model: { primary: 'openai/m' } } },
			channels: { onebot: { wsUrl: '`+peer.URL+`', selfId: 3300000001, receive: { history: { enabled: false } } } },`))
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		if err := peer.Connected(ctx); err != nil {
			b.Fatal(err)
		}
		before, err := statusKB(p.cmd.Process.Pid, "VmHWM")
		if err != nil {
			b.Fatal(err)
		}
		if err := peer.Push(ctx, mentionEvent(1, huge)); err != nil {
			b.Fatal(err)
		}
		select {
		case <-sent:
		case <-ctx.Done():
			b.Fatalf("no reply\n%.2000s", p.stderr)
		}
		after, err := statusKB(p.cmd.Process.Pid, "VmHWM")
		if err != nil {
			b.Fatal(err)
		}
		peak += float64(after) / 1024
		added += float64(after-before) / 1024
		cancel()
		if err := p.stop(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(peak/float64(b.N), "MiB-peak")
	b.ReportMetric(added/float64(b.N), "MiB-added")
}
