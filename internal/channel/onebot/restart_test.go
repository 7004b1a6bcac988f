package onebot

import (
	"context"
	"errors"
	"runtime"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/pincerbot/pincer/internal/channel"
	"github.com/pincerbot/pincer/internal/channel/onebot/onebottest"
	"github.com/pincerbot/pincer/internal/msg"
)

// blockingSink replies to every message; replies hang until the peer
// answers, which it never does for sends while silenced.
type blockingSink struct {
	mu      sync.Mutex
	results map[msg.MessageID]error
	started chan struct{}
}

func (s *blockingSink) Dispatch(ctx context.Context, m msg.Message, r channel.Replier) error {
	s.started <- struct{}{}
	_, err := r.Deliver(ctx, msg.Outbound{Peer: m.Peer, Text: "reply to " + string(m.ID)})
	s.mu.Lock()
	s.results[m.ID] = err
	s.mu.Unlock()
	return err
}

// TestPeerKilledMidBurst kills the implementation while replies are in
// flight: they fail at once with errDisconnected rather than waiting out
// their timeout, the account reconnects by itself, and once it stops no
// goroutine is left behind. It runs over real loopback sockets.
func TestPeerKilledMidBurst(t *testing.T) {
	before := runtime.NumGoroutine()
	p := onebottest.New(t, answerSends)
	p.Silence("send_group_msg")
	a := NewAccount(AccountOptions{
		WSURL: p.URL, SelfID: 3300000001, RequestTimeout: time.Hour,
		Reconnect: Reconnect{Enabled: true, Retries: -1, MinDelay: time.Millisecond, MaxDelay: 10 * time.Millisecond},
	})
	sink := &blockingSink{started: make(chan struct{}, 64), results: map[msg.MessageID]error{}}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx, sink) }()
	if err := p.Connected(ctx); err != nil {
		t.Fatal(err)
	}
	const burst = 20
	for i := range burst {
		if err := p.Push(ctx, groupEvent(int64(1000+i), 10001, "burst")); err != nil {
			t.Fatal(err)
		}
	}
	for range burst {
		<-sink.started
	}
	// Every reply is waiting on a send the peer will never answer.
	for sent := 0; sent < burst; {
		if <-p.Called() == "send_group_msg" {
			sent++
		}
	}
	p.DropAll()
	if err := p.Connected(ctx); err != nil {
		t.Fatal(err)
	}
	// The reconnected account works.
	if err := p.Push(ctx, groupEvent(2000, 10001, "after")); err != nil {
		t.Fatal(err)
	}
	<-sink.started
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
	sink.mu.Lock()
	failedFast := 0
	for i := range burst {
		if errors.Is(sink.results[msg.MessageID(strconv.Itoa(1000+i))], errDisconnected) {
			failedFast++
		}
	}
	sink.mu.Unlock()
	if failedFast != burst {
		t.Errorf("%d of %d pending replies failed with ErrDisconnected: %v", failedFast, burst, sink.results)
	}
	p.DropAll()
	// Goroutines of the HTTP machinery wind down asynchronously; give
	// them a moment, then compare.
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before+2 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if after := runtime.NumGoroutine(); after > before+2 {
		buf := make([]byte, 1<<16)
		t.Errorf("goroutines: %d before, %d after\n%s", before, after, buf[:runtime.Stack(buf, true)])
	}
}
