package cluster

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"
)

// delivered is one message handed to a Consume handler.
type delivered struct {
	seq  uint64
	data string
	done func()
}

// consume runs n.Consume(p) on the group, sending every message to the
// returned channel and Consume's result to the second.
func consume(g *group, ctx context.Context, n *Node, p int) (<-chan delivered, <-chan error) {
	msgs := make(chan delivered, 100)
	res := make(chan error, 1)
	g.spawn(func() {
		res <- n.Consume(ctx, p, func(ctx context.Context, seq uint64, data []byte, done func()) {
			msgs <- delivered{seq, string(data), done}
		})
	})
	return msgs, res
}

func publishN(t *testing.T, n *Node, p int, from, to int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for i := from; i <= to; i++ {
		if err := n.Publish(ctx, p, fmt.Sprintf("id-%d-%d", p, i), []byte(fmt.Sprintf("m%d", i))); err != nil {
			t.Fatal(err)
		}
		// Interleave another partition so sequences have gaps.
		if err := n.Publish(ctx, (p+1)%n.Partitions(), "", []byte("other")); err != nil {
			t.Fatal(err)
		}
	}
}

func savedProgress(t *testing.T, n *Node, p int) uint64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	e, err := n.prog.Get(ctx, progressKey(p))
	if err != nil {
		return 0
	}
	v, err := strconv.ParseUint(string(e.Value()), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// Messages come in order; progress is saved only over the done prefix even
// when done comes out of order; the next consumer starts after the saved
// progress and sees every message not done.
func TestConsumeProgressAndTakeover(t *testing.T) {
	t.Parallel()
	ts := startServer(t)
	prefix := uniquePrefix()
	a := openNode(t, Options{URL: ts.url(), Instance: "a", Prefix: prefix, Partitions: 2})
	b := openNode(t, Options{URL: ts.url(), Instance: "b", Prefix: prefix, Partitions: 2})
	g := newGroup(t)
	const p = 1
	publishN(t, a, p, 1, 8)

	actx, acancel := context.WithCancel(g.ctx)
	msgs, res := consume(g, actx, a, p)
	var got []delivered
	for i := 1; i <= 8; i++ {
		d := recv(t, msgs, 10*time.Second, "message")
		if want := fmt.Sprintf("m%d", i); d.data != want {
			t.Fatalf("message %d is %q, want %q", i, d.data, want)
		}
		if i > 1 && d.seq <= got[i-2].seq {
			t.Fatalf("sequence %d after %d", d.seq, got[i-2].seq)
		}
		got = append(got, d)
	}
	// Done out of order, from other goroutines: 4 and 5 first, then 1
	// and 2; 3 never. Progress may only reach 2.
	for _, i := range []int{4, 5, 1, 2} {
		done := got[i-1].done
		g.spawn(done)
		if i == 2 {
			got[i-1].done() // twice is harmless
		}
	}
	await(t, 10*time.Second, "progress at message 2", func() bool { return savedProgress(t, a, p) == got[1].seq })
	got[2].done() // 3: the prefix now runs to 5
	await(t, 10*time.Second, "progress at message 5", func() bool { return savedProgress(t, a, p) == got[4].seq })
	got[5].done() // 6, saved when Consume returns at the latest
	acancel()
	if err := recv(t, res, 10*time.Second, "Consume to return"); err != nil {
		t.Fatalf("Consume: %v", err)
	}
	if s := savedProgress(t, a, p); s != got[5].seq {
		t.Fatalf("progress after Consume returned %d, want %d (message 6)", s, got[5].seq)
	}

	// b takes over: it starts at message 7, the first not done.
	bmsgs, bres := consume(g, g.ctx, b, p)
	for i := 7; i <= 8; i++ {
		d := recv(t, bmsgs, 10*time.Second, "message after takeover")
		if want := fmt.Sprintf("m%d", i); d.data != want || d.seq != got[i-1].seq {
			t.Fatalf("after takeover got %q (seq %d), want %q (seq %d)", d.data, d.seq, want, got[i-1].seq)
		}
		d.done()
	}
	publishN(t, a, p, 9, 9)
	if d := recv(t, bmsgs, 10*time.Second, "a new message"); d.data != "m9" {
		t.Fatalf("got %q, want m9", d.data)
	} else {
		d.done()
	}
	select {
	case err := <-bres:
		t.Fatalf("Consume on b returned early: %v", err)
	default:
	}
}

// Two consumers of one partition: the one that saves second is fenced.
func TestConsumeFenced(t *testing.T) {
	t.Parallel()
	ts := startServer(t)
	prefix := uniquePrefix()
	a := openNode(t, Options{URL: ts.url(), Instance: "a", Prefix: prefix, Partitions: 2})
	b := openNode(t, Options{URL: ts.url(), Instance: "b", Prefix: prefix, Partitions: 2})
	g := newGroup(t)
	publishN(t, a, 0, 1, 3)

	amsgs, ares := consume(g, g.ctx, a, 0)
	a1 := recv(t, amsgs, 10*time.Second, "a's first message")
	bmsgs, bres := consume(g, g.ctx, b, 0)
	b1 := recv(t, bmsgs, 10*time.Second, "b's first message")

	b1.done()
	await(t, 10*time.Second, "b's progress", func() bool { return savedProgress(t, b, 0) == b1.seq })
	a1.done()
	a2 := recv(t, amsgs, 10*time.Second, "a's second message")
	a2.done()
	err := recv(t, ares, 10*time.Second, "a to be fenced")
	if !errors.Is(err, ErrFenced) {
		t.Fatalf("a's Consume returned %v, want ErrFenced", err)
	}
	select {
	case err := <-bres:
		t.Fatalf("b's Consume returned %v", err)
	default:
	}
}

// The same id published twice is stored once.
func TestPublishDedup(t *testing.T) {
	t.Parallel()
	ts := startServer(t)
	a := openNode(t, Options{URL: ts.url(), Instance: "a", Prefix: uniquePrefix(), Partitions: 4})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, m := range []struct{ id, data string }{{"ev-1", "first"}, {"ev-1", "first again"}, {"ev-2", "second"}} {
		if err := a.Publish(ctx, 3, m.id, []byte(m.data)); err != nil {
			t.Fatal(err)
		}
	}
	if err := a.Publish(ctx, 4, "x", nil); err == nil {
		t.Error("Publish to partition 4 of 4 succeeded")
	}
	g := newGroup(t)
	msgs, _ := consume(g, g.ctx, a, 3)
	for _, want := range []string{"first", "second"} {
		if d := recv(t, msgs, 10*time.Second, want); d.data != want {
			t.Fatalf("got %q, want %q", d.data, want)
		}
	}
	s, err := a.js.Stream(ctx, a.stream)
	if err != nil {
		t.Fatal(err)
	}
	if msgs := s.CachedInfo().State.Msgs; msgs != 2 {
		t.Errorf("stream holds %d messages, want 2", msgs)
	}
}

// TestPublishAsync: messages published without waiting are acknowledged
// to their callers in publishing order, stored in that order (a repeated
// id once), and after Close a publish fails with ErrClosed.
func TestPublishAsync(t *testing.T) {
	t.Parallel()
	ts := startServer(t)
	a := openNode(t, Options{URL: ts.url(), Instance: "a", Prefix: uniquePrefix(), Partitions: 4})
	const n = 2000
	var mu sync.Mutex
	var order []int
	acked := make(chan struct{}, n+1)
	for i := range n {
		a.PublishAsync(1, "m-"+strconv.Itoa(i), []byte(strconv.Itoa(i)), func(err error) {
			if err != nil {
				t.Errorf("message %d: %v", i, err)
			}
			mu.Lock()
			order = append(order, i)
			mu.Unlock()
			acked <- struct{}{}
		})
	}
	a.PublishAsync(1, "m-7", []byte("again"), func(err error) {
		if err != nil {
			t.Errorf("a repeated id: %v", err)
		}
		acked <- struct{}{}
	})
	for range n + 1 {
		recv(t, acked, 10*time.Second, "an acknowledgement")
	}
	mu.Lock()
	for i, got := range order {
		if got != i {
			t.Fatalf("acknowledgement %d was for message %d", i, got)
		}
	}
	mu.Unlock()
	g := newGroup(t)
	msgs, _ := consume(g, g.ctx, a, 1)
	for i := range n {
		if d := recv(t, msgs, 10*time.Second, "message"); d.data != strconv.Itoa(i) {
			t.Fatalf("message %d of the stream is %q", i, d.data)
		}
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	failed := make(chan error, 1)
	a.PublishAsync(1, "late", []byte("late"), func(err error) { failed <- err })
	if err := recv(t, failed, 10*time.Second, "the late publish's outcome"); err == nil {
		t.Error("a publish after Close succeeded")
	}
}
