package engine

import (
	"context"
	"errors"
	"iter"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/pincerbot/pincer/internal/agent"
	"github.com/pincerbot/pincer/internal/channel"
	"github.com/pincerbot/pincer/internal/llm"
	"github.com/pincerbot/pincer/internal/msg"
)

// beatProvider answers heartbeat prompts with beatReply and anything else
// with "ok"; gate, when set, holds ordinary replies.
type beatProvider struct {
	beatReply string
	gate      chan struct{}
	mu        sync.Mutex
	models    []string
}

func (p *beatProvider) ID() string { return "fake" }

func (p *beatProvider) Stream(ctx context.Context, req llm.Request) iter.Seq2[llm.Event, error] {
	return func(yield func(llm.Event, error) bool) {
		p.mu.Lock()
		p.models = append(p.models, req.Model)
		p.mu.Unlock()
		text := "ok"
		if strings.Contains(req.Messages[len(req.Messages)-1].Text, "Heartbeat:") {
			text = p.beatReply
		} else if p.gate != nil {
			select {
			case <-p.gate:
			case <-ctx.Done():
				yield(llm.Event{}, llm.Transport("fake", req.Model, ctx, ctx.Err()))
				return
			}
		}
		if yield(llm.Event{Kind: llm.EventText, Text: text}, nil) {
			yield(llm.Event{Kind: llm.EventDone}, nil)
		}
	}
}

type sendAdapter struct {
	mu   sync.Mutex
	sent []msg.Outbound
}

func (a *sendAdapter) Name() msg.ChannelID                           { return "webchat" }
func (a *sendAdapter) Run(ctx context.Context, _ channel.Sink) error { <-ctx.Done(); return nil }
func (a *sendAdapter) Send(_ context.Context, out msg.Outbound) (msg.MessageID, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.sent = append(a.sent, out)
	return "s", nil
}

func (a *sendAdapter) outTexts() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return outTexts(a.sent)
}

func heartbeatEngine(t *testing.T, p *beatProvider, hb Heartbeat) *Engine {
	_, st := newEngine(t, &echoProvider{})
	runner := agent.NewRunner(agent.Options{Providers: map[string]llm.Provider{"fake": p}, MaxTokens: 100, ContextTokens: 10000})
	return New(Options{Store: st, Runner: runner, Models: []llm.Ref{{Provider: "fake", Model: "main"}}, Heartbeat: hb})
}

func runHeartbeats(t *testing.T, e *Engine, a *sendAdapter) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() {
		done <- e.RunHeartbeat(ctx, func(ch msg.ChannelID) (channel.Adapter, bool) { return a, ch == "webchat" })
	}()
	return func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}
}

func TestHeartbeatAckIsNotDelivered(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := &beatProvider{beatReply: "All quiet. HEARTBEAT_OK"}
		e := heartbeatEngine(t, p, Heartbeat{Every: 30 * time.Minute, Model: llm.Ref{Provider: "fake", Model: "cheap"}})
		a := &sendAdapter{}
		stop := runHeartbeats(t, e, a)
		defer stop()
		time.Sleep(30 * time.Minute) // no conversation yet: nothing to check on
		synctest.Wait()
		if len(p.models) != 0 {
			t.Fatalf("a heartbeat ran with no conversation: %v", p.models)
		}
		if err := e.Dispatch(context.Background(), message("1", "b1", "hi", t0), &recorder{}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(30 * time.Minute)
		synctest.Wait()
		if len(p.models) != 2 || p.models[1] != "cheap" {
			t.Errorf("models %v; the heartbeat runs on its own model", p.models)
		}
		if got := a.outTexts(); len(got) != 0 {
			t.Errorf("an acknowledgement was delivered: %q", got)
		}
	})
}

func TestHeartbeatReportIsDelivered(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		report := "Reminder: " + strings.Repeat("you asked me to follow up on the deploy. ", 10)
		p := &beatProvider{beatReply: report}
		e := heartbeatEngine(t, p, Heartbeat{Every: time.Hour})
		a := &sendAdapter{}
		if err := e.Dispatch(context.Background(), message("1", "b1", "hi", t0), &recorder{}); err != nil {
			t.Fatal(err)
		}
		stop := runHeartbeats(t, e, a)
		defer stop()
		time.Sleep(time.Hour)
		synctest.Wait()
		if got := a.outTexts(); len(got) != 1 || got[0] != report {
			t.Errorf("delivered %q", got)
		}
		if out := a.sent[0]; out.Peer.ID != "b1" || out.Peer.Kind != msg.Direct {
			t.Errorf("delivered to %v", out.Peer)
		}
	})
}

func TestHeartbeatSkippedWhileBusy(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := &beatProvider{beatReply: "something to say that is long enough", gate: make(chan struct{})}
		e := heartbeatEngine(t, p, Heartbeat{Every: time.Hour})
		a := &sendAdapter{}
		done := make(chan error)
		go func() { done <- e.Dispatch(context.Background(), message("1", "b1", "long task", t0), &recorder{}) }()
		synctest.Wait()
		err := e.Beat(func(msg.ChannelID) (channel.Adapter, bool) { return a, true })
		if !errors.Is(err, ErrBusy) {
			t.Errorf("beat on a busy session: %v", err)
		}
		close(p.gate)
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if len(p.models) != 1 || len(a.outTexts()) != 0 {
			t.Errorf("the skipped heartbeat ran: %v %q", p.models, a.outTexts())
		}
	})
}

func TestHeartbeatOffByDefault(t *testing.T) {
	e := heartbeatEngine(t, &beatProvider{}, Heartbeat{})
	if err := e.RunHeartbeat(context.Background(), nil); err != nil {
		t.Errorf("RunHeartbeat with no interval must return at once: %v", err)
	}
}

func TestHeartbeatOnSchedule(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := &beatProvider{beatReply: strings.Repeat("report ", 60)}
		start := time.Now()
		// Beats at 10 and 30 minutes past the start, then never again.
		at := []time.Duration{10 * time.Minute, 30 * time.Minute}
		e := heartbeatEngine(t, p, Heartbeat{Schedule: func(now time.Time) time.Time {
			for _, d := range at {
				if start.Add(d).After(now) {
					return start.Add(d)
				}
			}
			return time.Time{}
		}})
		if err := e.Dispatch(context.Background(), message("1", "b1", "hi", t0), &recorder{}); err != nil {
			t.Fatal(err)
		}
		a := &sendAdapter{}
		stop := runHeartbeats(t, e, a)
		defer stop()
		time.Sleep(9 * time.Minute)
		synctest.Wait()
		if n := len(a.outTexts()); n != 0 {
			t.Fatalf("%d beats before the schedule", n)
		}
		time.Sleep(2 * time.Hour)
		if n := len(a.outTexts()); n != 2 {
			t.Errorf("%d beats, want the 2 scheduled", n)
		}
	})
}
