package llmtest

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/pincerbot/pincer/internal/llm"
)

// NewProvider builds the provider under test against a fake server.
type NewProvider func(s *Server) llm.Provider

// Collect drains a stream, returning the visible text, the reasoning, the
// final event and the error.
func Collect(seq func(func(llm.Event, error) bool)) (text, reasoning string, done llm.Event, err error) {
	var tb, rb strings.Builder
	for ev, e := range seq {
		if e != nil {
			err = e
			break
		}
		switch ev.Kind {
		case llm.EventText:
			tb.WriteString(ev.Text)
		case llm.EventReasoning:
			rb.WriteString(ev.Text)
		case llm.EventDone:
			done = ev
		}
	}
	return tb.String(), rb.String(), done, err
}

// RunProviderSuite checks the behaviour every llm.Provider shares against
// the fake server that speaks its API.
func RunProviderSuite(t *testing.T, newServer func(testing.TB) *Server, newProvider NewProvider) {
	req := llm.Request{
		Model:  "m-1",
		System: "You are pincer.",
		Messages: []llm.Message{
			{Role: llm.RoleUser, Text: "hi"},
			{Role: llm.RoleAssistant, Text: "hello"},
			{Role: llm.RoleUser, Text: "how are you?"},
		},
		MaxTokens: 256,
	}
	ctx := context.Background()

	t.Run("StreamsText", func(t *testing.T) {
		s := newServer(t)
		s.Script(Reply{Reasoning: []string{"thinking ", "hard"}, Text: []string{"Hel", "lo, ", "world"}})
		p := newProvider(s)
		var deltas []string
		var last llm.Event
		for ev, err := range p.Stream(ctx, req) {
			if err != nil {
				t.Fatalf("stream: %v", err)
			}
			if ev.Kind == llm.EventText {
				deltas = append(deltas, ev.Text)
			}
			last = ev
		}
		if strings.Join(deltas, "|") != "Hel|lo, |world" {
			t.Errorf("text deltas = %q, want them streamed one by one", deltas)
		}
		if last.Kind != llm.EventDone || last.StopReason == "" {
			t.Errorf("last event = %+v, want EventDone with a stop reason", last)
		}
		_, reasoning, _, _ := Collect(p.Stream(ctx, req))
		if reasoning != "thinking hard" {
			t.Errorf("reasoning = %q", reasoning)
		}
		got := s.Requests()[0].Body
		if got["model"] != "m-1" || got["stream"] != true {
			t.Errorf("request model/stream = %v/%v", got["model"], got["stream"])
		}
		body := mustJSON(got)
		for _, want := range []string{"You are pincer.", "hi", "hello", "how are you?", "256"} {
			if !strings.Contains(body, want) {
				t.Errorf("request body lacks %q: %s", want, body)
			}
		}
	})

	expectErr := func(t *testing.T, err error, class llm.Class, reason llm.Reason) *llm.Error {
		t.Helper()
		var le *llm.Error
		if !errors.As(err, &le) {
			t.Fatalf("error %v (%T) is not an *llm.Error", err, err)
		}
		if le.Class != class || le.Reason != reason {
			t.Fatalf("got %s/%s, want %s/%s (%v)", le.Class, le.Reason, class, reason, err)
		}
		if le.Provider != newProvider(newServer(t)).ID() || le.Model != "m-1" {
			t.Errorf("error names %s/%s", le.Provider, le.Model)
		}
		return le
	}

	statusTests := []struct {
		name      string
		reply     Reply
		class     llm.Class
		reason    llm.Reason
		retryWait time.Duration
	}{
		{"RateLimitIsRetryableWithRetryAfter", Reply{Status: http.StatusTooManyRequests, ErrorType: "rate_limit_error", Header: http.Header{"Retry-After": {"7"}}}, llm.Retryable, llm.ReasonRateLimit, 7 * time.Second},
		{"UnauthorizedIsFatal", Reply{Status: http.StatusUnauthorized, ErrorType: "authentication_error"}, llm.Fatal, llm.ReasonAuth, 0},
		{"OverloadIsRetryable", Reply{Status: 529, ErrorType: "overloaded_error"}, llm.Retryable, llm.ReasonOverloaded, 0},
		{"UnknownModelFallsBack", Reply{Status: http.StatusNotFound, ErrorType: "not_found_error"}, llm.Fallback, llm.ReasonNotFound, 0},
	}
	for _, tt := range statusTests {
		t.Run(tt.name, func(t *testing.T) {
			s := newServer(t)
			s.Script(tt.reply)
			_, _, _, err := Collect(newProvider(s).Stream(ctx, req))
			le := expectErr(t, err, tt.class, tt.reason)
			if le.RetryAfter != tt.retryWait || le.Status != tt.reply.Status {
				t.Errorf("retry after %v, status %d; want %v, %d", le.RetryAfter, le.Status, tt.retryWait, tt.reply.Status)
			}
			if n := len(s.Requests()); n != 1 {
				t.Errorf("the SDK retried on its own: %d requests", n)
			}
		})
	}

	t.Run("MidStreamDisconnectIsRetryable", func(t *testing.T) {
		s := newServer(t)
		s.Script(Reply{Text: []string{"par", "tial", "never"}, CutAfter: 2})
		text, _, done, err := Collect(newProvider(s).Stream(ctx, req))
		if text != "partial" {
			t.Errorf("text before the cut = %q", text)
		}
		if done.Kind == llm.EventDone {
			t.Error("a cut stream must not report EventDone")
		}
		var le *llm.Error
		if !errors.As(err, &le) || le.Class != llm.Retryable {
			t.Fatalf("want a retryable error, got %v", err)
		}
	})

	t.Run("InStreamErrorIsRetryable", func(t *testing.T) {
		s := newServer(t)
		s.Script(Reply{Text: []string{"a"}, StreamError: "overloaded_error"})
		_, _, _, err := Collect(newProvider(s).Stream(ctx, req))
		if llm.ClassOf(err) != llm.Retryable {
			t.Fatalf("want retryable, got %v", err)
		}
	})

	t.Run("CancellationStopsTheStream", func(t *testing.T) {
		s := newServer(t)
		hold := make(chan struct{})
		defer close(hold)
		s.Script(Reply{Text: []string{"first", "second"}, Hold: hold})
		cctx, cancel := context.WithCancel(ctx)
		defer cancel()
		var got []string
		var err error
		for ev, e := range newProvider(s).Stream(cctx, req) {
			if e != nil {
				err = e
				break
			}
			if ev.Kind == llm.EventText {
				got = append(got, ev.Text)
				cancel()
			}
		}
		if strings.Join(got, "") != "first" {
			t.Errorf("deltas after cancel: %q", got)
		}
		expectErr(t, err, llm.Fatal, llm.ReasonCanceled)
	})

	t.Run("HoldAfterPausesLater", func(t *testing.T) {
		s := newServer(t)
		hold := make(chan struct{})
		defer close(hold)
		s.Script(Reply{Text: []string{"first", "second", "third"}, Hold: hold, HoldAfter: 2})
		cctx, cancel := context.WithCancel(ctx)
		defer cancel()
		var got []string
		var err error
		for ev, e := range newProvider(s).Stream(cctx, req) {
			if e != nil {
				err = e
				break
			}
			if ev.Kind == llm.EventText {
				if got = append(got, ev.Text); len(got) == 2 {
					cancel()
				}
			}
		}
		if strings.Join(got, "") != "firstsecond" {
			t.Errorf("deltas before the pause: %q", got)
		}
		expectErr(t, err, llm.Fatal, llm.ReasonCanceled)
	})

	t.Run("ToolCalls", func(t *testing.T) {
		s := newServer(t)
		args := `{"city":"杭州","days":3}`
		s.Script(Reply{Text: []string{"Let me check."}, ToolCalls: []llm.ToolCall{{ID: "call_1", Name: "weather", Arguments: args}}})
		treq := req
		treq.Tools = []llm.Tool{{Name: "weather", Description: "the forecast", Parameters: map[string]any{
			"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}}, "required": []string{"city"},
		}}}
		var calls []llm.ToolCall
		for ev, err := range newProvider(s).Stream(ctx, treq) {
			if err != nil {
				t.Fatal(err)
			}
			if ev.Kind == llm.EventToolCall {
				calls = append(calls, ev.ToolCall)
			}
		}
		if len(calls) != 1 || calls[0].ID != "call_1" || calls[0].Name != "weather" || calls[0].Arguments != args {
			t.Fatalf("tool calls %+v", calls)
		}
		body := mustJSON(s.Requests()[0].Body["tools"])
		if !strings.Contains(body, `"weather"`) || !strings.Contains(body, `"city"`) {
			t.Errorf("tools sent: %s", body)
		}
		// The follow-up call carries the call and its result.
		follow := treq
		follow.Messages = append(append([]llm.Message(nil), req.Messages...),
			llm.Message{Role: llm.RoleAssistant, Text: "Let me check.", ToolCalls: calls},
			llm.Message{Role: llm.RoleTool, ToolCallID: "call_1", Text: "sunny, 25°C"},
		)
		s.Script(Reply{Text: []string{"Sunny."}})
		if _, _, _, err := Collect(newProvider(s).Stream(ctx, follow)); err != nil {
			t.Fatal(err)
		}
		sent := mustJSON(s.Requests()[1].Body["messages"])
		for _, want := range []string{"call_1", "sunny, 25°C", "weather"} {
			if !strings.Contains(sent, want) {
				t.Errorf("follow-up lacks %q: %s", want, sent)
			}
		}
	})

	t.Run("BreakingOutEndsTheCall", func(t *testing.T) {
		s := newServer(t)
		hold := make(chan struct{})
		defer close(hold)
		s.Script(Reply{Text: []string{"first", "second"}, Hold: hold})
		for ev, err := range newProvider(s).Stream(ctx, req) {
			if err != nil {
				t.Fatal(err)
			}
			if ev.Kind == llm.EventText {
				break // must return at once although the server holds the stream open
			}
		}
	})
}
