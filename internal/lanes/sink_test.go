package lanes

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/pincerbot/pincer/internal/channel"
	"github.com/pincerbot/pincer/internal/msg"
)

// takes records what reaches the next taker.
type takes struct{ got chan msg.MessageID }

func (t takes) Take(_ context.Context, m msg.Message, _ channel.Replier, done func(error)) {
	t.got <- m.ID
	done(nil)
}

func (t takes) Dispatch(ctx context.Context, m msg.Message, r channel.Replier) error {
	t.Take(ctx, m, r, func(error) {})
	return nil
}

// TestTryTakeGivesUpWhenFull: with the lanes full, TryTake waits its bound,
// returns ErrFull and never calls done (the message was not taken in);
// with room it takes the message in, in order with the rest.
func TestTryTakeGivesUpWhenFull(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := New(Options{Workers: 1, Capacity: 1})
		defer l.Close()
		next := takes{got: make(chan msg.MessageID, 4)}
		s := Sink{Lanes: l, Next: next}
		release := make(chan struct{})
		if err := l.Submit(context.Background(), "busy", func() { <-release }); err != nil {
			t.Fatal(err)
		}
		called := false
		start := time.Now()
		m := msg.Message{ID: "m1", Channel: "feishu", Peer: msg.Peer{Kind: msg.Group, ID: "oc_1"}}
		err := s.TryTake(context.Background(), m, nil, func(error) { called = true }, 2*time.Second)
		if !errors.Is(err, ErrFull) || time.Since(start) != 2*time.Second || called {
			t.Fatalf("TryTake on full lanes: %v after %v, done called %v", err, time.Since(start), called)
		}
		close(release)
		synctest.Wait()
		outcome := make(chan error, 1)
		if err := s.TryTake(context.Background(), m, nil, func(err error) { outcome <- err }, 2*time.Second); err != nil {
			t.Fatal(err)
		}
		if id := <-next.got; id != "m1" {
			t.Errorf("took %q", id)
		}
		if err := <-outcome; err != nil {
			t.Errorf("outcome %v", err)
		}
	})
}
