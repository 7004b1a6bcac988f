package cluster

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// holdEvent is one step of a Hold run as a test records it.
type holdEvent struct {
	node  string
	token uint64
	kind  string // "acquired" or "lost"
	cause error  // why the run's context ended, for "lost"
}

// eventLog records events in the order they happened.
type eventLog struct {
	mu     sync.Mutex
	events []holdEvent
	ch     chan holdEvent
}

func newEventLog() *eventLog { return &eventLog{ch: make(chan holdEvent, 1000)} }

func (l *eventLog) add(e holdEvent) {
	l.mu.Lock()
	l.events = append(l.events, e)
	l.mu.Unlock()
	l.ch <- e
}

func (l *eventLog) snapshot() []holdEvent {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]holdEvent(nil), l.events...)
}

// next waits for the next event of kind.
func (l *eventLog) next(t *testing.T, kind string, d time.Duration) holdEvent {
	t.Helper()
	deadline := time.After(d)
	for {
		select {
		case e := <-l.ch:
			if e.kind == kind {
				return e
			}
		case <-deadline:
			t.Fatalf("timed out after %v waiting for a %q event; events so far: %v", d, kind, l.snapshot())
		}
	}
}

// hold starts node.Hold(name) for the test's lifetime; each run records
// "acquired", waits for its context, records "lost" and returns.
func hold(t *testing.T, g *group, n *Node, name string, log *eventLog) {
	g.spawn(func() {
		err := n.Hold(g.ctx, name, func(ctx context.Context, l Lease) {
			log.add(holdEvent{n.Instance(), l.Token, "acquired", nil})
			<-ctx.Done()
			log.add(holdEvent{n.Instance(), l.Token, "lost", context.Cause(ctx)})
		})
		if err != nil && err != ErrClosed {
			t.Errorf("Hold(%s) on %s: %v", name, n.Instance(), err)
		}
	})
}

// Two nodes hold the same lease: one runs at a time, runs that return hand
// the lease over, and the token grows from holder to holder.
func TestHoldOneAtATime(t *testing.T) {
	t.Parallel()
	ts := startServer(t)
	prefix := uniquePrefix()
	ttl := 400 * time.Millisecond
	nodes := []*Node{
		openNode(t, Options{URL: ts.url(), Instance: "a", Prefix: prefix, LeaseTTL: ttl}),
		openNode(t, Options{URL: ts.url(), Instance: "b", Prefix: prefix, LeaseTTL: ttl}),
	}
	g := newGroup(t)

	var running atomic.Int32
	var mu sync.Mutex
	var tokens []uint64
	var holders []string
	enough := make(chan struct{})
	for _, n := range nodes {
		g.spawn(func() {
			err := n.Hold(g.ctx, "conn.onebot.main", func(ctx context.Context, l Lease) {
				if c := running.Add(1); c != 1 {
					t.Errorf("%d runs at once", c)
				}
				defer running.Add(-1)
				mu.Lock()
				tokens = append(tokens, l.Token)
				holders = append(holders, n.Instance())
				if len(tokens) == 6 {
					close(enough)
				}
				mu.Unlock()
				// Work across a few renewals, then give the lease up.
				select {
				case <-ctx.Done():
				case <-time.After(ttl):
				}
			})
			if err != nil {
				t.Errorf("Hold: %v", err)
			}
		})
	}
	recv(t, enough, 30*time.Second, "six runs")
	g.cancel()

	mu.Lock()
	defer mu.Unlock()
	for i := 1; i < len(tokens); i++ {
		if tokens[i] <= tokens[i-1] {
			t.Errorf("token %d after %d: tokens must grow, got %v", tokens[i], tokens[i-1], tokens)
		}
	}
	handovers := 0
	for i := 1; i < len(holders); i++ {
		if holders[i] != holders[i-1] {
			handovers++
		}
	}
	if handovers == 0 {
		t.Errorf("the lease never changed hands: %v", holders)
	}
}

// A holder cut off from NATS (its socket stays open, nothing arrives) stops
// by its own clock before the other node can win the lease, and the other
// node takes over within the TTL plus a margin.
func TestHoldTakeoverAfterPartition(t *testing.T) {
	t.Parallel()
	ts := startServer(t)
	px := newProxy(t, fmt.Sprintf("127.0.0.1:%d", ts.port))
	prefix := uniquePrefix()
	ttl := 500 * time.Millisecond
	a := openNode(t, Options{URL: px.url(), Instance: "a", Prefix: prefix, LeaseTTL: ttl})
	b := openNode(t, Options{URL: ts.url(), Instance: "b", Prefix: prefix, LeaseTTL: ttl})
	g := newGroup(t)

	log := newEventLog()
	hold(t, g, a, "conn.feishu.x", log)
	first := log.next(t, "acquired", 10*time.Second)
	if first.node != "a" {
		t.Fatalf("first holder %s, want a", first.node)
	}
	hold(t, g, b, "conn.feishu.x", log)
	// Let a renew a couple of times while b contends.
	await(t, 10*time.Second, "a renewal", func() bool {
		a.mu.Lock()
		defer a.mu.Unlock()
		return a.held["conn.feishu.x"] > first.token
	})

	cutAt := time.Now()
	px.partition()
	lost := log.next(t, "lost", 10*time.Second)
	won := log.next(t, "acquired", 10*time.Second)
	took := time.Since(cutAt)
	if lost.node != "a" || won.node != "b" {
		t.Fatalf("after the partition got %v then %v, want a lost then b acquired", lost, won)
	}
	if lost.cause != errLeaseExpired {
		t.Errorf("a's run ended with %v, want its own TTL clock (%v)", lost.cause, errLeaseExpired)
	}
	if won.token <= first.token {
		t.Errorf("b's token %d is not above a's %d", won.token, first.token)
	}
	// Generous: expiry is at most TTL after a's last renewal, the server
	// checks ages every 250 ms or so, b retries every TTL/4.
	if bound := 2*ttl + 2*time.Second; took > bound {
		t.Errorf("takeover took %v, want within %v", took, bound)
	}
}

// Overwriting the lease entry (a stale holder writing) makes the holder's
// next renewal fail; its run ends at once and it leaves the entry alone.
func TestHoldFencedByOverwrite(t *testing.T) {
	t.Parallel()
	ts := startServer(t)
	ttl := 3 * time.Second
	a := openNode(t, Options{URL: ts.url(), Instance: "a", Prefix: uniquePrefix(), LeaseTTL: ttl})
	g := newGroup(t)

	log := newEventLog()
	hold(t, g, a, "conn.x", log)
	got := log.next(t, "acquired", 10*time.Second)

	wctx, wcancel := context.WithTimeout(g.ctx, 5*time.Second)
	defer wcancel()
	rev, err := a.leases.Put(wctx, "conn.x", []byte("stale holder"))
	if err != nil {
		t.Fatal(err)
	}
	lost := log.next(t, "lost", ttl)
	if lost.token != got.token || lost.cause != errLeaseFenced {
		t.Fatalf("lost %v, want the run of token %d ended by %v", lost, got.token, errLeaseFenced)
	}
	e, err := a.leases.Get(wctx, "conn.x")
	if err != nil {
		t.Fatalf("the overwritten entry is gone (the fenced holder must not delete it): %v", err)
	}
	if e.Revision() != rev {
		t.Errorf("entry at revision %d, want the overwrite's %d", e.Revision(), rev)
	}
}

// Close releases the leases: the other node wins at once, long before the
// TTL would have let it.
func TestCloseReleases(t *testing.T) {
	t.Parallel()
	ts := startServer(t)
	prefix := uniquePrefix()
	ttl := 5 * time.Second
	a := openNode(t, Options{URL: ts.url(), Instance: "a", Prefix: prefix, LeaseTTL: ttl})
	b := openNode(t, Options{URL: ts.url(), Instance: "b", Prefix: prefix, LeaseTTL: ttl})
	g := newGroup(t)

	log := newEventLog()
	hold(t, g, a, "conn.y", log)
	log.next(t, "acquired", 10*time.Second)
	hold(t, g, b, "conn.y", log)
	if st := a.Status(); len(st.Held) != 1 || st.Held[0] != "conn.y" || !st.Connected {
		t.Errorf("a's status %+v, want connected and holding conn.y", st)
	}

	start := time.Now()
	a.Close()
	won := log.next(t, "acquired", ttl)
	if won.node != "b" {
		t.Fatalf("after Close %v acquired, want b", won)
	}
	if took := time.Since(start); took > ttl/2 {
		t.Errorf("b took %v to take over after Close, want well before the TTL %v", took, ttl)
	}
	if st := a.Status(); len(st.Held) != 0 {
		t.Errorf("a holds %v after Close", st.Held)
	}
}

// warnings records the warnings and errors logged to it.
type warnings struct {
	mu   sync.Mutex
	msgs []string
}

func (w *warnings) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelWarn }
func (w *warnings) Handle(_ context.Context, r slog.Record) error {
	w.mu.Lock()
	w.msgs = append(w.msgs, r.Message)
	w.mu.Unlock()
	return nil
}
func (w *warnings) WithAttrs([]slog.Attr) slog.Handler { return w }
func (w *warnings) WithGroup(string) slog.Handler      { return w }

func (w *warnings) list() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.msgs...)
}

// TestACleanCloseWarnsOfNothing: closing a node with its server up is no
// disconnection to warn about.
func TestACleanCloseWarnsOfNothing(t *testing.T) {
	t.Parallel()
	ts := startServer(t)
	w := &warnings{}
	n := openNode(t, Options{URL: ts.url(), Instance: "a", Prefix: uniquePrefix(), LeaseTTL: 2 * time.Second, Logger: slog.New(w)})
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	if got := w.list(); len(got) != 0 {
		t.Fatalf("a clean close logged %q; want no warning", got)
	}
}
