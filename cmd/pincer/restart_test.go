package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pincerbot/pincer/internal/channel/onebot/onebottest"
	"github.com/pincerbot/pincer/internal/llm/llmtest"
)

const restartBotQQ = 3300000001

// mentionEvent is a group message of one member that @s the bot.
func mentionEvent(id int64, text string) map[string]any {
	return map[string]any{
		"time": time.Now().Unix(), "self_id": restartBotQQ, "post_type": "message", "message_type": "group",
		"message_id": id, "user_id": 10001, "group_id": 700000001,
		"sender": map[string]any{"user_id": 10001, "nickname": "张三"},
		"message": []any{
			map[string]any{"type": "at", "data": map[string]any{"qq": fmt.Sprint(restartBotQQ)}},
			map[string]any{"type": "text", "data": map[string]any{"text": " " + text}},
		},
	}
}

// TestKilledAndRestartedAnswersNoneTwice is the README's promise that a
// restart, even after kill -9, answers nothing twice: a QQ mention is
// answered, pincer is killed with SIGKILL, and once it is back on the same
// data directory — with the dedup window already over, so only the store
// can tell what was answered — the next mention is answered and the first
// never again.
func TestKilledAndRestartedAnswersNoneTwice(t *testing.T) {
	model := llmtest.NewOpenAI(t)
	model.Script(llmtest.Reply{Text: []string{"好的"}})
	var sends atomic.Int64
	sent := make(chan string, 16)
	peer := onebottest.New(t, func(action string, params json.RawMessage) (any, int, string) {
		switch action {
		case "get_login_info":
			return map[string]any{"user_id": restartBotQQ, "nickname": "bot"}, 0, ""
		case "send_group_msg":
			n := sends.Add(1) // counted before the test can see the send
			sent <- string(params)
			return map[string]any{"message_id": 9000 + n}, 0, ""
		}
		return nil, 0, ""
	})
	cfg := freePortConfig(`
		models: { providers: { openai: { baseUrl: '` + model.URL + `/v1', apiKey: 'k' } } },
		agents: { defaults: { model: { primary: 'openai/m' } } },
		messages: { inbound: { dedupTtlMs: 1 } },
		channels: { onebot: { wsUrl: '` + peer.URL + `', selfId: 3300000001 } },`)
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	waitSent := func(wantQuote string) {
		t.Helper()
		select {
		case params := <-sent:
			if !strings.Contains(params, `"type":"reply","data":{"id":"`+wantQuote+`"}`) {
				t.Errorf("the reply quotes the wrong message: %s", params)
			}
		case <-ctx.Done():
			t.Fatal("no reply")
		}
	}

	first, _ := startServe(t, dir, cfg)
	if err := peer.Connected(ctx); err != nil {
		t.Fatal(err)
	}
	if err := peer.Push(ctx, mentionEvent(1, "第一个问题")); err != nil {
		t.Fatal(err)
	}
	waitSent("1")
	// kill -9 at any moment but the few milliseconds between QQ taking a
	// reply and pincer recording that it did; the README names that window.
	waitMetric(t, ctx, first.url, "pincer_outbox_sent_total 1")
	if err := first.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = first.cmd.Wait()

	second, _ := startServe(t, dir, cfg)
	defer func() {
		if err := second.stop(); err != nil {
			t.Errorf("exit: %v\n%s", err, second.stderr)
		}
	}()
	if err := peer.Connected(ctx); err != nil {
		t.Fatal(err)
	}
	if err := peer.Push(ctx, mentionEvent(2, "第二个问题")); err != nil {
		t.Fatal(err)
	}
	waitSent("2")
	// A replayed batch would have been flushed (its window reopened at
	// start-up) before the new one, which opened later.
	reqs := model.Requests()
	if len(reqs) != 2 {
		for i, r := range reqs {
			t.Logf("request %d: %s", i+1, mustJSON(r.Body["messages"]))
		}
		t.Fatalf("%d model requests; the answered message was asked again after the restart\n%s", len(reqs), second.stderr)
	}
	if n := sends.Load(); n != 2 {
		t.Errorf("%d replies sent; want one per question", n)
	}
}

// waitMetric polls the gateway's /metrics until it shows line.
func waitMetric(t *testing.T, ctx context.Context, base, line string) {
	t.Helper()
	for {
		res, err := http.Get(base + "/metrics")
		if err == nil {
			body, _ := io.ReadAll(res.Body)
			res.Body.Close()
			if strings.Contains(string(body), line) {
				return
			}
		}
		select {
		case <-ctx.Done():
			t.Fatalf("metrics never showed %q", line)
		case <-time.After(10 * time.Millisecond):
		}
	}
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
