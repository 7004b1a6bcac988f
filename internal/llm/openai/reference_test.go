package openai

import (
	"bytes"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/pincerbot/pincer/internal/llm"
)

// The request as structs, for encoding/json: the reference appendBody is
// held to, byte for byte (TestAppendBodyIsTheReference, FuzzAppendBody).

// chatRequest is a streamed chat-completions request.
type chatRequest struct {
	Model               string         `json:"model"`
	Messages            []chatMessage  `json:"messages"`
	Stream              bool           `json:"stream"`
	StreamOptions       *streamOptions `json:"stream_options,omitempty"`
	Tools               []chatTool     `json:"tools,omitempty"`
	ReasoningEffort     string         `json:"reasoning_effort,omitempty"`
	MaxTokens           int            `json:"max_tokens,omitempty"`
	MaxCompletionTokens int            `json:"max_completion_tokens,omitempty"`
}

// streamOptions asks for the usage chunk at the end of a stream.
type streamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

type chatMessage struct {
	Role string `json:"role"`
	// Content is a *string, or a []contentPart for a user turn that shows
	// images. It is left out only for an assistant turn that made tool
	// calls and said nothing.
	Content    any            `json:"content,omitempty"`
	ToolCalls  []chatToolCall `json:"tool_calls,omitempty"`
	ToolCallID string         `json:"tool_call_id,omitempty"`
}

// contentPart is one part of a user turn's content: its text, or an
// image.
type contentPart struct {
	Type     string    `json:"type"`
	Text     string    `json:"text,omitempty"`
	ImageURL *imageURL `json:"image_url,omitempty"`
}

// userContent is a user turn's content: its text alone, as a string,
// unless it shows images; then its text (when there is any) and the
// images as parts.
func userContent(m *llm.Message) any {
	if len(m.Images) == 0 {
		return &m.Text
	}
	parts := make([]contentPart, 0, len(m.Images)+1)
	if m.Text != "" {
		parts = append(parts, contentPart{Type: "text", Text: m.Text})
	}
	for i := range m.Images {
		parts = append(parts, contentPart{Type: "image_url", ImageURL: (*imageURL)(&m.Images[i])})
	}
	return parts
}

type chatToolCall struct {
	ID       string       `json:"id"`
	Type     string       `json:"type"`
	Function chatFunction `json:"function"`
}

type chatTool struct {
	Type     string  `json:"type"`
	Function toolDef `json:"function"`
}

type toolDef struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters,omitempty"`
}

// body returns req as a chat-completions request.
func (p *Provider) body(req llm.Request) (chatRequest, error) {
	msgs := make([]chatMessage, 0, len(req.Messages)+1)
	if req.System != "" {
		msgs = append(msgs, chatMessage{Role: "system", Content: &req.System})
	}
	for i := range req.Messages {
		m := &req.Messages[i]
		switch m.Role {
		case llm.RoleAssistant:
			a := chatMessage{Role: "assistant"}
			if m.Text != "" || len(m.ToolCalls) == 0 {
				a.Content = &m.Text
			}
			if len(m.ToolCalls) > 0 {
				a.ToolCalls = make([]chatToolCall, len(m.ToolCalls))
				for j, c := range m.ToolCalls {
					a.ToolCalls[j] = chatToolCall{ID: c.ID, Type: "function", Function: chatFunction{Name: c.Name, Arguments: c.Arguments}}
				}
			}
			msgs = append(msgs, a)
		case llm.RoleTool:
			msgs = append(msgs, chatMessage{Role: "tool", Content: &m.Text, ToolCallID: m.ToolCallID})
		default:
			msgs = append(msgs, chatMessage{Role: "user", Content: userContent(m)})
		}
	}
	body := chatRequest{Model: req.Model, Messages: msgs, Stream: true}
	if p.askUsage {
		body.StreamOptions = &streamOptions{IncludeUsage: true}
	}
	if len(req.Tools) > 0 {
		body.Tools = make([]chatTool, len(req.Tools))
		for i, t := range req.Tools {
			params, err := p.schemas.encode(t.Parameters)
			if err != nil {
				return body, fmt.Errorf("tool %s: parameters: %w", t.Name, err)
			}
			body.Tools[i] = chatTool{Type: "function", Function: toolDef{Name: t.Name, Description: t.Description, Parameters: params}}
		}
	}
	if llm.ThinkingBudget(req.Thinking) > 0 {
		body.ReasoningEffort = req.Thinking
	}
	if req.MaxTokens > 0 {
		if p.legacyMaxTokens {
			body.MaxTokens = req.MaxTokens
		} else {
			body.MaxCompletionTokens = req.MaxTokens
		}
	}
	return body, nil
}

// reference is req's body as encoding/json's Encoder writes the structs,
// without HTML escapes.
func reference(t testing.TB, p *Provider, req llm.Request) []byte {
	t.Helper()
	body, err := p.body(req)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(body); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestAppendBodyIsTheReference: the hand-written body is, byte for byte,
// what encoding/json writes for the request as structs, for every kind of
// turn, with the usage asked for or not and either token limit.
func TestAppendBodyIsTheReference(t *testing.T) {
	for name, req := range requestKinds() {
		for _, legacy := range []bool{false, true} {
			p := &Provider{legacyMaxTokens: legacy, askUsage: !legacy}
			got, err := p.appendBody([]byte("x"), req)
			if err != nil {
				t.Fatal(err)
			}
			if want := reference(t, p, req); !bytes.Equal(got[1:], want) || got[0] != 'x' {
				t.Errorf("%s (legacy %v):\n got x%s\nwant x%s", name, legacy, got[1:], want)
			}
		}
	}
}

// FuzzAppendBody: any texts, ids and images, in any roles, are encoded as
// encoding/json encodes the structs.
func FuzzAppendBody(f *testing.F) {
	f.Add("gpt", "你是助手。", "今天天气怎么样？", "好", "call_1", "get", `{"a":1}`, "image/png", []byte("\x89PNG"), uint8(0), uint16(7))
	f.Add("m\"<", "\u2028\x00", "bad \xff", "<&>", "", "\\", "", "image/<x>", []byte{}, uint8(0xff), uint16(0))
	f.Fuzz(func(t *testing.T, model, system, text, reply, id, name, args, mime string, data []byte, roles uint8, limit uint16) {
		req := llm.Request{Model: model, System: system, MaxTokens: int(limit)}
		if roles&0x80 != 0 {
			req.Thinking = "high"
		}
		if roles&0x40 != 0 {
			req.Tools = []llm.Tool{{Name: name, Description: text}, {Name: "s", Parameters: map[string]any{"type": "object", "description": reply}}}
		}
		// Each pair of bits of roles picks a turn.
		for i := range 3 {
			switch roles >> (2 * i) & 3 {
			case 0:
				req.Messages = append(req.Messages, llm.Message{Role: llm.RoleUser, Text: text})
			case 1:
				req.Messages = append(req.Messages, llm.Message{Role: llm.RoleUser, Text: reply, Images: []llm.Image{{MIME: mime, Data: data}}})
			case 2:
				m := llm.Message{Role: llm.RoleAssistant, Text: reply}
				if i != 1 {
					m.ToolCalls = []llm.ToolCall{{ID: id, Name: name, Arguments: args}}
				}
				req.Messages = append(req.Messages, m)
			case 3:
				req.Messages = append(req.Messages, llm.Message{Role: llm.RoleTool, ToolCallID: id, Text: args})
			}
		}
		for _, legacy := range []bool{false, true} {
			p := &Provider{legacyMaxTokens: legacy, askUsage: !legacy}
			got, err := p.appendBody(nil, req)
			if err != nil {
				t.Fatal(err)
			}
			if want := reference(t, p, req); !bytes.Equal(got, want) {
				t.Fatalf("legacy %v:\n got %s\nwant %s", legacy, got, want)
			}
		}
	})
}
