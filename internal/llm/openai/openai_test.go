package openai

import (
	"testing"

	"github.com/pincerbot/pincer/internal/llm"
	"github.com/pincerbot/pincer/internal/llm/llmtest"
)

func TestProvider(t *testing.T) {
	llmtest.RunProviderSuite(t, llmtest.NewOpenAI, func(s *llmtest.Server) llm.Provider {
		return New("openai", llm.Endpoint{BaseURL: s.URL + "/v1", APIKey: "sk-test"})
	})
}

func TestCompatibleServerGetsMaxTokensAndKey(t *testing.T) {
	s := llmtest.NewOpenAI(t)
	p := New("ollama", llm.Endpoint{BaseURL: s.URL + "/v1", Headers: map[string]string{"X-Extra": "1"}})
	if _, _, _, err := llmtest.Collect(p.Stream(t.Context(), llm.Request{Model: "qwen", MaxTokens: 9, Messages: []llm.Message{{Role: llm.RoleUser, Text: "x"}}})); err != nil {
		t.Fatal(err)
	}
	r := s.Requests()[0]
	if r.Body["max_tokens"] != float64(9) {
		t.Errorf("compatible servers get max_tokens, body %v", r.Body)
	}
	if r.Header.Get("X-Extra") != "1" {
		t.Error("configured headers must be sent")
	}
	if got := r.Header.Get("Authorization"); got != "Bearer none" {
		t.Errorf("keyless provider sent Authorization %q", got)
	}
}

func TestThinkingLevelBecomesReasoningEffort(t *testing.T) {
	s := llmtest.NewOpenAI(t)
	p := New("openai", llm.Endpoint{BaseURL: s.URL + "/v1"})
	for _, level := range []string{"high", "off", ""} {
		if _, _, _, err := llmtest.Collect(p.Stream(t.Context(), llm.Request{Model: "o4", Thinking: level, Messages: []llm.Message{{Role: llm.RoleUser, Text: "x"}}})); err != nil {
			t.Fatal(err)
		}
	}
	reqs := s.Requests()
	if reqs[0].Body["reasoning_effort"] != "high" {
		t.Errorf("high: body %v", reqs[0].Body)
	}
	for _, r := range reqs[1:] {
		if _, sent := r.Body["reasoning_effort"]; sent {
			t.Errorf("off must send no reasoning effort: %v", r.Body)
		}
	}
}
