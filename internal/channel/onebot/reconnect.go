package onebot

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"
)

// Reconnect configures how a lost connection is re-established.
type Reconnect struct {
	Enabled bool
	// Retries bounds consecutive failed attempts; a negative value means
	// no bound, 0 means never retry.
	Retries  int
	MinDelay time.Duration
	MaxDelay time.Duration
}

// DefaultReconnect retries forever between 1 s and 30 s.
var DefaultReconnect = Reconnect{Enabled: true, Retries: -1, MinDelay: time.Second, MaxDelay: 30 * time.Second}

// ErrRetriesExhausted is returned when a finite number of retries ran out;
// the account reports it as its state rather than stopping silently.
var ErrRetriesExhausted = errors.New("onebot: reconnect retries exhausted")

// State is a connection's state, reported on every change.
type State string

// States.
const (
	// StateIdle: not started.
	StateIdle State = "idle"
	// StateListening: waiting for the implementation to connect (reverse
	// WebSocket or HTTP POST only).
	StateListening  State = "listening"
	StateConnecting State = "connecting"
	StateConnected  State = "connected"
	StateWaiting    State = "waiting to reconnect"
	StateFailed     State = "failed"
)

// delay returns the wait before attempt n (1-based): MinDelay doubled per
// attempt up to MaxDelay, with full jitter over its upper half so accounts
// do not reconnect in step.
func (r Reconnect) delay(n int) time.Duration {
	d := r.MinDelay
	for i := 1; i < n && d < r.MaxDelay; i++ {
		d *= 2
	}
	d = min(d, r.MaxDelay)
	if d <= 1 {
		return d
	}
	half := d / 2
	return half + rand.N(d-half+1)
}

// Run keeps a connection up: connect is called to connect and serve, and
// returns when the connection ends (nil after a connection that was up,
// when it ran; an error when it could not connect). Failed attempts back
// off per the policy; a connection that came up resets the count. Run
// returns nil when ctx ends, and ErrRetriesExhausted when the retries run
// out. onState, when set, learns of every state change.
func (r Reconnect) Run(ctx context.Context, connect func(ctx context.Context, up func()) error, onState func(State, error)) error {
	report := func(s State, err error) {
		if onState != nil {
			onState(s, err)
		}
	}
	failures := 0
	for {
		report(StateConnecting, nil)
		wasUp := false
		err := connect(ctx, func() {
			wasUp = true
			report(StateConnected, nil)
		})
		if ctx.Err() != nil {
			return nil
		}
		if wasUp {
			failures = 0
		} else {
			failures++
		}
		if !r.Enabled || (r.Retries >= 0 && failures > r.Retries) {
			report(StateFailed, err)
			if !r.Enabled {
				return fmt.Errorf("onebot: connection ended and reconnect is off: %w", err)
			}
			return fmt.Errorf("%w after %d attempts: %v", ErrRetriesExhausted, failures, err)
		}
		wait := r.delay(max(failures, 1))
		report(StateWaiting, err)
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C:
		}
	}
}
