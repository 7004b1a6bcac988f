package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/pincerbot/pincer/internal/channel/onebot/onebottest"
	"github.com/pincerbot/pincer/internal/config"
	"github.com/pincerbot/pincer/internal/llm/llmsim"
)

// processCPU is the CPU time, user and system, the process has used.
func processCPU(b *testing.B) time.Duration {
	b.Helper()
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkQQTurnCPU measures the process CPU one answered @ costs at a
// steady pace: a OneBot peer over a loopback WebSocket sends a group @ of
// the bot every 10 ms, each in another of 2,000 groups, and a fake
// OpenAI-compatible model on loopback streams a short reply after 20 ms,
// as pincer bench's steady scenario does (realtime merging off, history
// on, no gap between sends). The figure includes the two fakes' own work;
// the store is a real SQLite file.
func BenchmarkQQTurnCPU(b *testing.B) {
	const groups = 2000
	p := onebottest.New(b, func(action string, _ json.RawMessage) (any, int, string) {
		switch action {
		case "get_login_info":
			return map[string]any{"user_id": botQQ, "nickname": "bot"}, 0, ""
		case "send_group_msg", "send_private_msg", "send_msg":
			return map[string]any{"message_id": 9001}, 0, ""
		}
		return nil, 0, ""
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	sim := llmsim.Serve(ln, llmsim.Options{Latency: 20 * time.Millisecond, Reply: func(llmsim.Request) string { return "收到，这就回答你" }})
	defer sim.Close()

	cfg := config.Default()
	cfg.Log.Level = "warn"
	cfg.Models.Providers["sim"] = config.Provider{API: "openai", BaseURL: sim.URL + "/v1", APIKey: "bench"}
	cfg.Agents.Defaults.Model.Primary = "sim/bench"
	cfg.Channels.OneBot.WSURL = p.URL
	cfg.Channels.OneBot.SelfID = strconv.Itoa(botQQ)
	cfg.Channels.OneBot.SendGapMs = 0
	cfg.Channels.OneBot.Receive.Realtime.Enabled = false
	cfg.Channels.OneBot.Receive.History.Enabled = true
	t := &testing.T{}
	g := startGateway(t, cfg)
	defer g.stop()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	if err := p.Connected(ctx); err != nil {
		b.Fatal(err)
	}
	if err := p.Push(ctx, map[string]any{"post_type": "meta_event", "meta_event_type": "lifecycle", "sub_type": "connect", "self_id": botQQ}); err != nil {
		b.Fatal(err)
	}

	sent := make(chan struct{}, 1<<16)
	go func() {
		for a := range p.Called() {
			if a == "send_group_msg" || a == "send_msg" {
				sent <- struct{}{}
			}
		}
	}()
	id := int64(0)
	event := func(n int) []byte {
		id++
		ev := map[string]any{
			"time": time.Now().Unix(), "self_id": botQQ, "post_type": "message", "message_type": "group",
			"message_id": id, "user_id": 10001 + n%50, "group_id": 700000000 + n%groups,
			"sender":  map[string]any{"user_id": 10001 + n%50, "nickname": "张三"},
			"message": []any{seg("at", map[string]any{"qq": botQQ}), seg("text", map[string]any{"text": fmt.Sprintf(" 问题 %d 怎么办", id)})},
		}
		raw, err := json.Marshal(ev)
		if err != nil {
			b.Fatal(err)
		}
		return raw
	}
	await := func(n int) {
		for range n {
			select {
			case <-sent:
			case <-ctx.Done():
				b.Fatal("a reply did not come")
			}
		}
	}
	// Warm up: connections, sessions and caches.
	for i := range 20 {
		if err := p.PushRaw(ctx, event(groups-1-i)); err != nil {
			b.Fatal(err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	await(20)

	frames := make([][]byte, b.N)
	for i := range frames {
		frames[i] = event(i)
	}
	b.ResetTimer()
	cpu0 := processCPU(b)
	start := time.Now()
	for i, f := range frames {
		if w := time.Until(start.Add(time.Duration(i) * 10 * time.Millisecond)); w > 0 {
			time.Sleep(w)
		}
		if err := p.PushRaw(ctx, f); err != nil {
			b.Fatal(err)
		}
	}
	await(b.N)
	cpu := processCPU(b) - cpu0
	b.StopTimer()
	b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "cpu-µs/turn")
	if t.Failed() {
		b.Fatal("the gateway failed")
	}
}
