// Package agent runs one agent turn: it builds the model request from the
// system prompt and the session transcript, streams the reply, and moves
// along the model chain when a model fails.
package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
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
	// Tools are offered to the model; nil offers none.
	Tools *Tools
	// MaxToolRounds bounds the model calls of one turn that answer with
	// tool calls; 0 means 8.
	MaxToolRounds int
	// FirstTokenTimeout abandons a model call that has produced nothing
	// (no text, reasoning or tool call) for this long since it started;
	// the chain moves on to the next model. 0 means the default of 30s.
	FirstTokenTimeout time.Duration
	// SeesImages says which models are sent the images of a turn's user
	// messages (store.Turn.Images); nil sends none.
	SeesImages func(llm.Ref) bool
	// Describe, when set, describes a picture in text for a model of the
	// chain that cannot see it (a fallback of a primary that can): it is
	// asked only when such a model is tried.
	Describe func(ctx context.Context, img llm.Image) (string, error)
	Logger   *slog.Logger
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
	if o.MaxToolRounds == 0 {
		o.MaxToolRounds = 8
	}
	if o.FirstTokenTimeout <= 0 {
		o.FirstTokenTimeout = DefaultFirstTokenTimeout
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
	// Fresh is the index in Transcript of the first turn this run
	// answers: only such turns show their images. 0 means the turns
	// after the transcript's last reply.
	Fresh int
	// Thinking is the session's reasoning level ("" for the default).
	Thinking string
	// Elevated offers the elevated tools as well.
	Elevated bool
	// ToolAllowed, when set, says which tools the chat may use: the others
	// are neither offered nor run.
	ToolAllowed func(name string) bool
	// Describe, when set, describes pictures for a model that cannot see
	// them in place of Options.Describe (a chat's own image model).
	Describe func(ctx context.Context, img llm.Image) (string, error)
	// Steer, when set, is asked between model calls for messages the user
	// sent meanwhile; they join the turn, and tool calls not yet started
	// are skipped.
	Steer func() []store.Turn
	// Stream, when set, receives the reply text as it streams.
	Stream Stream
}

// Stream receives a turn's reply while the model writes it. The runner
// calls Begin before every model call (the first, a retry, a fallback, the
// next round after tools), Text for each piece of visible text, Reasoning
// for each piece of the model's reasoning (never to be shown, but the
// model is at work), and Discard when a call failed and another attempt
// follows. Shown tells whether any text of the current call has reached
// the user: a failure after that is final, so shown text is never
// repeated or contradicted. Until then a failed call is retried or falls
// back like one that sent nothing; reasoning alone leaves it so.
//
// TakeBack says that the text of the current call so far was reasoning
// (its opening tag was in the model's prompt, see llm.ThinkSplitter): what
// of it was not sent is dropped, and the call goes on.
type Stream interface {
	Begin()
	Text(delta string)
	Reasoning(delta string)
	Shown() bool
	Discard()
	TakeBack()
}

// DefaultFirstTokenTimeout is how long a model call may stay silent.
const DefaultFirstTokenTimeout = 30 * time.Second

// ErrNoFirstToken reports a model call abandoned because the provider
// accepted it but produced nothing within the first-token timeout.
var ErrNoFirstToken = errors.New("the model produced nothing in time")

// Output is the result of a turn.
type Output struct {
	// Text is the visible reply; Reasoning is what the model thought,
	// from its provider's reasoning stream and from the <think> blocks
	// it wrote into its reply (see llm.ThinkSplitter), which Text never
	// holds.
	Text      string
	Reasoning string
	// Model is the model that produced the reply (or failed last).
	Model llm.Ref
	Usage llm.Usage
	// Partial reports a reply cut short by an error or cancellation after
	// some of it was streamed.
	Partial bool
	// Turns are the transcript turns the run produced, in order: tool calls,
	// tool results, steered user messages and the final reply.
	Turns []store.Turn
}

// HasProvider reports whether a provider with id is configured.
func (r *Runner) HasProvider(id string) bool {
	_, ok := r.opts.Providers[id]
	return ok
}

// ErrNoModel is returned when the chain is empty or names no configured
// provider.
var ErrNoModel = errors.New("agent: no usable model")

// Run runs one turn: model calls until the model answers without tool
// calls, running the tools it asks for in between. Each model call is
// retried and moves along in.Models on failures as long as none of its text
// has been shown (see Stream); tools that ran stay in the transcript the
// next attempt sees, so a tool never runs twice. On error, Output holds
// whatever was produced.
func (r *Runner) Run(ctx context.Context, in Input) (Output, error) {
	tr := slices.Clone(in.Transcript)
	var total Output
	fresh := in.Fresh
	if fresh <= 0 {
		fresh = afterLastReply(tr)
	}
	load := r.imageLoader()
	describe := in.Describe
	if describe == nil {
		describe = r.opts.Describe
	}
	var texts []string
	for round := 0; ; round++ {
		req := llm.Request{System: in.System, MaxTokens: r.opts.MaxTokens, Thinking: in.Thinking}
		if round < r.opts.MaxToolRounds {
			req.Tools = r.opts.Tools.specs(in.Elevated, in.ToolAllowed)
		}
		budget := r.opts.ContextTokens - r.opts.MaxTokens - EstimateTokens(in.System)
		var seen []llm.Message
		if r.opts.SeesImages != nil && slices.ContainsFunc(in.Models, r.opts.SeesImages) && hasImages(tr[min(fresh, len(tr)):]) {
			seen = Fit(messages(tr, load, fresh), budget)
			req.Messages = withoutImages(seen)
		} else {
			req.Messages = Fit(Messages(tr), budget)
		}
		out, calls, err := r.call(ctx, in.Models, req, seen, in.Stream, describe)
		total.Model, total.Usage = out.Model, addUsage(total.Usage, out.Usage)
		total.Reasoning += out.Reasoning
		if out.Text != "" {
			texts = append(texts, out.Text)
		}
		total.Text = strings.Join(texts, "\n\n")
		if err != nil {
			total.Partial = total.Text != "" || round > 0
			return total, err
		}
		if len(calls) == 0 {
			total.Turns = append(total.Turns, store.Turn{Role: store.RoleAssistant, Text: out.Text})
			return total, nil
		}
		assistant := store.Turn{Role: store.RoleAssistant, Text: out.Text}
		for _, c := range calls {
			assistant.ToolCalls = append(assistant.ToolCalls, store.ToolCall{ID: c.ID, Name: c.Name, Arguments: c.Arguments})
		}
		produced := []store.Turn{assistant}
		var steered []store.Turn
		for _, c := range calls {
			if len(steered) == 0 && in.Steer != nil {
				steered = in.Steer()
			}
			result := "skipped: the user sent a new message first"
			if len(steered) == 0 {
				var failed bool
				result, failed = r.opts.Tools.call(ctx, c, in.Elevated, in.ToolAllowed)
				r.log.Info("tool called", "tool", c.Name, "failed", failed)
			}
			produced = append(produced, store.Turn{Role: store.RoleTool, ToolCallID: c.ID, Text: result})
		}
		produced = append(produced, steered...)
		tr = append(tr, produced...)
		total.Turns = append(total.Turns, produced...)
	}
}

func addUsage(a, b llm.Usage) llm.Usage {
	return llm.Usage{InputTokens: a.InputTokens + b.InputTokens, OutputTokens: a.OutputTokens + b.OutputTokens}
}

// call makes one model call along the chain: a failure before any of its
// text was shown is retried (retryable failures, a bounded number of times)
// and then moves on to the next model.
// seen, when set, is req's messages with their images, for the models
// that see them.
func (r *Runner) call(ctx context.Context, models []llm.Ref, req llm.Request, seen []llm.Message, stream Stream, describe describeFunc) (Output, []llm.ToolCall, error) {
	text := req.Messages
	// A model that cannot see the pictures reads them described, when a
	// describer is set: asked once, the first time such a model is tried.
	var described []llm.Message
	blind := func() []llm.Message {
		if seen == nil || describe == nil {
			return text
		}
		if described == nil {
			described = r.describeImages(ctx, seen, text, describe)
		}
		return described
	}
	var lastErr error = ErrNoModel
	// failed is the Output of a chain that ran out: the model tried last.
	var failed Output
	chain := r.cool.order(models, time.Now())
	for i, ref := range chain {
		failed.Model = ref
		p, ok := r.opts.Providers[ref.Provider]
		if !ok {
			lastErr = fmt.Errorf("%w: provider %q is not configured", ErrNoModel, ref.Provider)
			continue
		}
		req.Model = ref.Model
		withImages := seen != nil && r.opts.SeesImages(ref)
		if withImages {
			req.Messages = seen
		} else {
			req.Messages = blind()
		}
		for attempt := 0; ; attempt++ {
			if stream != nil {
				stream.Begin()
			}
			out, calls, err := r.once(ctx, p, req, stream)
			out.Model = ref
			if err == nil {
				r.cool.succeeded(ref)
				return out, calls, nil
			}
			lastErr = err
			if stream != nil && stream.Shown() {
				return out, nil, err
			}
			var le *llm.Error
			errors.As(err, &le)
			if le == nil || le.Reason == llm.ReasonCanceled || ctx.Err() != nil {
				return out, nil, err
			}
			if stream != nil {
				stream.Discard()
			}
			r.log.Warn("model call failed", "model", ref.String(), "class", le.Class.String(), "reason", string(le.Reason), "status", le.Status, "attempt", attempt+1, "streamed", out.Text != "")
			// A provider that hung once is not waited on again: the next
			// model gets the time.
			silent := errors.Is(err, ErrNoFirstToken)
			if le.Class == llm.Retryable && !silent && attempt < r.opts.Retries && le.RetryAfter <= r.opts.MaxRetryWait {
				if err := sleep(ctx, backoff(attempt, le.RetryAfter)); err != nil {
					return out, nil, err
				}
				continue
			}
			if withImages && le.Class == llm.Fatal && le.Reason == llm.ReasonInvalid {
				// The pictures may be what the provider refused (a size,
				// a format): ask again with their notes only.
				r.log.Warn("model refused the request with pictures; asking again without them", "model", ref.String(), "err", err)
				withImages, req.Messages = false, blind()
				continue
			}
			if le.Class == llm.Fatal && le.Reason != llm.ReasonAuth {
				// An invalid request fails on every model alike.
				return out, nil, err
			}
			wait := r.cool.failed(ref, le.RetryAfter, time.Now())
			r.log.Info("model cooling down", "model", ref.String(), "for", wait.String())
			break
		}
		if i < len(chain)-1 {
			r.log.Info("falling back", "from", ref.String(), "to", chain[i+1].String())
		}
	}
	return failed, nil, lastErr
}

// once makes one model call. A call that yields nothing within the
// first-token timeout is cut and reported as ErrNoFirstToken; reasoning
// counts as something. Reasoning the model writes into its reply's
// content is taken out of the text, for the stream and the transcript.
func (r *Runner) once(ctx context.Context, p llm.Provider, req llm.Request, stream Stream) (Output, []llm.ToolCall, error) {
	var text, reasoning strings.Builder
	var inline llm.ThinkSplitter
	emit := func(visible, thought string) {
		if thought != "" {
			reasoning.WriteString(thought)
			if stream != nil {
				stream.Reasoning(thought)
			}
		}
		if visible != "" {
			text.WriteString(visible)
			if stream != nil {
				stream.Text(visible)
			}
		}
	}
	// takeBack follows the splitter when it found that the text so far
	// was reasoning the prompt opened (see llm.ThinkSplitter): it becomes
	// reasoning, and the stream takes it back.
	takeBack := func() {
		if !inline.TookBack() {
			return
		}
		reasoning.WriteString(text.String())
		text.Reset()
		if stream != nil {
			stream.TakeBack()
		}
	}
	var out Output
	var calls []llm.ToolCall
	callCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	silence := time.AfterFunc(r.opts.FirstTokenTimeout, func() { cancel(ErrNoFirstToken) })
	defer silence.Stop()
	for ev, err := range p.Stream(callCtx, req) {
		silence.Stop()
		if err != nil {
			out.Text, out.Reasoning = text.String(), reasoning.String()
			if ctx.Err() == nil && errors.Is(context.Cause(callCtx), ErrNoFirstToken) {
				err = &llm.Error{Provider: p.ID(), Model: req.Model, Class: llm.Retryable, Reason: llm.ReasonTimeout,
					Err: fmt.Errorf("%w (%s)", ErrNoFirstToken, r.opts.FirstTokenTimeout)}
			}
			return out, nil, err
		}
		switch ev.Kind {
		case llm.EventText:
			visible, thought := inline.Push(ev.Text)
			takeBack()
			emit(visible, thought)
		case llm.EventReasoning:
			emit("", ev.Text)
		case llm.EventToolCall:
			calls = append(calls, ev.ToolCall)
		case llm.EventDone:
			out.Usage = ev.Usage
		}
	}
	visible, thought := inline.End()
	takeBack()
	emit(visible, thought)
	out.Text, out.Reasoning = text.String(), reasoning.String()
	return out, calls, nil
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
