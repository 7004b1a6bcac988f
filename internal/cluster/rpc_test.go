package cluster

import (
	"context"
	"errors"
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
