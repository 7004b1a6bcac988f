// Package llm defines the streaming model interface pincer's agents call, the
// one place where provider errors are classified, and model refs. Providers
// live in subpackages: openai (any OpenAI-compatible server), anthropic and
// preview.
package llm

import (
	"context"
	"fmt"
	"iter"
	"strings"
)

// Role is the author of a conversation message.
type Role string

// Roles.
const (
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
	// RoleTool carries the result of a tool call.
	RoleTool Role = "tool"
)

// Message is one conversation message sent to a model.
type Message struct {
	Role Role
	Text string
	// ToolCalls are the calls an assistant message made.
	ToolCalls []ToolCall
	// ToolCallID links a RoleTool message to its call.
	ToolCallID string
	// IsError marks a RoleTool result that reports a failure.
	IsError bool
	// Images go with a RoleUser message, after its text, to models that
	// can see them.
	Images []Image
}

// Image is one picture a user message shows the model.
type Image struct {
	// MIME is image/png, image/jpeg, image/gif or image/webp.
	MIME string
	Data []byte
}

// ToolCall is one tool invocation by the model.
type ToolCall struct {
	ID   string
	Name string
	// Arguments is a JSON object.
	Arguments string
}

// Tool describes a tool the model may call.
type Tool struct {
	Name        string
	Description string
	// Parameters is the JSON Schema of the arguments object.
	Parameters map[string]any
}

// Request is one model call.
type Request struct {
	// Model is the provider's model name (the part after "provider/").
	Model string
	// System is the system prompt; empty for none.
	System string
	// Messages is the conversation, oldest first, ending with the user's turn.
	Messages []Message
	// MaxTokens caps the reply.
	MaxTokens int
	// Thinking is the reasoning level: "" or "off" sends none, else one of
	// ThinkingLevels. Providers map it to their own knob.
	Thinking string
	// Tools the model may call.
	Tools []Tool
}

// ThinkingLevels are the reasoning levels a session can choose, lowest
// first.
var ThinkingLevels = []string{"off", "minimal", "low", "medium", "high", "xhigh"}

// ThinkingBudget is a token budget for a reasoning level, for providers
// that take one; 0 for off or unknown levels.
func ThinkingBudget(level string) int {
	switch level {
	case "minimal":
		return 1024
	case "low":
		return 2048
	case "medium":
		return 8192
	case "high":
		return 16384
	case "xhigh":
		return 32768
	}
	return 0
}

// EventKind is the kind of one stream event.
type EventKind int

// Event kinds.
const (
	// EventText carries a piece of the visible reply.
	EventText EventKind = iota + 1
	// EventReasoning carries a piece of the model's reasoning.
	EventReasoning
	// EventToolCall carries one complete tool call.
	EventToolCall
	// EventDone ends a complete stream and carries usage and stop reason.
	EventDone
)

// Usage counts tokens of one call, when the provider reports them.
type Usage struct {
	InputTokens  int64
	OutputTokens int64
}

// Event is one item of a model stream.
type Event struct {
	Kind       EventKind
	Text       string
	ToolCall   ToolCall
	StopReason string
	Usage      Usage
}

// Provider is one model endpoint. Stream yields events until the reply is
// complete (ending with EventDone) or an error, which is always an *Error.
// Breaking out of the loop cancels the call.
type Provider interface {
	// ID is the provider id used in model refs.
	ID() string
	Stream(ctx context.Context, req Request) iter.Seq2[Event, error]
}

// Ref names a model as provider/model, e.g. "openai/gpt-4o-mini". The model
// part may itself contain slashes ("openrouter/meta-llama/llama-3-70b").
type Ref struct {
	Provider string
	Model    string
}

// ParseRef parses "provider/model".
func ParseRef(s string) (Ref, error) {
	p, m, ok := strings.Cut(strings.TrimSpace(s), "/")
	if !ok || p == "" || m == "" {
		return Ref{}, fmt.Errorf("model ref %q: want provider/model", s)
	}
	return Ref{Provider: p, Model: m}, nil
}

func (r Ref) String() string { return r.Provider + "/" + r.Model }
