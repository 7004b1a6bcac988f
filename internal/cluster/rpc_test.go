package cluster

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

// Request reaches the node serving the name; a handler's error comes back
// as a RemoteError; with nobody serving, ErrNoHolder.
func TestRequestServe(t *testing.T) {
	t.Parallel()
	ts := startServer(t)
	prefix := uniquePrefix()
	a := openNode(t, Options{URL: ts.url(), Instance: "a", Prefix: prefix})
	b := openNode(t, Options{URL: ts.url(), Instance: "b", Prefix: prefix})
	g := newGroup(t)

	ctx, cancel := context.WithTimeout(g.ctx, 10*time.Second)
	defer cancel()
	if _, err := b.Request(ctx, "conn.onebot.main", []byte("x")); !errors.Is(err, ErrNoHolder) || !strings.Contains(err.Error(), "conn.onebot.main") {
		t.Fatalf("Request with nobody serving: %v, want ErrNoHolder naming conn.onebot.main", err)
	}

	sctx, stop := context.WithCancel(g.ctx)
	served := make(chan error, 1)
	g.spawn(func() {
		served <- a.Serve(sctx, "conn.onebot.main", func(ctx context.Context, req []byte) ([]byte, error) {
			if string(req) == "fail" {
				return nil, errors.New("send failed:\nrate limited")
			}
			return append([]byte("echo "), req...), nil
		})
	})
	// The subscription is in place once a request gets through.
	var resp []byte
	await(t, 10*time.Second, "Serve to answer", func() bool {
		var err error
		resp, err = b.Request(ctx, "conn.onebot.main", []byte("hi"))
		return err == nil
	})
	if string(resp) != "echo hi" {
		t.Errorf("reply %q, want %q", resp, "echo hi")
	}
	_, err := b.Request(ctx, "conn.onebot.main", []byte("fail"))
	var re *RemoteError
	if !errors.As(err, &re) || re.Name != "conn.onebot.main" || re.Message != "send failed: rate limited" {
		t.Errorf("Request got %v (%#v), want a RemoteError from conn.onebot.main with the handler's message", err, re)
	}
	if resp, err := b.Request(ctx, "conn.onebot.main", nil); err != nil || len(resp) != len("echo ") {
		t.Errorf("empty request: %q, %v", resp, err)
	}

	stop()
	if err := recv(t, served, 10*time.Second, "Serve to return"); err != nil {
		t.Errorf("Serve: %v", err)
	}
	// A request that crosses the unsubscription gets no reply and runs
	// into its deadline; the next ones find nobody.
	await(t, 10*time.Second, "ErrNoHolder after Serve ended", func() bool {
		rctx, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		_, err := b.Request(rctx, "conn.onebot.main", []byte("x"))
		return errors.Is(err, ErrNoHolder)
	})
}

// RequestWhileHeld ends with ErrHolderLost soon after the lease of the
// node serving it lapses (the node cut off from the server with the
// request in its hands), rather than at the request's deadline; while the
// lease holds, it is Request.
func TestRequestWhileHeldEndsWhenTheHolderIsLost(t *testing.T) {
	t.Parallel()
	ts := startServer(t)
	px := newProxy(t, fmt.Sprintf("127.0.0.1:%d", ts.port))
	prefix := uniquePrefix()
	ttl := 600 * time.Millisecond
	a := openNode(t, Options{URL: px.url(), Instance: "a", Prefix: prefix, LeaseTTL: ttl})
	b := openNode(t, Options{URL: ts.url(), Instance: "b", Prefix: prefix, LeaseTTL: ttl})
	g := newGroup(t)

	received := make(chan struct{}, 1) // a has the request it will not answer
	release := make(chan struct{})     // lets that handler end with the test
	defer close(release)
	log := newEventLog()
	g.spawn(func() {
		_ = a.Hold(g.ctx, "conn.onebot.main", func(ctx context.Context, l Lease) {
			log.add(holdEvent{node: "a", kind: "acquired", token: l.Token})
			_ = a.Serve(ctx, "onebot.main", func(ctx context.Context, req []byte) ([]byte, error) {
				if string(req) != "stuck" {
					return append([]byte("done "), req...), nil
				}
				received <- struct{}{}
				select {
				case <-release:
				case <-ctx.Done():
				}
				return nil, errors.New("never answered")
			})
		})
	})
	log.next(t, "acquired", 10*time.Second)
	await(t, 10*time.Second, "b to see a's lease", func() bool {
		_, held := b.view.current("conn.onebot.main")
		return held
	})
	ctx, cancel := context.WithTimeout(g.ctx, 30*time.Second)
	defer cancel()
	// The subscription is in place once a request gets through.
	await(t, 10*time.Second, "a to answer", func() bool {
		resp, err := b.RequestWhileHeld(ctx, "onebot.main", "conn.onebot.main", []byte("hi"))
		return err == nil && string(resp) == "done hi"
	})

	// A request in a's hands when a is cut off: its lease lapses.
	outcome := make(chan error, 1)
	g.spawn(func() {
		_, err := b.RequestWhileHeld(ctx, "onebot.main", "conn.onebot.main", []byte("stuck"))
		outcome <- err
	})
	recv(t, received, 10*time.Second, "a to receive the request")
	start := time.Now()
	px.partition()
	err := recv(t, outcome, 30*time.Second, "the request to end")
	if !errors.Is(err, ErrHolderLost) {
		t.Fatalf("a request in the hands of a holder cut off: %v, want ErrHolderLost", err)
	}
	if took := time.Since(start); took > 2*ttl+2*time.Second {
		t.Errorf("ErrHolderLost came after %v, want within about the lease's TTL (%v)", took, ttl)
	}
	if ctx.Err() != nil {
		t.Error("the request's own deadline passed first")
	}
}
