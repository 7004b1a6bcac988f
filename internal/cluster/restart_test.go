package cluster

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"
)

// The server stops for longer than the TTL: every lease is lost by the
// holder's clock; when the server is back on the same port and store,
// leases are won again, partitions consumed from their saved progress,
// requests served.
func TestServerRestart(t *testing.T) {
	t.Parallel()
	ts := startServer(t)
	ttl := 600 * time.Millisecond
	const parts = 2
	a := openNode(t, Options{URL: ts.url(), Instance: "a", Prefix: uniquePrefix(), LeaseTTL: ttl, Partitions: parts})
	g := newGroup(t)

	log := newEventLog()
	hold(t, g, a, "conn.r", log)
	g.spawn(func() {
		_ = a.Serve(g.ctx, "conn.r", func(ctx context.Context, req []byte) ([]byte, error) { return req, nil })
	})

	var mu sync.Mutex
	running := map[int]bool{}
	seen := make(chan string, 100)
	g.spawn(func() {
		err := a.RunPartitions(g.ctx, func(ctx context.Context, p int, l Lease) {
			mu.Lock()
			running[p] = true
			mu.Unlock()
			defer func() {
				mu.Lock()
				delete(running, p)
				mu.Unlock()
			}()
			for ctx.Err() == nil {
				err := a.Consume(ctx, p, func(ctx context.Context, seq uint64, data []byte, done func()) {
					seen <- string(data)
					done()
				})
				if err != nil {
					sleep(ctx, 50*time.Millisecond)
				}
			}
		})
		if err != nil && err != ErrClosed {
			t.Errorf("RunPartitions: %v", err)
		}
	})
	numRunning := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(running)
	}
	log.next(t, "acquired", 10*time.Second)
	await(t, 10*time.Second, "both partitions to run", func() bool { return numRunning() == parts })
	publish := func(data string) {
		t.Helper()
		await(t, 20*time.Second, "Publish to succeed", func() bool {
			ctx, cancel := context.WithTimeout(g.ctx, time.Second)
			defer cancel()
			return a.Publish(ctx, 1, data, []byte(data)) == nil
		})
	}
	publish("before")
	if got := recv(t, seen, 10*time.Second, "the message before the restart"); got != "before" {
		t.Fatalf("got %q, want before", got)
	}

	ts.stop()
	lost := log.next(t, "lost", 10*time.Second)
	if lost.node != "a" {
		t.Fatalf("got %v, want a to lose the lease", lost)
	}
	await(t, 10*time.Second, "the partitions to stop", func() bool { return numRunning() == 0 })
	// A lease is forgotten just after its run returns: the status is
	// awaited, not read once.
	var st Status
	await(t, 10*time.Second, "the status to say disconnected, nothing held, an error", func() bool {
		st = a.Status()
		return !st.Connected && len(st.Held) == 0 && st.LastError != ""
	})

	ts.start()
	log.next(t, "acquired", 30*time.Second)
	await(t, 30*time.Second, "both partitions to run again", func() bool { return numRunning() == parts })
	publish("after")
	if got := recv(t, seen, 20*time.Second, "the message after the restart"); got != "after" {
		t.Fatalf("got %q, want after (the message before was done and saved)", got)
	}
	await(t, 20*time.Second, "a request to be served", func() bool {
		ctx, cancel := context.WithTimeout(g.ctx, time.Second)
		defer cancel()
		resp, err := a.Request(ctx, "conn.r", []byte("ping"))
		return err == nil && string(resp) == "ping"
	})
	// The lease watcher is back too (its consumer did not survive).
	await(t, 20*time.Second, "the watcher to see the member lease", func() bool {
		return strings.Join(a.view.members(), ",") == "a"
	})
	if st := a.Status(); !st.Connected || len(st.Held) != parts+2 || strings.Join(st.Members, ",") != "a" {
		t.Errorf("status after the restart: %+v, want connected, holding conn.r, member.a and both partitions", st)
	}
}

// Open refuses a lease TTL or partition count other than the one the
// cluster's resources were set up with, naming the setting.
func TestOpenMismatch(t *testing.T) {
	t.Parallel()
	ts := startServer(t)
	prefix := uniquePrefix()
	openNode(t, Options{URL: ts.url(), Instance: "a", Prefix: prefix, LeaseTTL: time.Second, Partitions: 8})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, tc := range []struct {
		o    Options
		want []string
	}{
		{Options{LeaseTTL: 2 * time.Second, Partitions: 8}, []string{"cluster.leaseTtlMs", "1000", "2000"}},
		{Options{LeaseTTL: time.Second, Partitions: 16}, []string{"cluster.partitions", "8", "16"}},
		{Options{Instance: "a.b", LeaseTTL: time.Second, Partitions: 8}, []string{"cluster.instance"}},
		{Options{URL: "nats://127.0.0.1:1", LeaseTTL: time.Second, Partitions: 8}, []string{"cluster.nats.url"}},
	} {
		o := tc.o
		if o.URL == "" {
			o.URL = ts.url()
		}
		if o.Instance == "" {
			o.Instance = "b"
		}
		o.Prefix = prefix
		n, err := Open(ctx, o)
		if err == nil {
			n.Close()
			t.Errorf("Open(%+v) succeeded", tc.o)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("Open(%+v): %v, want it to name %s", tc.o, err, w)
			}
		}
	}
	if _, err := Open(ctx, Options{URL: ts.url(), Instance: "c", Prefix: prefix, LeaseTTL: time.Second, Partitions: 8}); err != nil && !errors.Is(err, ErrClosed) {
		t.Errorf("Open with matching options: %v", err)
	}
}

// A restart shorter than the holder's patience keeps the lease (the entry
// and its revision are on disk) and Consume carries on by itself.
func TestShortServerRestart(t *testing.T) {
	t.Parallel()
	ts := startServer(t)
	ttl := 5 * time.Second
	a := openNode(t, Options{URL: ts.url(), Instance: "a", Prefix: uniquePrefix(), LeaseTTL: ttl, Partitions: 1})
	g := newGroup(t)
	log := newEventLog()
	hold(t, g, a, "conn.s", log)
	log.next(t, "acquired", 10*time.Second)
	msgs, res := consume(g, g.ctx, a, 0)
	publish := func(data string) {
		t.Helper()
		await(t, 20*time.Second, "Publish to succeed", func() bool {
			ctx, cancel := context.WithTimeout(g.ctx, time.Second)
			defer cancel()
			return a.Publish(ctx, 0, data, []byte(data)) == nil
		})
	}
	publish("before")
	if d := recv(t, msgs, 10*time.Second, "the message before"); d.data != "before" {
		t.Fatalf("got %q", d.data)
	}

	ts.stop()
	ts.start()
	publish("after")
	if d := recv(t, msgs, 20*time.Second, "the message after the restart"); d.data != "after" {
		t.Fatalf("got %q, want after", d.data)
	}
	select {
	case e := <-log.ch:
		t.Errorf("lease event %v across a short restart", e)
	case err := <-res:
		t.Errorf("Consume returned %v across a short restart", err)
	default:
	}
}
