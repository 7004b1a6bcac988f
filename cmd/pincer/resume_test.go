package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/pincerbot/pincer/internal/channel/onebot/onebottest"
	"github.com/pincerbot/pincer/internal/llm/llmtest"
)

// TestKilledMidStreamFinishesTheReplyOnce: with block streaming on,
// pincer is killed with SIGKILL while the model is writing a reply, two
// of its blocks already in the group. Restarted on the same data
// directory, it sends the rest of that reply, once, after them: the model
// is shown the part it had sent and asked to go on from there; nothing
// sent is sent again, and nothing of the first run's unsent text shows.
// The next question finds the reply in the transcript as the group got
// it, in one piece.
func TestKilledMidStreamFinishesTheReplyOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the binary twice")
	}
	model := llmtest.NewOpenAI(t)
	stall := make(chan struct{}) // never closed: pincer dies while the model writes
	model.Script(
		llmtest.Reply{Text: []string{"第一段：先说结论。\n\n", "第二段：再说原因。\n\n", "第三段：最后"}, Hold: stall, HoldAfter: 3},
		llmtest.Reply{Text: []string{"第三段：", "最后是建议。"}},
		llmtest.Reply{Text: []string{"不客气。"}},
	)
	var mu sync.Mutex
	var texts []string
	sent := make(chan string, 16)
	peer := onebottest.New(t, func(action string, params json.RawMessage) (any, int, string) {
		switch action {
		case "get_login_info":
			return map[string]any{"user_id": restartBotQQ, "nickname": "bot"}, 0, ""
		case "send_group_msg":
			text := sentText(params)
			mu.Lock()
			texts = append(texts, text)
			n := len(texts)
			mu.Unlock()
			sent <- text
			return map[string]any{"message_id": 9000 + n}, 0, ""
		}
		return nil, 0, ""
	})
	cfg := freePortConfig(`
		models: { providers: { openai: { baseUrl: '` + model.URL + `/v1', apiKey: 'k' } } },
		agents: { defaults: {
			model: { primary: 'openai/m' },
			blockStreaming: { enabled: true, minChars: 1, maxChars: 400, breakOn: 'paragraph', idleMs: 0 },
		} },
		channels: { onebot: { wsUrl: '` + peer.URL + `', selfId: 3300000001 } },`)
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	next := func(p *proc) string {
		t.Helper()
		select {
		case s := <-sent:
			return s
		case <-ctx.Done():
			t.Fatalf("nothing more was sent\n%s", p.stderr)
			return ""
		}
	}

	first, _ := startServe(t, dir, cfg)
	if err := peer.Connected(ctx); err != nil {
		t.Fatal(err)
	}
	if err := peer.Push(ctx, mentionEvent(1, "讲讲这件事")); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"第一段：先说结论。", "第二段：再说原因。"} {
		if got := next(first); got != want {
			t.Fatalf("block %q, want %q", got, want)
		}
	}
	// Both blocks recorded as sent; the model is still writing.
	waitMetric(t, ctx, first.url, "pincer_outbox_sent_total 2")
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
	if got := next(second); got != "第三段：最后是建议。" {
		t.Errorf("after the restart %q was sent, want the rest of the reply", got)
	}
	if err := peer.Push(ctx, mentionEvent(2, "谢谢")); err != nil {
		t.Fatal(err)
	}
	if got := next(second); got != "不客气。" {
		t.Errorf("the next question was answered %q", got)
	}
	waitMetric(t, ctx, second.url, "pincer_outbox_pending 0")
	mu.Lock()
	all := append([]string(nil), texts...)
	mu.Unlock()
	if diff := cmp.Diff([]string{"第一段：先说结论。", "第二段：再说原因。", "第三段：最后是建议。", "不客气。"}, all); diff != "" {
		t.Errorf("the group got (-want +got):\n%s", diff)
	}

	reqs := model.Requests()
	if len(reqs) != 3 {
		t.Fatalf("%d model requests, want the cut one, its rest and the next question", len(reqs))
	}
	resumed := chatMessages(reqs[1])
	if n := len(resumed); n < 3 || resumed[n-2] != "assistant: 第一段：先说结论。\n\n第二段：再说原因。" ||
		!strings.HasPrefix(resumed[n-1], "user: [Your reply above was cut off") || !strings.HasSuffix(resumed[n-3], "讲讲这件事") {
		t.Errorf("the resumed request:\n%s", strings.Join(resumed, "\n"))
	}
	later := chatMessages(reqs[2])
	var replies []string
	for _, m := range later {
		if strings.HasPrefix(m, "assistant: ") {
			replies = append(replies, m)
		}
		if strings.Contains(m, "cut off") {
			t.Errorf("the note asking for the rest stayed in the transcript: %q", m)
		}
	}
	if diff := cmp.Diff([]string{"assistant: 第一段：先说结论。\n\n第二段：再说原因。\n\n第三段：最后是建议。"}, replies); diff != "" {
		t.Errorf("the transcript's reply (-want +got):\n%s", diff)
	}
}

// sentSegment is a segment of a send_group_msg's message.
type sentSegment struct {
	Type string         `json:"type"`
	Data map[string]any `json:"data"`
}

// sentSegments are the segments of a send_group_msg's message.
func sentSegments(params json.RawMessage) []sentSegment {
	var p struct {
		Message []sentSegment `json:"message"`
	}
	_ = json.Unmarshal(params, &p)
	return p.Message
}

// sentQuote is the id of the message a send_group_msg quotes (its
// leading reply segment), "" for none.
func sentQuote(params json.RawMessage) string {
	if segs := sentSegments(params); len(segs) > 0 && segs[0].Type == "reply" {
		return fmt.Sprint(segs[0].Data["id"])
	}
	return ""
}

// sentText is the text of a send_group_msg: its text segments, trimmed.
func sentText(params json.RawMessage) string {
	var b strings.Builder
	for _, s := range sentSegments(params) {
		if text, ok := s.Data["text"].(string); ok && s.Type == "text" {
			b.WriteString(text)
		}
	}
	return strings.TrimSpace(b.String())
}

// chatMessages lists a chat request's messages as "role: text".
func chatMessages(r llmtest.Request) []string {
	msgs, _ := r.Body["messages"].([]any)
	var out []string
	for _, m := range msgs {
		mm, _ := m.(map[string]any)
		text, ok := mm["content"].(string)
		if !ok {
			text = mustJSON(mm["content"])
		}
		out = append(out, mm["role"].(string)+": "+text)
	}
	return out
}
