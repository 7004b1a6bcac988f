package anthropic

import (
	"encoding/base64"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/pincerbot/pincer/internal/llm"
	"github.com/pincerbot/pincer/internal/llm/llmtest"
)

func TestProvider(t *testing.T) {
	llmtest.RunProviderSuite(t, llmtest.NewAnthropic, func(s *llmtest.Server) llm.Provider {
		return New("anthropic", llm.Endpoint{BaseURL: s.URL, APIKey: "sk-ant-test"})
	})
}

func TestSendsKeyAndUsage(t *testing.T) {
	s := llmtest.NewAnthropic(t)
	p := New("anthropic", llm.Endpoint{BaseURL: s.URL, APIKey: "sk-ant-test"})
	_, _, done, err := llmtest.Collect(p.Stream(t.Context(), llm.Request{Model: "claude", Messages: []llm.Message{{Role: llm.RoleUser, Text: "x"}}}))
	if err != nil {
		t.Fatal(err)
	}
	if done.Usage.InputTokens != 12 || done.Usage.OutputTokens != 7 || done.StopReason != "end_turn" {
		t.Errorf("done = %+v", done)
	}
	r := s.Requests()[0]
	if r.Header.Get("X-Api-Key") != "sk-ant-test" && r.Header.Get("Authorization") != "Bearer sk-ant-test" {
		t.Errorf("api key header missing: %v", r.Header)
	}
	if r.Body["max_tokens"] != float64(defaultMaxTokens) {
		t.Errorf("max_tokens = %v, want the default", r.Body["max_tokens"])
	}
}

func TestErrorType(t *testing.T) {
	for raw, want := range map[string]string{
		`{"type":"error","error":{"type":"overloaded_error"}}`: "overloaded_error",
		`{"type":"rate_limit_error"}`:                          "rate_limit_error",
		`not json`:                                             "",
	} {
		if got := errorType(raw); got != want {
			t.Errorf("errorType(%s) = %q, want %q", raw, got, want)
		}
	}
}

func TestThinkingLevelBecomesBudget(t *testing.T) {
	s := llmtest.NewAnthropic(t)
	p := New("anthropic", llm.Endpoint{BaseURL: s.URL})
	if _, _, _, err := llmtest.Collect(p.Stream(t.Context(), llm.Request{Model: "c", MaxTokens: 1000, Thinking: "medium", Messages: []llm.Message{{Role: llm.RoleUser, Text: "x"}}})); err != nil {
		t.Fatal(err)
	}
	body := s.Requests()[0].Body
	thinking, _ := body["thinking"].(map[string]any)
	if thinking["type"] != "enabled" || thinking["budget_tokens"] != float64(8192) || body["max_tokens"] != float64(9192) {
		t.Errorf("body %v", body)
	}
}

// TestUserImagesAreImageBlocks: a user turn's images follow its text as
// base64 image blocks; a turn with images and no text sends no empty text
// block; a turn without images is one text block as before.
func TestUserImagesAreImageBlocks(t *testing.T) {
	s := llmtest.NewAnthropic(t)
	p := New("anthropic", llm.Endpoint{BaseURL: s.URL})
	png := []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\xfb\xff\xfe")
	req := llm.Request{Model: "claude-sonnet-4-5", Messages: []llm.Message{
		{Role: llm.RoleUser, Text: "看这个", Images: []llm.Image{{MIME: "image/png", Data: png}, {MIME: "image/jpeg", Data: []byte{0xff, 0xd8, 0xff}}}},
		{Role: llm.RoleAssistant, Text: "一张图"},
		{Role: llm.RoleUser, Images: []llm.Image{{MIME: "image/webp", Data: []byte("RIFF")}}},
		{Role: llm.RoleAssistant, Text: "又一张"},
		{Role: llm.RoleUser, Text: "plain"},
	}}
	if _, _, _, err := llmtest.Collect(p.Stream(t.Context(), req)); err != nil {
		t.Fatal(err)
	}
	image := func(mime, data string) map[string]any {
		return map[string]any{"type": "image", "source": map[string]any{"type": "base64", "media_type": mime, "data": data}}
	}
	text := func(s string) map[string]any { return map[string]any{"type": "text", "text": s} }
	want := []any{
		map[string]any{"role": "user", "content": []any{text("看这个"), image("image/png", base64.StdEncoding.EncodeToString(png)), image("image/jpeg", "/9j/")}},
		map[string]any{"role": "assistant", "content": []any{text("一张图")}},
		map[string]any{"role": "user", "content": []any{image("image/webp", "UklGRg==")}},
		map[string]any{"role": "assistant", "content": []any{text("又一张")}},
		map[string]any{"role": "user", "content": []any{text("plain")}},
	}
	if diff := cmp.Diff(want, s.Requests()[0].Body["messages"]); diff != "" {
		t.Errorf("messages sent (-want +got):\n%s", diff)
	}
}
