package llm

import "testing"

func TestSeesImagesByName(t *testing.T) {
	for model, want := range map[string]bool{
		"gpt-4o-mini":                   true,
		"gpt-4.1":                       true,
		"gpt-5-mini":                    true,
		"o3":                            true,
		"o3-mini":                       false,
		"o1-mini":                       false,
		"gpt-4o-audio-preview":          false,
		"gpt-3.5-turbo":                 false,
		"claude-sonnet-4-5":             true,
		"claude-3-5-haiku-latest":       true,
		"gemini-2.5-flash":              true,
		"qwen-vl-max":                   true,
		"qwen2.5-vl-72b-instruct":       true,
		"Qwen/Qwen2.5-VL-7B-Instruct":   true,
		"qwen-max":                      false,
		"qwen3-235b-a22b":               false,
		"deepseek-chat":                 false,
		"deepseek-reasoner":             false,
		"glm-4v-plus":                   true,
		"glm-4-plus":                    false,
		"meta-llama/llama-4-scout":      true,
		"llama3.2-vision":               true,
		"llava:13b":                     true,
		"text-embedding-3-small":        false,
		"openai/gpt-4o":                 true,
		"moonshot-v1-8k":                false,
		"kimi-vl-a3b-thinking":          true,
		"doubao-seed-1-6-vision-250815": true,
		"":                              false,
	} {
		if got := SeesImagesByName(model); got != want {
			t.Errorf("SeesImagesByName(%q) = %v, want %v", model, got, want)
		}
	}
}
