package anthropic

import (
	"testing"

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
