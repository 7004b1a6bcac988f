package main

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pincerbot/pincer/internal/channel/onebot/onebottest"
	"github.com/pincerbot/pincer/internal/llm/llmtest"
	"github.com/pincerbot/pincer/internal/logthrottle"
)

// TestMalformedFrameStormLogsAFewLines: 100,000 malformed frames pushed
// through a real OneBot WebSocket into the binary give a few WARN lines a
// minute and, at the latest when pincer stops, one line that counts the
// others; the mention that follows them is still answered.
func TestMalformedFrameStormLogsAFewLines(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	const frames = 100_000
	model := llmtest.NewOpenAI(t)
	model.Script(llmtest.Reply{Text: []string{"好的"}})
	sent := make(chan struct{}, 1)
	peer := onebottest.New(t, func(action string, _ json.RawMessage) (any, int, string) {
		switch action {
		case "get_login_info":
			return map[string]any{"user_id": restartBotQQ, "nickname": "bot"}, 0, ""
		case "send_group_msg":
			sent <- struct{}{}
			return map[string]any{"message_id": 9001}, 0, ""
		}
		return nil, 0, ""
	})
	cfg := freePortConfig(`
		models: { providers: { openai: { baseUrl: '` + model.URL + `/v1', apiKey: 'k' } } },
		agents: { defaults: { model: { primary: 'openai/m' } } },
		channels: { onebot: { wsUrl: '` + peer.URL + `', selfId: 3300000001 } },`)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	p, _ := startServe(t, t.TempDir(), cfg)
	if err := peer.Connected(ctx); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	for i := range frames {
		if err := peer.PushRaw(ctx, fmt.Appendf(nil, `{"post_type":"message","message_id":%d,`, i)); err != nil {
			t.Fatal(err)
		}
	}
	// Frames are read in order: once the mention is answered, every
	// malformed frame before it has been logged (or counted).
	if err := peer.Push(ctx, mentionEvent(1, "还在吗")); err != nil {
		t.Fatal(err)
	}
	select {
	case <-sent:
	case <-ctx.Done():
		t.Fatalf("the mention after the storm was not answered\n%.2000s", p.stderr)
	}
	elapsed := time.Since(start)
	if err := p.stop(); err != nil {
		t.Errorf("exit: %v", err)
	}
	passed, reports, suppressed := 0, 0, 0
	re := regexp.MustCompile(` suppressed=(\d+)`)
	for l := range strings.SplitSeq(p.stderr.String(), "\n") {
		if !strings.Contains(l, "undecodable event") {
			continue
		}
		if m := re.FindStringSubmatch(l); m != nil && strings.Contains(l, logthrottle.RepeatedSuffix) {
			n, _ := strconv.Atoi(m[1])
			reports++
			suppressed += n
			continue
		}
		passed++
	}
	windows := int(elapsed/logthrottle.DefaultInterval) + 1
	if passed > windows*logthrottle.DefaultBurst || reports > windows {
		t.Errorf("%d lines and %d reports for %d malformed frames in %s", passed, reports, frames, elapsed.Round(time.Millisecond))
	}
	if passed+suppressed != frames {
		t.Errorf("%d lines let through and %d counted as suppressed; want %d in all", passed, suppressed, frames)
	}
	if n := strings.Count(p.stderr.String(), "\n"); n > 100 {
		t.Errorf("%d log lines in all", n)
	}
}
