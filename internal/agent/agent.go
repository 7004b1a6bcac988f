// Package agent runs one agent turn: it builds the model request from the
// system prompt and the session transcript, streams the reply, and moves
// along the model chain when a model fails.
package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/pincerbot/pincer/internal/llm"
	"github.com/pincerbot/pincer/internal/store"
)

// Options configure a Runner.
type Options struct {
	// Providers are the configured model providers by id.
	Providers map[string]llm.Provider
	// MaxTokens caps one reply.
	MaxTokens int
	// ContextTokens is the model context budget the transcript is fitted to.
	ContextTokens int
	// Retries is how often a retryable failure is retried on the same model
	// before moving on; 0 means the default of 1.
	Retries int
	// MaxRetryWait caps a server's Retry-After; longer waits move on to the
	// next model instead. 0 means the default of 30s.
	MaxRetryWait time.Duration
	Logger       *slog.Logger
}

// Runner runs agent turns. It is safe for concurrent use.
type Runner struct {
	opts Options
	log  *slog.Logger
	cool cooldowns
}

// NewRunner returns a Runner.
func NewRunner(o Options) *Runner {
	if o.Retries == 0 {
		o.Retries = 1
	}
	if o.MaxRetryWait == 0 {
		o.MaxRetryWait = 30 * time.Second
	}
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Runner{opts: o, log: log.With("component", "agent"), cool: cooldowns{m: map[llm.Ref]*cooldown{}}}
}

// Input is one turn to run.
type Input struct {
	// Models is the chain to try in order: primary first.
	Models []llm.Ref
	System string
	// Transcript is the session's transcript, ending with the user's turn.
	Transcript []store.Turn
	// Thinking is the session's reasoning level ("" for the default).
	Thinking string
	// OnText receives visible reply text as it streams.
	OnText func(delta string)
}

// Output is the result of a turn.
type Output struct {
	Text      string
	Reasoning string
	// Model is the model that produced the reply (or failed last).
	Model llm.Ref
	Usage llm.Usage
	// Partial reports a reply cut short by an error or cancellation after
	// some of it was streamed.
	Partial bool
}

// HasProvider reports whether a provider with id is configured.
func (r *Runner) HasProvider(id string) bool {
	_, ok := r.opts.Providers[id]
	return ok
}

// ErrNoModel is returned when the chain is empty or names no configured
// provider.
var ErrNoModel = errors.New("agent: no usable model")

// Run runs one turn. It moves along in.Models on failures, but only while
// nothing has been streamed yet: text already shown is never repeated by
// another model. On error, Output holds whatever was streamed.
func (r *Runner) Run(ctx context.Context, in Input) (Output, error) {
	req := llm.Request{System: in.System, MaxTokens: r.opts.MaxTokens, Thinking: in.Thinking}
	req.Messages = Fit(Messages(in.Transcript), r.opts.ContextTokens-r.opts.MaxTokens-EstimateTokens(in.System))
	var lastErr error = ErrNoModel
	for i, ref := range r.cool.order(in.Models, time.Now()) {
		p, ok := r.opts.Providers[ref.Provider]
		if !ok {
			lastErr = fmt.Errorf("%w: provider %q is not configured", ErrNoModel, ref.Provider)
			continue
		}
		req.Model = ref.Model
		for attempt := 0; ; attempt++ {
			out, err := r.once(ctx, p, req, in.OnText)
			out.Model = ref
			if err == nil {
				r.cool.succeeded(ref)
				return out, nil
			}
			lastErr = err
			if out.Text != "" {
				out.Partial = true
				return out, err
			}
			var le *llm.Error
			errors.As(err, &le)
			if le == nil || le.Reason == llm.ReasonCanceled || ctx.Err() != nil {
				return out, err
			}
			r.log.Warn("model call failed", "model", ref.String(), "class", le.Class.String(), "reason", string(le.Reason), "status", le.Status, "attempt", attempt+1)
			if le.Class == llm.Retryable && attempt < r.opts.Retries && le.RetryAfter <= r.opts.MaxRetryWait {
				if err := sleep(ctx, backoff(attempt, le.RetryAfter)); err != nil {
					return out, err
				}
				continue
			}
			if le.Class == llm.Fatal && le.Reason != llm.ReasonAuth {
				// An invalid request fails on every model alike.
				return out, err
			}
			wait := r.cool.failed(ref, le.RetryAfter, time.Now())
			r.log.Info("model cooling down", "model", ref.String(), "for", wait.String())
			break
		}
		if i < len(in.Models)-1 {
			r.log.Info("falling back", "from", ref.String(), "to", in.Models[i+1].String())
		}
	}
	return Output{}, lastErr
}

func (r *Runner) once(ctx context.Context, p llm.Provider, req llm.Request, onText func(string)) (Output, error) {
	var text, reasoning strings.Builder
	var out Output
	for ev, err := range p.Stream(ctx, req) {
		if err != nil {
			out.Text, out.Reasoning = text.String(), reasoning.String()
			return out, err
		}
		switch ev.Kind {
		case llm.EventText:
			text.WriteString(ev.Text)
			if onText != nil {
				onText(ev.Text)
			}
		case llm.EventReasoning:
			reasoning.WriteString(ev.Text)
		case llm.EventDone:
			out.Usage = ev.Usage
		}
	}
	out.Text, out.Reasoning = text.String(), reasoning.String()
	return out, nil
}

// backoff is the wait before retry number attempt+1: the server's
// Retry-After when given, else 1s, 2s, 4s … capped at 10s.
func backoff(attempt int, retryAfter time.Duration) time.Duration {
	if retryAfter > 0 {
		return retryAfter
	}
	return min(time.Second<<attempt, 10*time.Second)
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
