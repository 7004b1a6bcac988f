package llm

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"testing"
	"testing/synctest"
	"time"
)

func TestParseRef(t *testing.T) {
	r, err := ParseRef("openrouter/meta-llama/llama-3")
	if err != nil || r.Provider != "openrouter" || r.Model != "meta-llama/llama-3" {
		t.Errorf("got %+v %v", r, err)
	}
	for _, bad := range []string{"", "gpt-4o", "/x", "x/"} {
		if _, err := ParseRef(bad); err == nil {
			t.Errorf("ParseRef(%q) accepted", bad)
		}
	}
	if got := (Ref{"openai", "gpt-4o-mini"}).String(); got != "openai/gpt-4o-mini" {
		t.Errorf("String = %q", got)
	}
}

func TestClassifyStatus(t *testing.T) {
	tests := []struct {
		status  int
		apiType string
		class   Class
		reason  Reason
	}{
		{429, "", Retryable, ReasonRateLimit},
		{529, "", Retryable, ReasonOverloaded},
		{503, "", Retryable, ReasonOverloaded},
		{500, "", Retryable, ReasonServer},
		{502, "", Retryable, ReasonServer},
		{408, "", Retryable, ReasonTimeout},
		{401, "", Fatal, ReasonAuth},
		{403, "", Fatal, ReasonAuth},
		{404, "", Fallback, ReasonNotFound},
		{402, "", Fallback, ReasonQuota},
		{429, "insufficient_quota", Fallback, ReasonQuota},
		{400, "", Fatal, ReasonInvalid},
		{0, "overloaded_error", Retryable, ReasonOverloaded},
		{0, "api_error", Retryable, ReasonServer},
	}
	for _, tt := range tests {
		e := HTTPError("p", "m", tt.status, nil, tt.apiType, errors.New("x"))
		if e.Class != tt.class || e.Reason != tt.reason {
			t.Errorf("%d %q: got %s/%s, want %s/%s", tt.status, tt.apiType, e.Class, e.Reason, tt.class, tt.reason)
		}
	}
}

func TestTransportClassification(t *testing.T) {
	live := context.Background()
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	tests := []struct {
		name   string
		parent context.Context
		err    error
		class  Class
		reason Reason
	}{
		{"provider timeout", live, fmt.Errorf("read: %w", context.DeadlineExceeded), Retryable, ReasonTimeout},
		{"caller cancelled", cancelled, context.Canceled, Fatal, ReasonCanceled},
		{"caller cancelled while reading", cancelled, io.ErrUnexpectedEOF, Fatal, ReasonCanceled},
		{"dropped connection", live, fmt.Errorf("scan: %w", io.ErrUnexpectedEOF), Retryable, ReasonNetwork},
		{"truncated stream", live, ErrTruncated, Retryable, ReasonTruncated},
		{"something else", live, errors.New("boom"), Fatal, ReasonUnknown},
	}
	for _, tt := range tests {
		e := Transport("p", "m", tt.parent, tt.err)
		if e.Class != tt.class || e.Reason != tt.reason {
			t.Errorf("%s: got %s/%s, want %s/%s", tt.name, e.Class, e.Reason, tt.class, tt.reason)
		}
		if !errors.Is(e, tt.err) {
			t.Errorf("%s: the cause must stay in the chain", tt.name)
		}
	}
}

func TestRetryAfter(t *testing.T) {
	now := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	tests := []struct {
		h    http.Header
		want time.Duration
	}{
		{http.Header{"Retry-After": {"7"}}, 7 * time.Second},
		{http.Header{"Retry-After": {"1.5"}}, 1500 * time.Millisecond},
		{http.Header{"Retry-After-Ms": {"250"}, "Retry-After": {"1"}}, 250 * time.Millisecond},
		{http.Header{"Retry-After": {now.Add(30 * time.Second).Format(http.TimeFormat)}}, 30 * time.Second},
		{http.Header{"Retry-After": {"soon"}}, 0},
		{http.Header{"Retry-After": {"-3"}}, 0},
		{nil, 0},
	}
	for _, tt := range tests {
		if got := RetryAfter(tt.h, now); got != tt.want {
			t.Errorf("RetryAfter(%v) = %v, want %v", tt.h, got, tt.want)
		}
	}
}

func TestClassOfUnclassifiedIsFatal(t *testing.T) {
	if ClassOf(errors.New("x")) != Fatal {
		t.Error("an unclassified error must be fatal")
	}
	wrapped := fmt.Errorf("turn: %w", &Error{Class: Retryable})
	if ClassOf(wrapped) != Retryable {
		t.Error("ClassOf must look through wrapping")
	}
}

// endless is a body whose server keeps the stream open: a read waits
// until the body is closed.
type endless struct{ closed chan struct{} }

func (e *endless) Read([]byte) (int, error) { <-e.closed; return 0, errors.New("closed") }
func (e *endless) Close() error {
	select {
	case <-e.closed:
	default:
		close(e.closed)
	}
	return nil
}

// TestKeepAliveGivesUpOnAServerThatKeepsTalking: closing a body whose
// end never comes waits drainWait, then closes it anyway.
func TestKeepAliveGivesUpOnAServerThatKeepsTalking(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		body := &endless{closed: make(chan struct{})}
		res, _ := KeepAlive(&http.Response{Body: body}, nil)
		start := time.Now()
		if err := res.Body.Close(); err != nil {
			t.Fatal(err)
		}
		if waited := time.Since(start); waited != drainWait {
			t.Errorf("Close waited %s, want %s", waited, drainWait)
		}
		select {
		case <-body.closed:
		default:
			t.Error("the body was not closed")
		}
	})
}
