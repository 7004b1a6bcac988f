package main

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/pincerbot/pincer/internal/channel/onebot/onebottest"
	"github.com/pincerbot/pincer/internal/llm/llmtest"
)

// TestKilledWhileAskingWhoseMessageAReplyQuotes: a group reply quotes a
// message pincer never saw (one the bot sent before its log began), so
// get_msg goes out to learn whose it is; pincer is killed with SIGKILL
// before the implementation answers. The next start asks again, learns
// that the quoted message is the bot's, and answers the reply, once.
func TestKilledWhileAskingWhoseMessageAReplyQuotes(t *testing.T) {
	model := llmtest.NewOpenAI(t)
	model.Script(llmtest.Reply{Text: []string{"好的，八点见"}})
	const quoted, reply = 555, 7001
	answers := make(chan string, 16) // the quoted id of every send
	peer := onebottest.New(t, func(action string, params json.RawMessage) (any, int, string) {
		switch action {
		case "get_login_info":
			return map[string]any{"user_id": restartBotQQ, "nickname": "bot"}, 0, ""
		case "get_msg":
			return map[string]any{
				"message_id": quoted, "message_type": "group", "time": time.Now().Add(-24 * time.Hour).Unix(),
				"sender":  map[string]any{"user_id": restartBotQQ, "nickname": "bot"},
				"message": []any{map[string]any{"type": "text", "data": map[string]any{"text": "今晚八点在老地方集合"}}},
			}, 0, ""
		case "send_group_msg":
			answers <- sentQuote(params)
			return map[string]any{"message_id": 90001}, 0, ""
		}
		return nil, 0, ""
	})
	peer.Silence("get_msg")
	dir := t.TempDir()
	db := filepath.Join(dir, "pincer.db")
	cfg := qqConfig(model.URL, peer.URL, fmt.Sprintf("store: { path: '%s' },", db))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	first, _ := startServe(t, dir, cfg)
	if err := peer.Connected(ctx); err != nil {
		t.Fatal(err)
	}
	if err := peer.Push(ctx, map[string]any{
		"time": time.Now().Unix(), "self_id": restartBotQQ, "post_type": "message", "message_type": "group",
		"message_id": reply, "user_id": 10002, "group_id": 700000001,
		"sender": map[string]any{"user_id": 10002, "nickname": "李四"},
		"message": []any{
			map[string]any{"type": "reply", "data": map[string]any{"id": fmt.Sprint(quoted)}},
			map[string]any{"type": "text", "data": map[string]any{"text": "那我八点到"}},
		},
	}); err != nil {
		t.Fatal(err)
	}
	// Logged (committed) with its question, which the implementation
	// leaves unanswered.
	for {
		var n int
		if err := readStoreFile(t, db, `SELECT count(*) FROM buffered WHERE kind = 'ask'`, nil, &n); err == nil && n == 1 {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("the reply's question was never stored\n%s", first.stderr)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := first.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = first.cmd.Wait()
	select {
	case q := <-answers:
		t.Fatalf("answered (quoting %q) before the implementation said whose the quoted message is", q)
	default:
	}

	peer.Speak("get_msg")
	second, _ := startServe(t, dir, cfg)
	defer func() {
		if err := second.stop(); err != nil {
			t.Errorf("exit: %v\n%s", err, second.stderr)
		}
	}()
	select {
	case q := <-answers:
		if q != fmt.Sprint(reply) {
			t.Fatalf("the answer quotes %q; want the reply %d", q, reply)
		}
	case <-ctx.Done():
		t.Fatalf("the reply was never answered after the restart\n%s", second.stderr)
	}
	// Nothing more: the question is gone once its answer was handled, and
	// the outbox has nothing left to send.
	waitMetric(t, ctx, second.url, "pincer_outbox_pending 0")
	for {
		var n int
		if err := readStoreFile(t, db, `SELECT count(*) FROM buffered`, nil, &n); err == nil && n == 0 {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("stored entries left after the reply was answered\n%s", second.stderr)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if len(answers) != 0 {
		t.Fatalf("%d more sends; want the one answer", len(answers))
	}
}
