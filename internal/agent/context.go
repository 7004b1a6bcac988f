package agent

import (
	"unicode/utf8"

	"github.com/pincerbot/pincer/internal/llm"
	"github.com/pincerbot/pincer/internal/store"
)

// Messages converts a transcript to model messages. Summaries stand in for
// the turns they replaced; tool calls and results are replayed, and a result
// whose call is not in the transcript is left out.
func Messages(tr []store.Turn) []llm.Message { return messages(tr, nil, 0) }

// messages is Messages that, when load is set, shows through load the
// images of the user turns from index from on (the turns this run
// answers); older turns keep only their text, which names their files.
func messages(tr []store.Turn, load func(path string) (llm.Image, bool), from int) []llm.Message {
	out := make([]llm.Message, 0, len(tr))
	calls := map[string]bool{}
	current := from
	for i, t := range tr {
		switch t.Role {
		case store.RoleUser:
			m := llm.Message{Role: llm.RoleUser, Text: t.Text}
			if load != nil && i >= current {
				for _, p := range t.Images {
					if img, ok := load(p); ok {
						m.Images = append(m.Images, img)
					}
				}
			}
			out = append(out, m)
		case store.RoleAssistant:
			m := llm.Message{Role: llm.RoleAssistant, Text: t.Text}
			for _, c := range t.ToolCalls {
				m.ToolCalls = append(m.ToolCalls, llm.ToolCall{ID: c.ID, Name: c.Name, Arguments: c.Arguments})
				calls[c.ID] = true
			}
			if m.Text != "" || len(m.ToolCalls) > 0 {
				out = append(out, m)
			}
		case store.RoleTool:
			if calls[t.ToolCallID] {
				out = append(out, llm.Message{Role: llm.RoleTool, Text: t.Text, ToolCallID: t.ToolCallID})
			}
		case store.RoleSummary:
			out = append(out, llm.Message{Role: llm.RoleUser, Text: "[Summary of the earlier conversation]\n" + t.Text})
		}
	}
	return out
}

// EstimateTokens estimates the tokens of s without a tokenizer: about four
// ASCII characters per token and one token per other character (CJK text
// runs close to one token per character), rounded up.
func EstimateTokens(s string) int {
	ascii, other := 0, 0
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r < utf8.RuneSelf {
			ascii++
		} else {
			other++
		}
		i += size
	}
	return (ascii+3)/4 + other
}

// perMessageTokens is the framing overhead counted for each message.
const perMessageTokens = 4

// imageTokens is what one image is counted as: providers charge from
// about 85 (a small low-detail picture) to about 1600 tokens (a large one).
const imageTokens = 1000

// Fit drops the oldest messages until the estimate fits budget. Everything
// from the last user message on is always kept, and the result never starts
// with an assistant message or a tool result cut off from its call.
func Fit(msgs []llm.Message, budget int) []llm.Message {
	floor := len(msgs) - 1
	for floor > 0 && msgs[floor].Role != llm.RoleUser {
		floor--
	}
	total := 0
	start := len(msgs)
	for i := len(msgs) - 1; i >= 0; i-- {
		total += EstimateTokens(msgs[i].Text) + perMessageTokens + imageTokens*len(msgs[i].Images)
		for _, c := range msgs[i].ToolCalls {
			total += EstimateTokens(c.Name) + EstimateTokens(c.Arguments)
		}
		if total > budget && i < floor {
			break
		}
		start = i
	}
	for start < floor && msgs[start].Role != llm.RoleUser {
		start++
	}
	return msgs[start:]
}
