package agent

import (
	"context"
	"encoding/json"
	"errors"
	"iter"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/pincerbot/pincer/internal/llm"
	"github.com/pincerbot/pincer/internal/store"
)

// step scripts one call of a fakeProvider: stream text, then fail with err
// (or finish when err is nil).
type step struct {
	// reasoning streams as the provider's reasoning, before text.
	reasoning []string
	text      []string
	calls     []llm.ToolCall
	err       *llm.Error
}

type fakeProvider struct {
	id    string
	mu    sync.Mutex
	steps []step
	calls []time.Time
	reqs  []llm.Request
}

func (f *fakeProvider) ID() string { return f.id }

func (f *fakeProvider) Stream(ctx context.Context, req llm.Request) iter.Seq2[llm.Event, error] {
	return func(yield func(llm.Event, error) bool) {
		f.mu.Lock()
		f.calls = append(f.calls, time.Now())
		f.reqs = append(f.reqs, req)
		s := step{text: []string{"ok"}}
		if len(f.steps) > 0 {
			s, f.steps = f.steps[0], f.steps[1:]
		}
		f.mu.Unlock()
		for _, t := range s.reasoning {
			if !yield(llm.Event{Kind: llm.EventReasoning, Text: t}, nil) {
				return
			}
		}
		for _, t := range s.text {
			if !yield(llm.Event{Kind: llm.EventText, Text: t}, nil) {
				return
			}
		}
		if s.err != nil {
			e := *s.err
			e.Provider, e.Model = f.id, req.Model
			yield(llm.Event{}, &e)
			return
		}
		for _, c := range s.calls {
			if !yield(llm.Event{Kind: llm.EventToolCall, ToolCall: c}, nil) {
				return
			}
		}
		yield(llm.Event{Kind: llm.EventDone}, nil)
	}
}

func userTurn(text string) []store.Turn { return []store.Turn{{Role: store.RoleUser, Text: text}} }

func runner(ps ...*fakeProvider) *Runner {
	m := map[string]llm.Provider{}
	for _, p := range ps {
		m[p.id] = p
	}
	return NewRunner(Options{Providers: m, MaxTokens: 100, ContextTokens: 10000})
}

func chain(refs ...string) []llm.Ref {
	var out []llm.Ref
	for _, r := range refs {
		ref, _ := llm.ParseRef(r)
		out = append(out, ref)
	}
	return out
}

// recStream records what the runner streams. live makes every piece of
// text count as shown to the user.
type recStream struct {
	live   bool
	events []string
	shown  bool
}

func (s *recStream) Begin()             { s.events = append(s.events, "begin"); s.shown = false }
func (s *recStream) Text(d string)      { s.events = append(s.events, d); s.shown = s.shown || s.live }
func (s *recStream) Reasoning(d string) { s.events = append(s.events, "think:"+d) }
func (s *recStream) Shown() bool        { return s.shown }
func (s *recStream) Discard()           { s.events = append(s.events, "discard") }
func (s *recStream) TakeBack()          { s.events = append(s.events, "takeback") }
func (s *recStream) String() string     { return strings.Join(s.events, "|") }
func live() *recStream                  { return &recStream{live: true} }
func wholeMessages() *recStream         { return &recStream{} }

func TestRunStreamsAndReturnsText(t *testing.T) {
	p := &fakeProvider{id: "a", steps: []step{{text: []string{"Hel", "lo"}}}}
	streamed := live()
	out, err := runner(p).Run(context.Background(), Input{
		Models: chain("a/m"), System: "sys", Transcript: userTurn("hi"), Stream: streamed,
	})
	if err != nil {
		t.Fatal(err)
	}
	if out.Text != "Hello" || out.Model.String() != "a/m" || out.Partial {
		t.Errorf("out = %+v", out)
	}
	if got := streamed.String(); got != "begin|Hel|lo" {
		t.Errorf("streamed %q", got)
	}
	if r := p.reqs[0]; r.System != "sys" || r.Model != "m" || r.MaxTokens != 100 || len(r.Messages) != 1 {
		t.Errorf("request = %+v", r)
	}
}

// TestReasoningThePromptOpenedIsTakenBack: a reply that is reasoning, a
// closing tag and the answer (the opening tag was in the prompt): the
// stream is told to take back the text it got, and the output keeps the
// answer as text, the rest as reasoning.
func TestReasoningThePromptOpenedIsTakenBack(t *testing.T) {
	p := &fakeProvider{id: "a", steps: []step{{text: []string{"想一想", "</think>\n\n答案"}}}}
	s := live()
	out, err := runner(p).Run(context.Background(), Input{Models: chain("a/m"), Transcript: userTurn("hi"), Stream: s})
	if err != nil {
		t.Fatal(err)
	}
	if out.Text != "答案" || out.Reasoning != "想一想" {
		t.Errorf("text %q reasoning %q", out.Text, out.Reasoning)
	}
	if got := s.String(); got != "begin|想一想|takeback|答案" {
		t.Errorf("streamed %q", got)
	}
}

// TestInlineReasoningIsNotText: <think> blocks the model writes into its
// reply, split anywhere, reach the stream as reasoning, never as text,
// and end up in Output.Reasoning with the provider's own reasoning; the
// transcript keeps the visible reply only.
func TestInlineReasoningIsNotText(t *testing.T) {
	p := &fakeProvider{id: "a", steps: []step{{reasoning: []string{"first, "}, text: []string{"<thi", "nk>plan</th", "ink>\n答案"}}}}
	s := live()
	out, err := runner(p).Run(context.Background(), Input{Models: chain("a/m"), Transcript: userTurn("hi"), Stream: s})
	if err != nil {
		t.Fatal(err)
	}
	if out.Text != "\n答案" || out.Reasoning != "first, plan" {
		t.Errorf("text %q reasoning %q", out.Text, out.Reasoning)
	}
	if got := s.String(); got != "begin|think:first, |think:plan|\n答案" {
		t.Errorf("streamed %q", got)
	}
	if len(out.Turns) != 1 || out.Turns[0].Text != "\n答案" {
		t.Errorf("turns %+v", out.Turns)
	}
}

// TestReasoningLeavesFallbackOpen: a call that failed after thinking
// aloud (an unclosed <think>) showed the user nothing, so it falls back
// like a call that sent nothing, even where text shows live.
func TestReasoningLeavesFallbackOpen(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fatal := &llm.Error{Class: llm.Retryable, Reason: llm.ReasonServer, Status: 500}
		a := &fakeProvider{id: "a", steps: []step{{text: []string{"<think>let me", " think"}, err: fatal}, {text: []string{"<think>again"}, err: fatal}}}
		b := &fakeProvider{id: "b", steps: []step{{text: []string{"42"}}}}
		s := live()
		out, err := runner(a, b).Run(context.Background(), Input{Models: chain("a/m", "b/m"), Transcript: userTurn("hi"), Stream: s})
		if err != nil || out.Text != "42" || out.Model.String() != "b/m" {
			t.Fatalf("out %+v err %v", out, err)
		}
		if got, want := s.String(), "begin|think:let me|think: think|discard|begin|think:again|discard|begin|42"; got != want {
			t.Errorf("stream %q, want %q", got, want)
		}
	})
}

func TestRetryHonoursRetryAfter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := &fakeProvider{id: "a", steps: []step{
			{err: &llm.Error{Class: llm.Retryable, Reason: llm.ReasonRateLimit, Status: 429, RetryAfter: 7 * time.Second}},
			{text: []string{"done"}},
		}}
		out, err := runner(p).Run(context.Background(), Input{Models: chain("a/m"), Transcript: userTurn("hi")})
		if err != nil || out.Text != "done" {
			t.Fatalf("out %+v err %v", out, err)
		}
		if got := p.calls[1].Sub(p.calls[0]); got != 7*time.Second {
			t.Errorf("retried after %v, want the server's 7s", got)
		}
	})
}

func TestFallbackChain(t *testing.T) {
	retryable := &llm.Error{Class: llm.Retryable, Reason: llm.ReasonOverloaded, Status: 529}
	tests := []struct {
		name       string
		primary    []step
		wantText   string
		wantErr    bool
		wantModel  string
		wantCallsA int
	}{
		{"overload retried once then fallback", []step{{err: retryable}, {err: retryable}}, "ok", false, "b/m", 2},
		{"unknown model falls back at once", []step{{err: &llm.Error{Class: llm.Fallback, Reason: llm.ReasonNotFound}}}, "ok", false, "b/m", 1},
		{"bad key falls back at once", []step{{err: &llm.Error{Class: llm.Fatal, Reason: llm.ReasonAuth, Status: 401}}}, "ok", false, "b/m", 1},
		{"invalid request stops the chain", []step{{err: &llm.Error{Class: llm.Fatal, Reason: llm.ReasonInvalid, Status: 400}}}, "", true, "a/m", 1},
		{"failure after shown text is not repeated elsewhere", []step{{text: []string{"half"}, err: retryable}}, "half", true, "a/m", 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				a := &fakeProvider{id: "a", steps: tt.primary}
				b := &fakeProvider{id: "b"}
				out, err := runner(a, b).Run(context.Background(), Input{Models: chain("a/m", "b/m"), Transcript: userTurn("hi"), Stream: live()})
				if (err != nil) != tt.wantErr {
					t.Fatalf("err = %v, wantErr %v", err, tt.wantErr)
				}
				if out.Text != tt.wantText || out.Model.String() != tt.wantModel {
					t.Errorf("out = %+v, want text %q from %s", out, tt.wantText, tt.wantModel)
				}
				if len(a.calls) != tt.wantCallsA {
					t.Errorf("primary called %d times, want %d", len(a.calls), tt.wantCallsA)
				}
				if tt.wantText == "half" && !out.Partial {
					t.Error("a cut reply must be marked partial")
				}
			})
		})
	}
}

func TestAllModelsFailReturnsLastError(t *testing.T) {
	a := &fakeProvider{id: "a", steps: []step{{err: &llm.Error{Class: llm.Fallback, Reason: llm.ReasonQuota}}}}
	out, err := runner(a).Run(context.Background(), Input{Models: chain("a/m", "missing/x"), Transcript: userTurn("hi")})
	if !errors.Is(err, ErrNoModel) {
		t.Errorf("want ErrNoModel for the unconfigured last model, got %v", err)
	}
	if got := out.Model.String(); got != "missing/x" {
		t.Errorf("Output.Model = %q, want the model tried last, missing/x", got)
	}
}

// TestFailedChainNamesItsLastModel: a turn whose every model failed says
// which model failed last, for the turn's log and trace.
func TestFailedChainNamesItsLastModel(t *testing.T) {
	a := &fakeProvider{id: "a", steps: []step{{err: &llm.Error{Class: llm.Fallback, Reason: llm.ReasonQuota}}}}
	b := &fakeProvider{id: "b", steps: []step{{err: &llm.Error{Class: llm.Fatal, Reason: llm.ReasonAuth}}}}
	out, err := runner(a, b).Run(context.Background(), Input{Models: chain("a/m", "b/n"), Transcript: userTurn("hi")})
	if err == nil {
		t.Fatal("the turn did not fail")
	}
	if got := out.Model.String(); got != "b/n" {
		t.Errorf("Output.Model = %q, want b/n", got)
	}
}

func TestCancelStopsRetryWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := &fakeProvider{id: "a", steps: []step{{err: &llm.Error{Class: llm.Retryable, Reason: llm.ReasonRateLimit, RetryAfter: 20 * time.Second}}}}
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(time.Second, cancel)
		start := time.Now()
		_, err := runner(p).Run(ctx, Input{Models: chain("a/m"), Transcript: userTurn("hi")})
		if !errors.Is(err, context.Canceled) || time.Since(start) != time.Second {
			t.Errorf("err %v after %v; want cancellation after 1s", err, time.Since(start))
		}
	})
}

func TestMessagesAndFit(t *testing.T) {
	tr := []store.Turn{
		{Role: store.RoleSummary, Text: "earlier"},
		{Role: store.RoleUser, Text: strings.Repeat("a", 400)},
		{Role: store.RoleAssistant, Text: strings.Repeat("b", 400)},
		{Role: store.RoleTool, Text: "ignored"},
		{Role: store.RoleAssistant, Text: ""},
		{Role: store.RoleUser, Text: "now"},
	}
	msgs := Messages(tr)
	if len(msgs) != 4 || !strings.Contains(msgs[0].Text, "Summary") || msgs[3].Text != "now" {
		t.Fatalf("Messages = %+v", msgs)
	}
	fit := Fit(msgs, 120)
	if len(fit) != 1 || fit[0].Text != "now" {
		t.Errorf("Fit must drop the oldest and never start with the assistant: %+v", fit)
	}
	if got := Fit(msgs, 1); len(got) != 1 || got[0].Text != "now" {
		t.Errorf("the user's turn is always kept: %+v", got)
	}
	if got := Fit(msgs, 1e6); len(got) != 4 {
		t.Errorf("everything fits a large budget: %d", len(got))
	}
}

func TestEstimateTokens(t *testing.T) {
	if got := EstimateTokens("abcdefgh"); got != 2 {
		t.Errorf("ascii: %d", got)
	}
	if got := EstimateTokens("你好世界"); got != 4 {
		t.Errorf("cjk: %d", got)
	}
}

// TestFallbackOn429AndCooldown: a 429 from the primary falls back at once
// (its Retry-After is longer than a turn should wait), and the primary rests
// so the next turns go straight to the fallback until its cooldown ends.
func TestFallbackOn429AndCooldown(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rateLimited := &llm.Error{Class: llm.Retryable, Reason: llm.ReasonRateLimit, Status: 429, RetryAfter: 90 * time.Second}
		a := &fakeProvider{id: "a", steps: []step{{err: rateLimited}}}
		b := &fakeProvider{id: "b"}
		r := runner(a, b)
		in := Input{Models: chain("a/m", "b/m"), Transcript: userTurn("hi")}
		start := time.Now()
		out, err := r.Run(context.Background(), in)
		if err != nil || out.Model.String() != "b/m" {
			t.Fatalf("first turn: %+v %v", out, err)
		}
		if time.Since(start) != 0 {
			t.Errorf("waited %v on a rate-limited primary", time.Since(start))
		}
		time.Sleep(80 * time.Second)
		if out, _ := r.Run(context.Background(), in); out.Model.String() != "b/m" || len(a.calls) != 1 {
			t.Errorf("during the cooldown: used %s, primary called %d times", out.Model, len(a.calls))
		}
		time.Sleep(11 * time.Second) // past the 90s Retry-After
		if out, _ := r.Run(context.Background(), in); out.Model.String() != "a/m" {
			t.Errorf("after the cooldown: used %s", out.Model)
		}
	})
}

func TestCooldownGrowsAndResets(t *testing.T) {
	var c cooldowns
	c.m = map[llm.Ref]*cooldown{}
	ref := llm.Ref{Provider: "a", Model: "m"}
	now := time.Now()
	var got []time.Duration
	for range 4 {
		got = append(got, c.failed(ref, 0, now))
	}
	if diff := cmp.Diff([]time.Duration{time.Minute, 5 * time.Minute, 25 * time.Minute, time.Hour}, got); diff != "" {
		t.Errorf("cooldowns (-want +got):\n%s", diff)
	}
	if order := c.order([]llm.Ref{ref, {Provider: "b", Model: "m"}}, now); order[0].Provider != "b" {
		t.Errorf("a resting model goes last: %v", order)
	}
	c.succeeded(ref)
	if d := c.failed(ref, 0, now); d != time.Minute {
		t.Errorf("after a success the cooldown starts over, got %v", d)
	}
}

// TestUnshownFailureMovesOn: on a channel that shows whole messages only,
// text streamed by a call that then fails never reached anyone, so the call
// is retried and falls back like one that sent nothing, and the cut text is
// discarded rather than becoming the answer.
func TestUnshownFailureMovesOn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		retryable := &llm.Error{Class: llm.Retryable, Reason: llm.ReasonServer, Status: 500}
		a := &fakeProvider{id: "a", steps: []step{{text: []string{"The answer is"}, err: retryable}, {text: []string{"The ans"}, err: retryable}}}
		b := &fakeProvider{id: "b", steps: []step{{text: []string{"42"}}}}
		s := wholeMessages()
		out, err := runner(a, b).Run(context.Background(), Input{Models: chain("a/m", "b/m"), Transcript: userTurn("hi"), Stream: s})
		if err != nil || out.Text != "42" || out.Model.String() != "b/m" || out.Partial {
			t.Fatalf("out %+v err %v", out, err)
		}
		if got, want := s.String(), "begin|The answer is|discard|begin|The ans|discard|begin|42"; got != want {
			t.Errorf("stream %q, want %q", got, want)
		}
	})
}

// TestRetryAndFallbackAfterToolRound: a 429 on the call after a tool round
// is retried and then falls back; the tool does not run again.
func TestRetryAndFallbackAfterToolRound(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rateLimited := &llm.Error{Class: llm.Retryable, Reason: llm.ReasonRateLimit, Status: 429}
		a := &fakeProvider{id: "a", steps: []step{
			{text: []string{"Let me check."}, calls: []llm.ToolCall{{ID: "c1", Name: "count", Arguments: "{}"}}},
			{err: rateLimited}, {err: rateLimited},
		}}
		b := &fakeProvider{id: "b", steps: []step{{text: []string{"It is 1."}}}}
		runs := 0
		tools := &Tools{}
		if err := tools.Add(Tool{Spec: llm.Tool{Name: "count", Parameters: map[string]any{"type": "object"}}, Call: func(context.Context, json.RawMessage) (string, error) {
			runs++
			return "1", nil
		}}); err != nil {
			t.Fatal(err)
		}
		r := NewRunner(Options{Providers: map[string]llm.Provider{"a": a, "b": b}, MaxTokens: 100, ContextTokens: 10000, Tools: tools})
		start := time.Now()
		out, err := r.Run(context.Background(), Input{Models: chain("a/m", "b/m"), Transcript: userTurn("count"), Stream: wholeMessages()})
		if err != nil || out.Model.String() != "b/m" || out.Text != "Let me check.\n\nIt is 1." {
			t.Fatalf("out %+v err %v", out, err)
		}
		if len(a.calls) != 3 || runs != 1 {
			t.Errorf("primary called %d times (want the tool round, one call and its retry), tool ran %d times", len(a.calls), runs)
		}
		if time.Since(start) != time.Second {
			t.Errorf("the retry waited %v, want the 1s backoff", time.Since(start))
		}
	})
}

// hangProvider accepts every call and sends nothing until the caller gives
// up.
type hangProvider struct {
	id    string
	calls int
}

func (h *hangProvider) ID() string { return h.id }

func (h *hangProvider) Stream(ctx context.Context, req llm.Request) iter.Seq2[llm.Event, error] {
	return func(yield func(llm.Event, error) bool) {
		h.calls++
		<-ctx.Done()
		yield(llm.Event{}, llm.Transport(h.id, req.Model, ctx, ctx.Err()))
	}
}

// TestFirstTokenTimeout: a provider that accepts the request and sends
// nothing is abandoned after the first-token timeout, not retried, and the
// chain moves on; alone, the turn fails after that one timeout.
func TestFirstTokenTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := &hangProvider{id: "a"}
		b := &fakeProvider{id: "b", steps: []step{{text: []string{"here"}}}}
		r := NewRunner(Options{Providers: map[string]llm.Provider{"a": h, "b": b}, MaxTokens: 100, ContextTokens: 10000})
		start := time.Now()
		out, err := r.Run(context.Background(), Input{Models: chain("a/m", "b/m"), Transcript: userTurn("hi")})
		if err != nil || out.Text != "here" {
			t.Fatalf("out %+v err %v", out, err)
		}
		if got := time.Since(start); got != DefaultFirstTokenTimeout || h.calls != 1 {
			t.Errorf("fell back after %v and %d calls; want %v and 1", got, h.calls, DefaultFirstTokenTimeout)
		}

		alone := NewRunner(Options{Providers: map[string]llm.Provider{"a": &hangProvider{id: "a"}}, FirstTokenTimeout: 5 * time.Second})
		start = time.Now()
		_, err = alone.Run(context.Background(), Input{Models: chain("a/m"), Transcript: userTurn("hi")})
		var le *llm.Error
		if !errors.Is(err, ErrNoFirstToken) || !errors.As(err, &le) || le.Reason != llm.ReasonTimeout || le.Provider != "a" {
			t.Errorf("err = %v; want a classified first-token timeout", err)
		}
		if got := time.Since(start); got != 5*time.Second {
			t.Errorf("gave up after %v, want 5s", got)
		}
	})
}
