package onebot

import (
	"context"
	"fmt"
	"math"
	"testing"
	"testing/synctest"
	"time"

	"github.com/pincerbot/pincer/internal/channel/onebot/wire"
)

// reconnected reports whether the account dialed the peer again (or for
// the first time) since the last call.
func (r *rig) reconnected(ctx context.Context) bool {
	ctx, cancel := context.WithTimeout(ctx, time.Millisecond)
	defer cancel()
	return r.peer.Connected(ctx) == nil
}

// TestAbsurdHeartbeatIntervalsAreClamped: an implementation announcing a
// heartbeat interval that overflows the liveness deadline (4611686018428
// ms wrapped it negative and dropped the connection at once), or none at
// all, keeps its connection; an announced interval is held to at most ten
// minutes, so twenty minutes and five seconds of silence still end it.
func TestAbsurdHeartbeatIntervalsAreClamped(t *testing.T) {
	tests := []struct {
		interval int64
		dropped  time.Duration // 0: never
	}{
		{4611686018428, 2*maxHeartbeat + 5*time.Second},
		{math.MaxInt64, 2*maxHeartbeat + 5*time.Second},
		{9223372036855, 2*maxHeartbeat + 5*time.Second}, // overflows a conversion to nanoseconds
		{3_600_000, 2*maxHeartbeat + 5*time.Second},
		{1, 2*minHeartbeat + 5*time.Second},
		{0, 0},
		{-5000, 0},
		{math.MinInt64, 0},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.interval), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				r := newRig(t, AccountOptions{WSURL: "ws://onebot.test/", SelfID: 3300000001}, nil)
				defer r.close()
				ctx := context.Background()
				if err := r.peer.Connected(ctx); err != nil {
					t.Fatal(err)
				}
				if err := r.peer.Push(ctx, map[string]any{"post_type": "meta_event", "meta_event_type": "heartbeat", "interval": tt.interval, "self_id": 3300000001}); err != nil {
					t.Fatal(err)
				}
				stays := tt.dropped - time.Second
				if tt.dropped == 0 {
					stays = 24 * time.Hour
				}
				time.Sleep(stays)
				synctest.Wait()
				if r.reconnected(ctx) || stateOf(r.acct) != StateConnected {
					t.Fatalf("dropped within %s of silence (state %s)", stays, stateOf(r.acct))
				}
				if tt.dropped == 0 {
					return
				}
				time.Sleep(2 * time.Second)
				synctest.Wait()
				if !r.reconnected(ctx) {
					t.Errorf("still on the first connection after %s of silence", tt.dropped+time.Second)
				}
			})
		})
	}
}

func TestHeartbeatInterval(t *testing.T) {
	hb := func(ms int64) wire.Event {
		return wire.Event{PostType: "meta_event", MetaEventType: "heartbeat", Interval: ms}
	}
	tests := []struct {
		ev   wire.Event
		want time.Duration
		ok   bool
	}{
		{hb(5000), 5 * time.Second, true},
		{hb(math.MaxInt64), maxHeartbeat, true},
		{hb(0), 0, false},
		{hb(-1), 0, false},
		{wire.Event{PostType: "meta_event", MetaEventType: "lifecycle", Interval: 5000}, 0, false},
	}
	for _, tt := range tests {
		if got, ok := heartbeatInterval(&tt.ev); got != tt.want || ok != tt.ok {
			t.Errorf("%+v: %v %v, want %v %v", tt.ev, got, ok, tt.want, tt.ok)
		}
	}
	for _, d := range []time.Duration{0, time.Second, maxHeartbeat, math.MaxInt64 / 2, math.MaxInt64} {
		if got := liveness(d); got < 0 || got < d {
			t.Errorf("liveness(%v) = %v", d, got)
		}
	}
}
