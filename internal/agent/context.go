package agent

import (
	"unicode/utf8"

	"github.com/pincerbot/pincer/internal/llm"
	"github.com/pincerbot/pincer/internal/store"
)

// Messages converts a transcript to model messages. Summaries stand in for
// the turns they replaced; tool turns are not replayed yet.
func Messages(tr []store.Turn) []llm.Message {
	out := make([]llm.Message, 0, len(tr))
	for _, t := range tr {
		switch t.Role {
		case store.RoleUser:
			out = append(out, llm.Message{Role: llm.RoleUser, Text: t.Text})
		case store.RoleAssistant:
			if t.Text != "" {
				out = append(out, llm.Message{Role: llm.RoleAssistant, Text: t.Text})
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

// Fit drops the oldest messages until the estimate fits budget. The last
// message (the user's turn) is always kept, and the result never starts with
// an assistant message.
func Fit(msgs []llm.Message, budget int) []llm.Message {
	total := 0
	start := len(msgs)
	for i := len(msgs) - 1; i >= 0; i-- {
		total += EstimateTokens(msgs[i].Text) + perMessageTokens
		if total > budget && i < len(msgs)-1 {
			break
		}
		start = i
	}
	for start < len(msgs)-1 && msgs[start].Role == llm.RoleAssistant {
		start++
	}
	return msgs[start:]
}
