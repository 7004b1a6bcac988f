package engine

import (
	"context"
	"encoding/json"
	"iter"
	"strings"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/google/go-cmp/cmp"

	"github.com/pincerbot/pincer/internal/agent"
	"github.com/pincerbot/pincer/internal/channel"
	"github.com/pincerbot/pincer/internal/llm"
	"github.com/pincerbot/pincer/internal/msg"
	"github.com/pincerbot/pincer/internal/reply"
	"github.com/pincerbot/pincer/internal/store"
	"github.com/pincerbot/pincer/internal/texts"
)

// call scripts one model call: text deltas, then tool calls, or an error
// after the deltas.
type call struct {
	text  []string
	tools []llm.ToolCall
	err   *llm.Error
}

// callsProvider answers each call with the next script; the last repeats.
type callsProvider struct {
	id    string
	mu    sync.Mutex
	calls []call
	n     int
}

func (p *callsProvider) ID() string { return p.id }

func (p *callsProvider) Stream(_ context.Context, req llm.Request) iter.Seq2[llm.Event, error] {
	return func(yield func(llm.Event, error) bool) {
		p.mu.Lock()
		c := p.calls[min(p.n, len(p.calls)-1)]
		p.n++
		p.mu.Unlock()
		for _, d := range c.text {
			if !yield(llm.Event{Kind: llm.EventText, Text: d}, nil) {
				return
			}
		}
		if c.err != nil {
			e := *c.err
			e.Provider, e.Model = p.id, req.Model
			yield(llm.Event{}, &e)
			return
		}
		for _, tc := range c.tools {
			if !yield(llm.Event{Kind: llm.EventToolCall, ToolCall: tc}, nil) {
				return
			}
		}
		yield(llm.Event{Kind: llm.EventDone}, nil)
	}
}

func (p *callsProvider) count() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.n
}

// callsEngine runs an engine on providers (the first is primary) with a
// "lookup" tool.
func callsEngine(t *testing.T, o Options, ps ...*callsProvider) (*Engine, store.Store) {
	t.Helper()
	_, st := newEngine(t, &echoProvider{})
	providers := map[string]llm.Provider{}
	for _, p := range ps {
		providers[p.id] = p
		o.Models = append(o.Models, llm.Ref{Provider: p.id, Model: "m"})
	}
	tools := &agent.Tools{}
	if err := tools.Add(agent.Tool{Spec: llm.Tool{Name: "lookup", Parameters: map[string]any{"type": "object"}},
		Call: func(context.Context, json.RawMessage) (string, error) { return "found", nil }}); err != nil {
		t.Fatal(err)
	}
	o.Store = st
	o.Runner = agent.NewRunner(agent.Options{Providers: providers, MaxTokens: 100, ContextTokens: 10000, Tools: tools})
	o.Location = t0.Location()
	return New(o), st
}

var lookup = []llm.ToolCall{{ID: "t1", Name: "lookup", Arguments: "{}"}}

func groupMessage(id, text string) msg.Message {
	m := message(id, "g1", text, t0)
	m.Peer = msg.Peer{Kind: msg.Group, ID: "g1"}
	return m
}

// TestSilentReplyLeaksNowhere: NO_REPLY is never shown live, never sent
// glued to the text of an earlier tool round, and never shown as said in
// the stored transcript's view; a trailing token is stripped everywhere.
func TestSilentReplyLeaksNowhere(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		blocks := &reply.ChunkOptions{MinChars: 1, MaxChars: 200, BreakOn: reply.BreakParagraph}
		p := &callsProvider{id: "a", calls: []call{{text: []string{"Let me check"}, tools: lookup}, {text: []string{"NO_", "REPLY"}}}}
		e, _ := callsEngine(t, Options{Blocks: blocks}, p)
		r := &recorder{}
		if err := e.Dispatch(context.Background(), groupMessage("1", "hi"), r); err != nil {
			t.Fatal(err)
		}
		for _, out := range r.delivered {
			if strings.Contains(out.Text, "NO") {
				t.Errorf("the silent token leaked into a block: %q", out.Text)
			}
		}
		if diff := cmp.Diff([]string{"Let me check"}, outTexts(r.delivered)); diff != "" {
			t.Errorf("blocks (-want +got):\n%s", diff)
		}

		live := &liveRecorder{}
		p2 := &callsProvider{id: "a", calls: []call{{text: []string{"N", "O_RE", "PLY"}}}}
		e2, st := callsEngine(t, Options{}, p2)
		if err := e2.Dispatch(context.Background(), message("2", "b", "hi", t0), live); err != nil {
			t.Fatal(err)
		}
		if len(live.partials) != 0 || len(live.delivered) != 0 {
			t.Errorf("a silent reply showed %q and delivered %q", live.partials, outTexts(live.delivered))
		}
		tr, _ := st.Transcript(context.Background(), "agent:main:webchat:direct:b")
		if len(tr) != 2 || tr[1].Text != reply.SilentToken {
			t.Errorf("the transcript keeps the silence as the token, for the model: %+v", tr)
		}

		trailing := &liveRecorder{}
		p3 := &callsProvider{id: "a", calls: []call{{text: []string{"Sure!", " NO_", "REPLY"}}}}
		e3, st3 := callsEngine(t, Options{}, p3)
		if err := e3.Dispatch(context.Background(), message("3", "c", "hi", t0), trailing); err != nil {
			t.Fatal(err)
		}
		if got := strings.Join(trailing.partials, ""); got != "Sure!" {
			t.Errorf("shown live %q", got)
		}
		if diff := cmp.Diff([]string{"Sure!"}, outTexts(trailing.delivered)); diff != "" {
			t.Errorf("delivered (-want +got):\n%s", diff)
		}
		tr3, _ := st3.Transcript(context.Background(), "agent:main:webchat:direct:c")
		if len(tr3) != 2 || tr3[1].Text != "Sure!" {
			t.Errorf("stored %+v", tr3)
		}
	})
}

// TestToolRoundsAreSeparated: the text of two model calls of one turn is
// joined with a blank line, live and whole.
func TestToolRoundsAreSeparated(t *testing.T) {
	p := &callsProvider{id: "a", calls: []call{{text: []string{"Let me check."}, tools: lookup}, {text: []string{"It is 3."}}}}
	e, _ := callsEngine(t, Options{}, p)
	live := &liveRecorder{}
	if err := e.Dispatch(context.Background(), message("1", "b", "hi", t0), live); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(live.partials, ""); got != "Let me check.\n\nIt is 3." {
		t.Errorf("live %q", got)
	}
	if diff := cmp.Diff([]string{"Let me check.\n\nIt is 3."}, outTexts(live.delivered)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

// TestMidStreamFailureIsNotTheAnswer: on a channel that shows whole
// messages, text streamed by a call that then fails reached no one: the
// call is retried, then the next model answers, and only its answer goes
// out.
func TestMidStreamFailureIsNotTheAnswer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		server := &llm.Error{Class: llm.Retryable, Reason: llm.ReasonServer, Status: 500}
		a := &callsProvider{id: "a", calls: []call{{text: []string{"The answer is 4"}, err: server}}}
		b := &callsProvider{id: "b", calls: []call{{text: []string{"The answer is 42."}}}}
		e, st := callsEngine(t, Options{}, a, b)
		r := &recorder{}
		if err := e.Dispatch(context.Background(), groupMessage("1", "question"), r); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]string{"The answer is 42."}, outTexts(r.delivered)); diff != "" {
			t.Errorf("(-want +got):\n%s", diff)
		}
		if a.count() != 2 || b.count() != 1 {
			t.Errorf("calls: primary %d (want the call and one retry), fallback %d", a.count(), b.count())
		}
		tr, _ := st.Transcript(context.Background(), "agent:main:webchat:group:g1")
		if len(tr) != 2 || tr[1].Text != "The answer is 42." || tr[1].Partial {
			t.Errorf("transcript %+v", tr)
		}
	})
}

// TestFailureNotices: a failed turn never posts into a group; a direct
// chat is told which model failed and how, after what it already saw.
func TestFailureNotices(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		limited := &llm.Error{Class: llm.Retryable, Reason: llm.ReasonRateLimit, Status: 429}
		a := &callsProvider{id: "a", calls: []call{{err: limited}}}
		e, _ := callsEngine(t, Options{Locale: texts.EN}, a)
		group := &recorder{}
		if err := e.Dispatch(context.Background(), groupMessage("1", "hi"), group); err != nil {
			t.Fatal(err)
		}
		if len(group.delivered) != 0 {
			t.Errorf("a group got %q", outTexts(group.delivered))
		}
		direct := &recorder{}
		if err := e.Dispatch(context.Background(), message("2", "b", "hi", t0), direct); err != nil {
			t.Fatal(err)
		}
		if got := outTexts(direct.delivered); len(got) != 1 || !strings.Contains(got[0], "a/m refused the request because of its rate limit (HTTP 429)") || !direct.delivered[0].IsError {
			t.Errorf("direct chat got %q", got)
		}

		cut := &callsProvider{id: "a", calls: []call{{text: []string{"Half of it"}, err: &llm.Error{Class: llm.Retryable, Reason: llm.ReasonNetwork}}}}
		e2, _ := callsEngine(t, Options{Locale: texts.EN}, cut)
		live := &liveRecorder{}
		if err := e2.Dispatch(context.Background(), message("3", "c", "hi", t0), live); err != nil {
			t.Fatal(err)
		}
		if got := outTexts(live.delivered); len(got) != 1 || !strings.HasPrefix(got[0], "Half of it\n\n⚠️ No reply: a/m could not be reached") || !live.delivered[0].IsError {
			t.Errorf("a live view keeps what it showed and learns of the failure: %q", got)
		}
	})
}

// TestRepeatedBlocksAreKept: a reply that repeats a paragraph keeps every
// block.
func TestRepeatedBlocksAreKept(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		blocks := &reply.ChunkOptions{MinChars: 5, MaxChars: 200, BreakOn: reply.BreakParagraph}
		song := []string{"La la la, sing along.\n\n", "Second verse here.\n\n", "La la la, sing along."}
		p := &callsProvider{id: "a", calls: []call{{text: song}}}
		e, _ := callsEngine(t, Options{Blocks: blocks}, p)
		r := &recorder{}
		if err := e.Dispatch(context.Background(), message("1", "b", "sing", t0), r); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]string{"La la la, sing along.", "Second verse here.", "La la la, sing along."}, outTexts(r.delivered)); diff != "" {
			t.Errorf("(-want +got):\n%s", diff)
		}
	})
}

// endRecorder is a live view that records when it is told its turn is
// over, and what had been delivered by then.
type endRecorder struct {
	liveRecorder
	ended []int
}

func (r *endRecorder) EndLive(context.Context) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ended = append(r.ended, len(r.delivered))
}

// TestLiveViewIsToldTheTurnIsOver: a live view learns once that its turn
// is over, after the reply's delivery, also through a wrapper (as the
// receive pipeline wraps repliers); a view that is not live is not told.
func TestLiveViewIsToldTheTurnIsOver(t *testing.T) {
	e, _ := newEngine(t, &echoProvider{})
	live := &endRecorder{}
	if err := e.Dispatch(context.Background(), message("1", "a", "hi", t0), live); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]int{1}, live.ended); diff != "" {
		t.Errorf("deliveries when the view was told the turn is over (-want +got):\n%s", diff)
	}

	wrapped := &endRecorder{}
	if err := e.Dispatch(context.Background(), message("2", "b", "hi", t0), struct{ channel.Wrapper }{channel.Wrapper{Replier: wrapped}}); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]int{1}, wrapped.ended); diff != "" {
		t.Errorf("through a wrapper (-want +got):\n%s", diff)
	}

	whole := &wholeEnder{}
	if err := e.Dispatch(context.Background(), message("3", "c", "hi", t0), whole); err != nil {
		t.Fatal(err)
	}
	if whole.ended != 0 || len(whole.delivered) != 1 {
		t.Errorf("a replier without a live view was told %d times; delivered %d", whole.ended, len(whole.delivered))
	}
}

// wholeEnder has EndLive but shows no partial text.
type wholeEnder struct {
	recorder
	ended int
}

func (r *wholeEnder) EndLive(context.Context) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ended++
}
