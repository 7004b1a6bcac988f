package reply

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
)

type typingLog struct {
	mu    sync.Mutex
	start time.Time
	calls []string
}

func (l *typingLog) set(_ context.Context, on bool) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	state := "off"
	if on {
		state = "on"
	}
	l.calls = append(l.calls, time.Since(l.start).String()+" "+state)
	return nil
}

func (l *typingLog) list() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.calls...)
}

func TestTypingRefreshesAndStopsOnFinal(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := &typingLog{start: time.Now()}
		ty := NewTyping(context.Background(), TypingOptions{Set: l.set, Policy: TypingUser})
		ty.RunStarted()
		time.Sleep(13 * time.Second)
		ty.Stop()
		want := []string{"0s on", "6s on", "12s on", "13s off"}
		if diff := cmp.Diff(want, l.list()); diff != "" {
			t.Errorf("(-want +got):\n%s", diff)
		}
		ty.Stop() // twice is fine
	})
}

func TestTypingTTLForceStops(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := &typingLog{start: time.Now()}
		ty := NewTyping(context.Background(), TypingOptions{Set: l.set, Policy: TypingUser, Interval: time.Minute})
		ty.RunStarted()
		time.Sleep(10 * time.Minute) // the turn never calls Stop
		want := []string{"0s on", "1m0s on", "2m0s off"}
		if diff := cmp.Diff(want, l.list()); diff != "" {
			t.Errorf("(-want +got):\n%s", diff)
		}
		ty.Stop()
	})
}

func TestTypingStopsWhenTurnIsCancelled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := &typingLog{start: time.Now()}
		ctx, cancel := context.WithCancel(context.Background())
		ty := NewTyping(ctx, TypingOptions{Set: l.set, Policy: TypingUser})
		ty.RunStarted()
		time.Sleep(time.Second)
		cancel()
		synctest.Wait()
		if diff := cmp.Diff([]string{"0s on", "1s off"}, l.list()); diff != "" {
			t.Errorf("(-want +got):\n%s", diff)
		}
		ty.Stop()
	})
}

func TestTypingPolicies(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		for _, tt := range []struct {
			policy TypingPolicy
			want   []string
		}{
			{TypingUser, []string{"0s on", "2s off"}},
			{TypingSystem, []string{"1s on", "2s off"}},
			{TypingHeartbeat, nil},
		} {
			l := &typingLog{start: time.Now()}
			ty := NewTyping(context.Background(), TypingOptions{Set: l.set, Policy: tt.policy})
			ty.RunStarted()
			time.Sleep(time.Second)
			ty.TextStarted()
			time.Sleep(time.Second)
			ty.Stop()
			if diff := cmp.Diff(tt.want, l.list()); diff != "" {
				t.Errorf("%s (-want +got):\n%s", tt.policy, diff)
			}
		}
	})
}

func TestTypingSilentTurnShowsNothing(t *testing.T) {
	l := &typingLog{start: time.Now()}
	ty := NewTyping(context.Background(), TypingOptions{Set: l.set, Policy: TypingSystem})
	ty.RunStarted()
	ty.Stop() // the reply was NO_REPLY: no text ever started
	if got := l.list(); len(got) != 0 {
		t.Errorf("a silent system turn showed typing: %v", got)
	}
}
