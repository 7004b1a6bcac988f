package channeltest

import (
	"context"
	"fmt"
	"sync"

	"github.com/pincerbot/pincer/internal/channel"
	"github.com/pincerbot/pincer/internal/msg"
)

// sink is the suite's channel.Taker: it records every message the
// adapter hands it, with its replier, in the order it is handed over, and
// reports each one's outcome only when the test finishes with it, so a
// replier stays usable (the web chat's lives as long as its request)
// until then.
type sink struct {
	mu   sync.Mutex
	got  []*arrival
	more chan struct{}
}

// arrival is one message the sink took.
type arrival struct {
	msg.Message
	replier channel.Replier
	once    sync.Once
	done    func(error)
}

// finish reports the message's outcome to the adapter, once.
func (a *arrival) finish() {
	a.once.Do(func() { a.done(nil) })
}

func newSink() *sink { return &sink{more: make(chan struct{})} }

var _ channel.Taker = (*sink)(nil)

// Take implements channel.Taker.
func (s *sink) Take(_ context.Context, m msg.Message, r channel.Replier, done func(error)) {
	if done == nil {
		done = func(error) {}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.got = append(s.got, &arrival{Message: m, replier: r, done: done})
	close(s.more)
	s.more = make(chan struct{})
}

// Dispatch implements channel.Sink: Take, then wait until the test is
// done with the message.
func (s *sink) Dispatch(ctx context.Context, m msg.Message, r channel.Replier) error {
	finished := make(chan error, 1)
	s.Take(ctx, m, r, func(err error) { finished <- err })
	select {
	case err := <-finished:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// finishAll reports the outcome of every message taken so far.
func (s *sink) finishAll() {
	s.mu.Lock()
	got := append([]*arrival(nil), s.got...)
	s.mu.Unlock()
	for _, a := range got {
		a.finish()
	}
}

// arrivals returns what the sink took so far, and a channel closed when
// it takes more.
func (s *sink) arrivals() ([]*arrival, <-chan struct{}) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*arrival(nil), s.got...), s.more
}

// waitFor waits until ok holds for what the sink took, and returns it.
func (s *sink) waitFor(ctx context.Context, what string, ok func([]*arrival) bool) ([]*arrival, error) {
	for {
		got, more := s.arrivals()
		if ok(got) {
			return got, nil
		}
		select {
		case <-more:
		case <-ctx.Done():
			return got, fmt.Errorf("waiting for %s: %w (the sink took %d messages)", what, ctx.Err(), len(got))
		}
	}
}

// waitIDs waits until the sink took a message with each of ids, and
// returns them in that order.
func (s *sink) waitIDs(ctx context.Context, ids ...msg.MessageID) ([]*arrival, error) {
	var out []*arrival
	_, err := s.waitFor(ctx, fmt.Sprintf("messages %v", ids), func(got []*arrival) bool {
		out = out[:0]
		for _, id := range ids {
			a := find(got, id)
			if a == nil {
				return false
			}
			out = append(out, a)
		}
		return true
	})
	return out, err
}

// find returns the first arrival of id, or nil.
func find(got []*arrival, id msg.MessageID) *arrival {
	for _, a := range got {
		if a.ID == id {
			return a
		}
	}
	return nil
}

// inChat returns the arrivals of peer, in the order the sink took them.
func inChat(got []*arrival, peer msg.Peer) []*arrival {
	var out []*arrival
	for _, a := range got {
		if a.Peer == peer {
			out = append(out, a)
		}
	}
	return out
}
