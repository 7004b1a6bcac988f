package onebot

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"
)

func TestReconnectBacksOffAndResets(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := Reconnect{Enabled: true, Retries: -1, MinDelay: time.Second, MaxDelay: 8 * time.Second}
		start := time.Now()
		var attempts []time.Duration
		ctx, cancel := context.WithCancel(context.Background())
		err := r.run(ctx, func(ctx context.Context, up func()) error {
			attempts = append(attempts, time.Since(start))
			switch len(attempts) {
			case 5: // comes up, serves for a minute, then drops
				up()
				time.Sleep(time.Minute)
				return errors.New("dropped")
			case 7:
				cancel()
				return ctx.Err()
			}
			return errors.New("refused")
		}, nil)
		if err != nil {
			t.Fatalf("cancelled Run: %v", err)
		}
		gaps := []time.Duration{}
		for i := 1; i < len(attempts); i++ {
			gaps = append(gaps, attempts[i]-attempts[i-1])
		}
		// Waits double from 1s (jittered into its upper half) until the
		// connection comes up, and start over after it.
		bounds := [][2]time.Duration{{500 * time.Millisecond, time.Second}, {time.Second, 2 * time.Second}, {2 * time.Second, 4 * time.Second}, {4 * time.Second, 8 * time.Second}}
		for i, b := range bounds {
			if gaps[i] < b[0] || gaps[i] > b[1] {
				t.Errorf("wait %d = %v, want %v..%v", i+1, gaps[i], b[0], b[1])
			}
		}
		if after := gaps[4] - time.Minute; after < 500*time.Millisecond || after > time.Second {
			t.Errorf("after a working connection the backoff must restart, waited %v", after)
		}
	})
}

func TestReconnectRetriesExhaustedIsReported(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := Reconnect{Enabled: true, Retries: 2, MinDelay: time.Second, MaxDelay: time.Second}
		var states []State
		calls := 0
		err := r.run(context.Background(), func(context.Context, func()) error {
			calls++
			return errors.New("refused")
		}, func(s State, _ error) { states = append(states, s) })
		if !errors.Is(err, errRetriesExhausted) || calls != 3 {
			t.Errorf("err %v after %d attempts; want exhaustion after 1 + 2 retries", err, calls)
		}
		if states[len(states)-1] != StateFailed {
			t.Errorf("the last state must be failed: %v", states)
		}
	})
}

func TestReconnectDisabledOrZeroRetries(t *testing.T) {
	for _, r := range []Reconnect{{Enabled: false}, {Enabled: true, Retries: 0, MinDelay: time.Second, MaxDelay: time.Second}} {
		calls := 0
		err := r.run(context.Background(), func(context.Context, func()) error { calls++; return errors.New("x") }, nil)
		if err == nil || calls != 1 {
			t.Errorf("%+v: err %v, %d calls; want one attempt and an error", r, err, calls)
		}
	}
}
