package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"sync"

	"github.com/pincerbot/pincer/internal/llm"
)

// Tool is one function the agent may call.
type Tool struct {
	Spec llm.Tool
	// Elevated tools are offered only to sessions in elevated mode.
	Elevated bool
	// Call runs the tool. An error is reported to the model as the result;
	// it never ends the turn.
	Call func(ctx context.Context, args json.RawMessage) (string, error)
}

// Tools is a registry of tools that pincer and its channels add to. It is
// safe for concurrent use.
type Tools struct {
	mu    sync.RWMutex
	tools map[string]Tool
}

var toolName = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

// Add registers t; a taken or invalid name is an error.
func (ts *Tools) Add(t Tool) error {
	if !toolName.MatchString(t.Spec.Name) {
		return fmt.Errorf("tool %q: names are 1-64 letters, digits, '_' or '-'", t.Spec.Name)
	}
	if t.Call == nil {
		return fmt.Errorf("tool %q: no Call", t.Spec.Name)
	}
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if ts.tools == nil {
		ts.tools = map[string]Tool{}
	}
	if _, taken := ts.tools[t.Spec.Name]; taken {
		return fmt.Errorf("tool %q is already registered", t.Spec.Name)
	}
	ts.tools[t.Spec.Name] = t
	return nil
}

// specs lists the tools offered to a session, by name; allowed, when
// set, leaves out the tools the chat may not use.
func (ts *Tools) specs(elevated bool, allowed func(string) bool) []llm.Tool {
	if ts == nil {
		return nil
	}
	ts.mu.RLock()
	defer ts.mu.RUnlock()
	out := make([]llm.Tool, 0, len(ts.tools))
	for _, t := range ts.tools {
		if (!t.Elevated || elevated) && (allowed == nil || allowed(t.Spec.Name)) {
			out = append(out, t.Spec)
		}
	}
	slices.SortFunc(out, func(a, b llm.Tool) int {
		switch {
		case a.Name < b.Name:
			return -1
		case a.Name > b.Name:
			return 1
		}
		return 0
	})
	return out
}

// MaxToolResultChars bounds one tool result sent back to the model.
const MaxToolResultChars = 16000

// call runs one tool call and returns its result text; failures, unknown
// tools, tools the session may not use and panics all become an error
// result for the model.
func (ts *Tools) call(ctx context.Context, c llm.ToolCall, elevated bool, allowed func(string) bool) (result string, failed bool) {
	var t Tool
	var ok bool
	if ts != nil {
		ts.mu.RLock()
		t, ok = ts.tools[c.Name]
		ts.mu.RUnlock()
	}
	if !ok || (t.Elevated && !elevated) || (allowed != nil && !allowed(c.Name)) {
		return fmt.Sprintf("error: there is no tool named %q", c.Name), true
	}
	args := json.RawMessage(c.Arguments)
	if !json.Valid(args) {
		return "error: the arguments are not valid JSON", true
	}
	defer func() {
		if p := recover(); p != nil {
			result, failed = fmt.Sprintf("error: the tool failed: %v", p), true
		}
	}()
	out, err := t.Call(ctx, args)
	if err != nil {
		return "error: " + err.Error(), true
	}
	if r := []rune(out); len(r) > MaxToolResultChars {
		out = string(r[:MaxToolResultChars]) + "\n…(truncated)"
	}
	return out, false
}

// Failed is the result of a tool that could not do its job: a tool never
// fails the turn; the model reads {"status":"failed","error":…}.
func Failed(err error) (string, error) {
	b, _ := json.Marshal(map[string]string{"status": "failed", "error": err.Error()})
	return string(b), nil
}
