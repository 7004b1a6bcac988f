package llm

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"syscall"
	"time"
)

// Class says what a caller may do after a failed model call.
type Class int

// Error classes.
const (
	// Retryable: a transient failure (rate limit, overload, server error,
	// timeout, dropped connection). Retry the same model after RetryAfter,
	// a bounded number of times, then fall back.
	Retryable Class = iota + 1
	// Fallback: this model cannot serve the request (unknown model, no
	// quota). Do not retry it; try the next model at once.
	Fallback
	// Fatal: retrying cannot help this provider (bad credentials, invalid
	// request) or the caller gave up (cancelled).
	Fatal
)

func (c Class) String() string {
	switch c {
	case Retryable:
		return "retryable"
	case Fallback:
		return "fallback"
	case Fatal:
		return "fatal"
	}
	return "unknown"
}

// Reason is the cause of a failure, finer than its Class.
type Reason string

// Reasons.
const (
	ReasonRateLimit  Reason = "rate_limit"
	ReasonOverloaded Reason = "overloaded"
	ReasonServer     Reason = "server"
	ReasonTimeout    Reason = "timeout"
	ReasonNetwork    Reason = "network"
	ReasonTruncated  Reason = "truncated"
	ReasonAuth       Reason = "auth"
	ReasonNotFound   Reason = "not_found"
	ReasonQuota      Reason = "quota"
	ReasonInvalid    Reason = "invalid_request"
	ReasonCanceled   Reason = "canceled"
	ReasonUnknown    Reason = "unknown"
)

// Error is a classified provider failure. Every error a Provider yields is
// an *Error.
type Error struct {
	Provider string
	Model    string
	Class    Class
	Reason   Reason
	// Status is the HTTP status, 0 when the failure was not an HTTP answer.
	Status int
	// RetryAfter is the wait the server asked for, 0 when it named none.
	RetryAfter time.Duration
	Err        error
}

func (e *Error) Error() string {
	s := fmt.Sprintf("%s/%s: %s (%s", e.Provider, e.Model, e.Reason, e.Class)
	if e.Status != 0 {
		s += fmt.Sprintf(", HTTP %d", e.Status)
	}
	if e.RetryAfter > 0 {
		s += fmt.Sprintf(", retry after %s", e.RetryAfter)
	}
	s += ")"
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

func (e *Error) Unwrap() error { return e.Err }

// ErrTruncated reports a stream that ended before the model finished.
var ErrTruncated = errors.New("stream ended before the reply was complete")

// ClassOf returns the class of err: the class of an *Error in its chain, or
// Fatal for anything unclassified.
func ClassOf(err error) Class {
	var e *Error
	if errors.As(err, &e) {
		return e.Class
	}
	return Fatal
}

// HTTPError classifies an HTTP error answer. apiType is the error type the
// body named, if any (e.g. "overloaded_error", "insufficient_quota").
func HTTPError(provider, model string, status int, header http.Header, apiType string, err error) *Error {
	e := &Error{Provider: provider, Model: model, Status: status, RetryAfter: RetryAfter(header, time.Now()), Err: err}
	e.Class, e.Reason = classifyStatus(status, apiType)
	return e
}

func classifyStatus(status int, apiType string) (Class, Reason) {
	switch apiType {
	case "overloaded_error":
		return Retryable, ReasonOverloaded
	case "rate_limit_error":
		return Retryable, ReasonRateLimit
	case "insufficient_quota", "billing_error":
		return Fallback, ReasonQuota
	case "authentication_error", "permission_error", "invalid_api_key":
		return Fatal, ReasonAuth
	}
	switch {
	case status == http.StatusTooManyRequests:
		return Retryable, ReasonRateLimit
	case status == 529 || status == http.StatusServiceUnavailable:
		return Retryable, ReasonOverloaded
	case status == http.StatusRequestTimeout || status == http.StatusGatewayTimeout:
		return Retryable, ReasonTimeout
	case status == http.StatusConflict || status == http.StatusTooEarly || status >= 500:
		return Retryable, ReasonServer
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		return Fatal, ReasonAuth
	case status == http.StatusNotFound:
		return Fallback, ReasonNotFound
	case status == http.StatusPaymentRequired:
		return Fallback, ReasonQuota
	case status >= 400:
		return Fatal, ReasonInvalid
	case apiType == "api_error":
		return Retryable, ReasonServer
	}
	return Fatal, ReasonUnknown
}

// Transport classifies a failure that is not an HTTP answer: a network
// error, a timeout, a truncated stream or a cancellation. parent is the
// caller's context, which tells a cancellation from a provider timeout.
func Transport(provider, model string, parent context.Context, err error) *Error {
	e := &Error{Provider: provider, Model: model, Err: err}
	var ne net.Error
	switch {
	case parent.Err() != nil:
		e.Class, e.Reason = Fatal, ReasonCanceled
		e.Err = errors.Join(err, context.Cause(parent))
	case errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout()):
		e.Class, e.Reason = Retryable, ReasonTimeout
	case errors.Is(err, context.Canceled):
		e.Class, e.Reason = Fatal, ReasonCanceled
	case errors.Is(err, ErrTruncated):
		e.Class, e.Reason = Retryable, ReasonTruncated
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF),
		errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.ECONNREFUSED),
		errors.Is(err, syscall.EPIPE), errors.As(err, &ne):
		e.Class, e.Reason = Retryable, ReasonNetwork
	default:
		e.Class, e.Reason = Fatal, ReasonUnknown
	}
	return e
}

// RetryAfter reads the wait a server asked for from Retry-After (seconds or
// an HTTP date) or retry-after-ms, relative to now; 0 when absent.
func RetryAfter(h http.Header, now time.Time) time.Duration {
	if h == nil {
		return 0
	}
	if v := h.Get("Retry-After-Ms"); v != "" {
		if n, err := strconv.ParseFloat(v, 64); err == nil && n > 0 {
			return time.Duration(n * float64(time.Millisecond))
		}
	}
	v := h.Get("Retry-After")
	if v == "" {
		return 0
	}
	if n, err := strconv.ParseFloat(v, 64); err == nil {
		if n <= 0 {
			return 0
		}
		return time.Duration(n * float64(time.Second))
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}
