package engine

import (
	"context"
	"iter"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/pincerbot/pincer/internal/agent"
	"github.com/pincerbot/pincer/internal/command"
	"github.com/pincerbot/pincer/internal/limits"
	"github.com/pincerbot/pincer/internal/llm"
	"github.com/pincerbot/pincer/internal/msg"
	"github.com/pincerbot/pincer/internal/store/sqlite"
	"github.com/pincerbot/pincer/internal/texts"
	"github.com/pincerbot/pincer/internal/trace"
)

// usageProvider answers "ok" and reports in and out tokens per call.
type usageProvider struct {
	mu      sync.Mutex
	calls   int
	in, out int64
}

func (p *usageProvider) ID() string { return "fake" }

func (p *usageProvider) Stream(context.Context, llm.Request) iter.Seq2[llm.Event, error] {
	return func(yield func(llm.Event, error) bool) {
		p.mu.Lock()
		p.calls++
		p.mu.Unlock()
		if yield(llm.Event{Kind: llm.EventText, Text: "ok"}, nil) {
			yield(llm.Event{Kind: llm.EventDone, Usage: llm.Usage{InputTokens: p.in, OutputTokens: p.out}}, nil)
		}
	}
}

func (p *usageProvider) count() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.calls
}

// limitedEngine is an engine whose turns the limits s hold, days counted
// in loc, with a trace.
func limitedEngine(t *testing.T, p llm.Provider, s limits.Settings, loc *time.Location) (*Engine, *trace.Recorder) {
	t.Helper()
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "p.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	tr := trace.New(trace.Options{})
	runner := agent.NewRunner(agent.Options{Providers: map[string]llm.Provider{"fake": p}, MaxTokens: 100, ContextTokens: 10000})
	e := New(Options{Store: st, Runner: runner, Models: []llm.Ref{{Provider: "fake", Model: "m"}}, Trace: tr,
		Location: loc, Locale: texts.EN, Policy: command.Policy{AllowFrom: []string{"*"}},
		Limits: limits.New(limits.Options{Settings: func(msg.Message) limits.Settings { return s }, Store: st, Location: loc})})
	return e, tr
}

// limitStep is the limit step of m's trace, if any.
func limitStep(t *testing.T, tr *trace.Recorder, m msg.Message) (trace.Step, bool) {
	t.Helper()
	rec, ok, err := tr.Get(context.Background(), trace.KeyOf(m))
	if err != nil || !ok {
		return trace.Step{}, false
	}
	for _, s := range rec.Steps {
		if s.Stage == trace.StageLimit {
			return s, true
		}
	}
	return trace.Step{}, false
}

func groupTurn(id, group, user, text string) msg.Message {
	m := message(id, group, text, t0)
	m.Peer.Kind = msg.Group
	m.Sender.ID = msg.UserID(user)
	return m
}

// TestMessagesPerMinuteHoldsTheThirdTurn: with perUser messagesPerMinute
// 2, a person's third turn in a minute makes no model call; its trace
// names the limit and when it resets; a direct chat is told once per
// window, a group nothing; commands still run; the next minute's turns
// run again.
func TestMessagesPerMinuteHoldsTheThirdTurn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := &usageProvider{}
		e, tr := limitedEngine(t, p, limits.Settings{PerUser: limits.Limit{MessagesPerMinute: 2}}, time.UTC)
		ctx := context.Background()
		r := &recorder{}
		third := twoTurnsAndOne(t, e, p, r)
		if p.count() != 2 {
			t.Errorf("the third turn called the model (%d calls)", p.count())
		}
		step, ok := limitStep(t, tr, third)
		if !ok || step.Outcome != "held" || !strings.Contains(step.Detail, "limits.perUser.messagesPerMinute = 2 reached") || !strings.Contains(step.Detail, "resets at 2000-01-01 00:01:00 UTC") {
			t.Errorf("trace of the third turn: %+v", step)
		}
		if err := e.Dispatch(ctx, message("4", "b1", "hi", t0), r); err != nil {
			t.Fatal(err)
		}
		var notices []string
		for _, out := range r.delivered {
			if out.Text != "ok" {
				notices = append(notices, out.Text)
			}
		}
		want := "⏳ No reply: the limit here is 2 per minute. Please try again after 00:01:00."
		if len(notices) != 1 || notices[0] != want {
			t.Errorf("direct chat notices %q, want one: %q", notices, want)
		}
		// A command is no turn: it is answered over the limit.
		before := len(r.delivered)
		if err := e.Dispatch(ctx, message("5", "b1", "/status", t0), r); err != nil {
			t.Fatal(err)
		}
		if len(r.delivered) != before+1 || !strings.Contains(r.delivered[before].Text, "Tokens today") {
			t.Errorf("/status over the limit: %+v", r.delivered[before:])
		}

		// A group hears nothing.
		g := &recorder{}
		for _, id := range []string{"g1", "g2", "g3"} {
			if err := e.Dispatch(ctx, groupTurn(id, "700", "u9", "hi"), g); err != nil {
				t.Fatal(err)
			}
		}
		if p.count() != 4 || len(g.delivered) != 2 {
			t.Errorf("group: %d model calls, delivered %+v", p.count(), g.delivered)
		}
		if _, ok := limitStep(t, tr, groupTurn("g3", "700", "u9", "")); !ok {
			t.Error("the held group turn has no limit step")
		}

		time.Sleep(time.Minute)
		if err := e.Dispatch(ctx, message("6", "b1", "hi", t0), r); err != nil {
			t.Fatal(err)
		}
		if p.count() != 5 {
			t.Errorf("the next minute's turn made no model call (%d calls)", p.count())
		}
	})
}

// TestTokensPerDayHoldsUntilMidnight: a fake model reports 40 tokens in
// and 20 out per call; with perUser tokensPerDay 100 the turn after 120
// tokens makes no model call, until midnight in the envelope's timezone;
// /status shows the day's use against the budget.
func TestTokensPerDayHoldsUntilMidnight(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cst := time.FixedZone("CST", 8*3600)
		p := &usageProvider{in: 40, out: 20}
		e, tr := limitedEngine(t, p, limits.Settings{PerUser: limits.Limit{TokensPerDay: 100}}, cst)
		ctx := context.Background()
		r := &recorder{}
		held := twoTurnsAndOne(t, e, p, r)
		if p.count() != 2 {
			t.Fatalf("the turn after the budget called the model (%d calls)", p.count())
		}
		step, _ := limitStep(t, tr, held)
		if !strings.Contains(step.Detail, "limits.perUser.tokensPerDay = 100 reached (120 tokens used today)") || !strings.Contains(step.Detail, "resets at 2000-01-02 00:00:00 CST") {
			t.Errorf("trace: %+v", step)
		}
		if last := r.delivered[len(r.delivered)-1].Text; last != "⏳ No reply: today's budget of 100 tokens is used up. It resets at 2000-01-02 00:00 CST." {
			t.Errorf("notice %q", last)
		}
		before := len(r.delivered)
		if err := e.Dispatch(ctx, message("4", "b1", "/status", t0), r); err != nil {
			t.Fatal(err)
		}
		if got := r.delivered[before].Text; !strings.Contains(got, "Tokens today: 120 in this chat, 120 of 100 by you") {
			t.Errorf("/status says %q", got)
		}
		// Midnight in UTC+8 is 16:00 UTC; the bubble began at 00:00 UTC.
		time.Sleep(16*time.Hour - time.Second)
		if err := e.Dispatch(ctx, message("5", "b1", "hi", t0), r); err != nil {
			t.Fatal(err)
		}
		if p.count() != 2 {
			t.Errorf("a second before midnight: %d model calls", p.count())
		}
		time.Sleep(time.Second)
		if err := e.Dispatch(ctx, message("6", "b1", "hi", t0), r); err != nil {
			t.Fatal(err)
		}
		if p.count() != 3 {
			t.Errorf("after midnight: %d model calls, want 3", p.count())
		}
	})
}

// twoTurnsAndOne dispatches two messages of b1, each of which must call
// the model, then a third, and returns the third.
func twoTurnsAndOne(t *testing.T, e *Engine, p *usageProvider, r *recorder) msg.Message {
	t.Helper()
	ctx := context.Background()
	for i, id := range []string{"1", "2"} {
		if err := e.Dispatch(ctx, message(id, "b1", "hi", t0), r); err != nil {
			t.Fatal(err)
		}
		if p.count() != i+1 {
			t.Fatalf("turn %s: %d model calls", id, p.count())
		}
	}
	third := message("3", "b1", "hi", t0)
	if err := e.Dispatch(ctx, third, r); err != nil {
		t.Fatal(err)
	}
	return third
}
