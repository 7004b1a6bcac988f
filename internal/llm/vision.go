package llm

import "strings"

// visionNames are pieces of model names that, by their makers' naming,
// take images as input. Matching is on the lower-cased model name (the part
// after "provider/"), so a model served under a router's prefix
// ("openai/gpt-4o" on OpenRouter) matches too.
var visionNames = []string{
	"gpt-4o", "gpt-4.1", "gpt-4-turbo", "gpt-4-vision", "gpt-5", "chatgpt-4o", "o1", "o3", "o4",
	"claude-3", "claude-opus-4", "claude-sonnet-4", "claude-haiku-4", "claude-4",
	"gemini", "gemma-3",
	"qwen-vl", "qwen2-vl", "qwen2.5-vl", "qwen3-vl", "qvq", "qwen-omni", "qwen2.5-omni", "qwen3-omni",
	"glm-4v", "glm-4.1v", "glm-4.5v",
	"-vl", "vision", "llava", "pixtral", "minicpm-v", "internvl", "moondream", "llama-4", "llama4",
	"grok-4", "kimi-vl", "doubao-seed", "step-1v", "step-1o",
}

// textOnlyNames override visionNames for models whose names contain a
// vision piece but that take text only.
var textOnlyNames = []string{"o1-mini", "o3-mini", "gpt-4o-audio", "gpt-4o-realtime", "-tts", "-transcribe", "embedding"}

// SeesImagesByName guesses from a model's name whether it takes images as
// input: true for the well-known vision families (GPT-4o, GPT-4.1, GPT-5,
// o3/o4, Claude 3 and 4, Gemini, Qwen-VL, GLM-4V, Llama 4, Pixtral …),
// false for everything else, DeepSeek's chat and reasoning models among
// them. Configuration overrides the guess per model.
func SeesImagesByName(model string) bool {
	m := strings.ToLower(model)
	if i := strings.LastIndexByte(m, '/'); i >= 0 {
		m = m[i+1:]
	}
	for _, s := range textOnlyNames {
		if strings.Contains(m, s) {
			return false
		}
	}
	for _, s := range visionNames {
		if strings.HasPrefix(m, s) || (strings.HasPrefix(s, "-") || len(s) > 4) && strings.Contains(m, s) {
			return true
		}
	}
	return false
}
