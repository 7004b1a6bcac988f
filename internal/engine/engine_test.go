package engine

import (
	"context"
	"errors"
	"iter"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/pincerbot/pincer/internal/agent"
	"github.com/pincerbot/pincer/internal/channel"
	"github.com/pincerbot/pincer/internal/llm"
	"github.com/pincerbot/pincer/internal/msg"
	"github.com/pincerbot/pincer/internal/reply"
	"github.com/pincerbot/pincer/internal/store"
	"github.com/pincerbot/pincer/internal/store/sqlite"
	"github.com/pincerbot/pincer/internal/texts"
)

// echoProvider replies "echo: <last user text>" in two deltas and records
// every request. With hold set, it streams the first delta and then waits for
// hold to close or the call to be cancelled.
type echoProvider struct {
	mu   sync.Mutex
	reqs []llm.Request
	hold chan struct{}
	fail *llm.Error
}

func (p *echoProvider) ID() string { return "fake" }

func (p *echoProvider) Stream(ctx context.Context, req llm.Request) iter.Seq2[llm.Event, error] {
	return func(yield func(llm.Event, error) bool) {
		p.mu.Lock()
		p.reqs = append(p.reqs, req)
		p.mu.Unlock()
		if p.fail != nil {
			yield(llm.Event{}, p.fail)
			return
		}
		last := req.Messages[len(req.Messages)-1].Text
		if !yield(llm.Event{Kind: llm.EventText, Text: "echo: "}, nil) {
			return
		}
		if p.hold != nil {
			select {
			case <-p.hold:
			case <-ctx.Done():
				yield(llm.Event{}, llm.Transport("fake", req.Model, ctx, ctx.Err()))
				return
			}
		}
		if !yield(llm.Event{Kind: llm.EventText, Text: last[strings.Index(last, "] ")+2:]}, nil) {
			return
		}
		yield(llm.Event{Kind: llm.EventDone}, nil)
	}
}

type recorder struct {
	mu        sync.Mutex
	partials  []string
	delivered []msg.Outbound
}

func (r *recorder) Partial(d string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.partials = append(r.partials, d)
}

func (r *recorder) Deliver(_ context.Context, out msg.Outbound) (msg.MessageID, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.delivered = append(r.delivered, out)
	return "out-1", nil
}

func newEngine(t *testing.T, p llm.Provider) (*Engine, store.Store) {
	t.Helper()
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "p.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	runner := agent.NewRunner(agent.Options{Providers: map[string]llm.Provider{"fake": p}, MaxTokens: 100, ContextTokens: 10000})
	e := New(Options{Store: st, Runner: runner, Models: []llm.Ref{{Provider: "fake", Model: "m"}},
		System: func() string { return "sys" }, Location: time.UTC, Locale: texts.EN})
	return e, st
}

var t0 = time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)

func message(id, peer, text string, at time.Time) msg.Message {
	return msg.Message{
		ID: msg.MessageID(id), Channel: "webchat", Account: msg.DefaultAccount,
		Peer: msg.Peer{Kind: msg.Direct, ID: peer}, Sender: msg.Sender{ID: msg.UserID(peer), Name: "Ann"},
		Time: at, Text: text, Segments: []msg.Segment{msg.Text(text)},
	}
}

func TestDispatchStreamsDeliversAndPersists(t *testing.T) {
	p := &echoProvider{}
	e, st := newEngine(t, p)
	r := &liveRecorder{}
	if err := e.Dispatch(context.Background(), message("1", "b1", "hi", t0), r); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(r.partials, ""); got != "echo: hi" {
		t.Errorf("streamed %q", got)
	}
	if len(r.delivered) != 1 || r.delivered[0].Text != "echo: hi" || r.delivered[0].Peer.ID != "b1" || r.delivered[0].IsError {
		t.Fatalf("delivered %+v", r.delivered)
	}
	tr, err := st.Transcript(context.Background(), "agent:main:webchat:direct:b1")
	if err != nil {
		t.Fatal(err)
	}
	if len(tr) != 2 || tr[0].Text != "[webchat Ann Mon 2026-11-30 10:00 UTC] hi" || tr[1].Text != "echo: hi" || tr[1].Partial {
		t.Errorf("transcript = %+v", tr)
	}
	if p.reqs[0].System != "sys" {
		t.Errorf("system prompt = %q", p.reqs[0].System)
	}
}

func TestSecondTurnCarriesTranscript(t *testing.T) {
	p := &echoProvider{}
	e, _ := newEngine(t, p)
	r := &recorder{}
	for i, text := range []string{"one", "two"} {
		m := message(string(rune('a'+i)), "b1", text, t0.Add(time.Duration(i)*2*time.Minute))
		if err := e.Dispatch(context.Background(), m, r); err != nil {
			t.Fatal(err)
		}
	}
	got := p.reqs[1].Messages
	if len(got) != 3 || got[1].Text != "echo: one" || got[2].Text != "[webchat Ann +2min Mon 2026-11-30 10:02 UTC] two" {
		t.Errorf("second request messages = %+v", got)
	}
	// Another browser starts its own session.
	if err := e.Dispatch(context.Background(), message("c", "b2", "three", t0), r); err != nil {
		t.Fatal(err)
	}
	if n := len(p.reqs[2].Messages); n != 1 {
		t.Errorf("a new peer saw %d messages of someone else's session", n)
	}
}

func TestDuplicateIsDroppedOnce(t *testing.T) {
	p := &echoProvider{}
	e, _ := newEngine(t, p)
	r := &recorder{}
	m := message("same", "b1", "hi", t0)
	if err := e.Dispatch(context.Background(), m, r); err != nil {
		t.Fatal(err)
	}
	if err := e.Dispatch(context.Background(), m, r); !errors.Is(err, channel.ErrDuplicate) {
		t.Fatalf("second dispatch: %v", err)
	}
	if len(p.reqs) != 1 || len(r.delivered) != 1 {
		t.Errorf("a duplicate produced %d model calls, %d replies", len(p.reqs), len(r.delivered))
	}
}

func TestFailureDeliversNotice(t *testing.T) {
	p := &echoProvider{fail: &llm.Error{Provider: "fake", Model: "m", Class: llm.Fatal, Reason: llm.ReasonAuth, Status: 401}}
	e, st := newEngine(t, p)
	r := &recorder{}
	if err := e.Dispatch(context.Background(), message("1", "b1", "hi", t0), r); err != nil {
		t.Fatal(err)
	}
	if len(r.delivered) != 1 || !r.delivered[0].IsError || !strings.Contains(r.delivered[0].Text, "fake/m rejected pincer's API key (HTTP 401)") {
		t.Fatalf("delivered %+v", r.delivered)
	}
	tr, _ := st.Transcript(context.Background(), "agent:main:webchat:direct:b1")
	if len(tr) != 1 {
		t.Errorf("an error notice must not enter the transcript: %+v", tr)
	}
}

func TestCloseWaitsForInflightTurn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := &echoProvider{hold: make(chan struct{})}
		e, st := newEngine(t, p)
		r := &recorder{}
		done := make(chan error)
		go func() { done <- e.Dispatch(context.Background(), message("1", "b1", "hi", t0), r) }()
		synctest.Wait()
		closed := make(chan error)
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			closed <- e.Close(ctx)
		}()
		synctest.Wait()
		if err := e.Dispatch(context.Background(), message("2", "b1", "late", t0), r); !errors.Is(err, channel.ErrClosed) {
			t.Errorf("dispatch during close: %v", err)
		}
		time.Sleep(5 * time.Second)
		close(p.hold) // the model finishes within the grace period
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if err := <-closed; err != nil {
			t.Errorf("close: %v", err)
		}
		if len(r.delivered) != 1 || r.delivered[0].Text != "echo: hi" {
			t.Errorf("delivered %+v", r.delivered)
		}
		tr, _ := st.Transcript(context.Background(), "agent:main:webchat:direct:b1")
		if len(tr) != 2 || tr[1].Partial {
			t.Errorf("transcript %+v", tr)
		}
	})
}

func TestCloseGraceExpiryPersistsPartialReply(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := &echoProvider{hold: make(chan struct{})}
		defer close(p.hold)
		e, st := newEngine(t, p)
		r := &recorder{}
		done := make(chan error)
		go func() { done <- e.Dispatch(context.Background(), message("1", "b1", "hi", t0), r) }()
		synctest.Wait()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		start := time.Now()
		if err := e.Close(ctx); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("close: %v", err)
		}
		if waited := time.Since(start); waited != 30*time.Second {
			t.Errorf("close returned after %v, want the 30s grace", waited)
		}
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if len(r.delivered) != 1 || r.delivered[0].Text != "echo: " {
			t.Errorf("the partial reply must still be delivered: %+v", r.delivered)
		}
		tr, _ := st.Transcript(context.Background(), "agent:main:webchat:direct:b1")
		if len(tr) != 2 || !tr[1].Partial || tr[1].Text != "echo: " {
			t.Errorf("transcript %+v", tr)
		}
	})
}

func TestErrorNotice(t *testing.T) {
	tests := []struct {
		err  error
		want string
	}{
		{&llm.Error{Provider: "openai", Model: "gpt-4o", Class: llm.Retryable, Reason: llm.ReasonRateLimit, Status: 429}, "openai/gpt-4o refused the request because of its rate limit (HTTP 429)"},
		{&llm.Error{Provider: "anthropic", Model: "claude", Class: llm.Retryable, Reason: llm.ReasonOverloaded, Status: 529}, "anthropic/claude is overloaded (HTTP 529)"},
		{&llm.Error{Provider: "openai", Model: "gpt-4o", Class: llm.Retryable, Reason: llm.ReasonTimeout}, "openai/gpt-4o timed out without answering"},
		{&llm.Error{Provider: "openai", Class: llm.Retryable, Reason: llm.ReasonNetwork}, "openai could not be reached"},
		{&llm.Error{Class: llm.Retryable, Reason: llm.ReasonTruncated}, "the model broke off its answer"},
		{&llm.Error{Provider: "openai", Model: "gpt-4o", Class: llm.Fatal, Reason: llm.ReasonAuth, Status: 401}, "openai/gpt-4o rejected pincer's API key (HTTP 401)"},
		{&llm.Error{Provider: "openai", Model: "x", Class: llm.Fallback, Reason: llm.ReasonNotFound, Status: 404}, "does not know this model"},
		{context.Canceled, "interrupted"},
		{agent.ErrNoModel, "no usable model"},
		{errors.New("x"), "something went wrong inside pincer"},
	}
	for _, tt := range tests {
		if got := ErrorNotice(texts.EN, tt.err); !strings.Contains(got, tt.want) {
			t.Errorf("ErrorNotice(%v) = %q, want it to mention %q", tt.err, got, tt.want)
		}
	}
}

// TestErrorNoticeIsChineseByDefault: the zero locale tells a direct chat
// in Chinese which model failed and how.
func TestErrorNoticeIsChineseByDefault(t *testing.T) {
	tests := []struct {
		err  error
		want string
	}{
		{&llm.Error{Provider: "deepseek", Model: "deepseek-chat", Class: llm.Retryable, Reason: llm.ReasonRateLimit, Status: 429}, "⚠️ 没有回复：deepseek/deepseek-chat 触发了限流（HTTP 429），请稍后再试。"},
		{&llm.Error{Provider: "qwen", Class: llm.Retryable, Reason: llm.ReasonNetwork}, "⚠️ 没有回复：无法连接 qwen，请稍后再试。"},
		{&llm.Error{Provider: "openai", Model: "gpt-4o", Class: llm.Retryable, Reason: llm.ReasonServer, Status: 500}, "⚠️ 没有回复：openai/gpt-4o 服务端出错（HTTP 500），请稍后再试。"},
		{context.Canceled, "⚠️ 回复被中断了。"},
	}
	for _, tt := range tests {
		var zero texts.Locale
		if got := ErrorNotice(zero, tt.err); got != tt.want {
			t.Errorf("ErrorNotice(%v) = %q, want %q", tt.err, got, tt.want)
		}
	}
}

// scriptProvider streams fixed deltas.
type scriptProvider struct{ deltas []string }

func (p scriptProvider) ID() string { return "fake" }

func (p scriptProvider) Stream(ctx context.Context, req llm.Request) iter.Seq2[llm.Event, error] {
	return func(yield func(llm.Event, error) bool) {
		for _, d := range p.deltas {
			if !yield(llm.Event{Kind: llm.EventText, Text: d}, nil) {
				return
			}
		}
		yield(llm.Event{Kind: llm.EventDone}, nil)
	}
}

// liveRecorder shows partial text live, like the web chat.
type liveRecorder struct{ recorder }

func (*liveRecorder) ShowsPartial() bool { return true }

// typingRecorder records typing indicator changes.
type typingRecorder struct {
	recorder
	typing []bool
}

func (r *typingRecorder) Typing(_ context.Context, on bool) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.typing = append(r.typing, on)
	return nil
}

func newScripted(t *testing.T, o Options, deltas ...string) *Engine {
	t.Helper()
	_, st := newEngine(t, &echoProvider{})
	o.Store = st
	o.Runner = agent.NewRunner(agent.Options{Providers: map[string]llm.Provider{"fake": scriptProvider{deltas}}, MaxTokens: 100, ContextTokens: 10000})
	o.Models = []llm.Ref{{Provider: "fake", Model: "m1"}}
	return New(o)
}

func outTexts(outs []msg.Outbound) []string {
	var s []string
	for _, o := range outs {
		s = append(s, o.Text)
	}
	return s
}

func TestBlockStreamingToWholeMessageChannels(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		blocks := &reply.ChunkOptions{MinChars: 5, MaxChars: 100, BreakOn: reply.BreakParagraph}
		deltas := []string{"First part.\n\n", "Second part.\n\n", "Third."}
		e := newScripted(t, Options{Blocks: blocks, HumanDelay: reply.DelayRange{Min: time.Second, Max: time.Second}}, deltas...)
		r := &recorder{}
		start := time.Now()
		if err := e.Dispatch(context.Background(), message("1", "b", "go", t0), r); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]string{"First part.", "Second part.", "Third."}, outTexts(r.delivered)); diff != "" {
			t.Errorf("blocks (-want +got):\n%s", diff)
		}
		if took := time.Since(start); took != 2*time.Second {
			t.Errorf("three blocks took %v; want the human delay before the second and third only", took)
		}

		live := &liveRecorder{}
		if err := e.Dispatch(context.Background(), message("2", "b", "again", t0), live); err != nil {
			t.Fatal(err)
		}
		if got := outTexts(live.delivered); len(got) != 1 || got[0] != "First part.\n\nSecond part.\n\nThird." {
			t.Errorf("a live channel must get one whole reply: %q", got)
		}
	})
}

func TestSilentReplyIsNotDelivered(t *testing.T) {
	e := newScripted(t, Options{}, "NO_", "REPLY")
	r := &typingRecorder{}
	if err := e.Dispatch(context.Background(), message("1", "b", "hi", t0), r); err != nil {
		t.Fatal(err)
	}
	if len(r.delivered) != 0 {
		t.Errorf("delivered %q", outTexts(r.delivered))
	}
	if diff := cmp.Diff([]bool{true, false}, r.typing); diff != "" {
		t.Errorf("typing must start with the run and stop on a silent outcome (-want +got):\n%s", diff)
	}
}

func TestSilentSuffixIsARealReply(t *testing.T) {
	e := newScripted(t, Options{ResponsePrefix: "[{model}] "}, "Here is the answer. ", "NO_REPLY")
	r := &recorder{}
	if err := e.Dispatch(context.Background(), message("1", "b", "hi", t0), r); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"[m1] Here is the answer."}, outTexts(r.delivered)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

type panicProvider struct{}

func (panicProvider) ID() string { return "fake" }

func (panicProvider) Stream(context.Context, llm.Request) iter.Seq2[llm.Event, error] {
	return func(yield func(llm.Event, error) bool) {
		yield(llm.Event{Kind: llm.EventText, Text: "partial "}, nil)
		panic("provider bug")
	}
}

// TestPanicInRunStillCompletesDispatch: a panic below the agent run is
// contained; typing stops, the reply dispatcher drains and the user hears
// of the failure.
func TestPanicInRunStillCompletesDispatch(t *testing.T) {
	e, st := newEngine(t, panicProvider{})
	r := &typingRecorder{}
	if err := e.Dispatch(context.Background(), message("1", "b1", "hi", t0), r); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]bool{true, false}, r.typing); diff != "" {
		t.Errorf("typing (-want +got):\n%s", diff)
	}
	if got := outTexts(r.delivered); len(got) != 1 || !strings.Contains(got[0], "went wrong") {
		t.Errorf("delivered %q", got)
	}
	tr, _ := st.Transcript(context.Background(), "agent:main:webchat:direct:b1")
	if len(tr) != 1 {
		t.Errorf("transcript %+v", tr)
	}
	// The session is not left locked.
	if err := e.Dispatch(context.Background(), message("2", "b1", "again", t0), &recorder{}); err != nil {
		t.Fatal(err)
	}
}

func TestSessionKeyScopes(t *testing.T) {
	e, _ := newEngine(t, &echoProvider{})
	dm := message("1", "u1", "x", t0)
	group := dm
	group.Peer = msg.Peer{Kind: msg.Group, ID: "g1"}
	if got := e.SessionKey(dm); got != "agent:main:webchat:direct:u1" {
		t.Errorf("dm %q", got)
	}
	if got := e.SessionKey(group); got != "agent:main:webchat:group:g1" {
		t.Errorf("group %q", got)
	}
	e.opts.DMScope, e.opts.GroupScope = ScopeMain, ScopeMain
	if e.SessionKey(dm) != "agent:main:main" || e.SessionKey(group) != "agent:main:main" {
		t.Errorf("main scope: %q %q", e.SessionKey(dm), e.SessionKey(group))
	}
}
