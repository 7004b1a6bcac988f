package lanes

import (
	"context"
	"errors"
	"time"

	"github.com/pincerbot/pincer/internal/channel"
	"github.com/pincerbot/pincer/internal/msg"
)

// Sink takes messages in through Next in per-chat order on Lanes: every
// message of a chat (channel, account and peer) is handed to Next.Take on
// that chat's lane, after the ones that came before it, while other chats
// go on side by side. Take returns once the message is queued (or, Inline,
// taken in) — it blocks only while the lanes are full.
type Sink struct {
	Lanes *Lanes
	Next  channel.Taker
	// Inline takes a message in on the caller's goroutine when the lanes
	// are idle (see Lanes.Run), for a reader whose Next never waits for
	// the platform it reads from.
	Inline bool
}

var _ channel.Taker = Sink{}

// Key is the lane of a message: its chat.
func Key(m msg.Message) string {
	return string(m.Channel) + "\x00" + string(m.Account) + "\x00" + string(m.Peer.Kind) + "\x00" + m.Peer.ID
}

// Take implements channel.Taker.
func (s Sink) Take(ctx context.Context, m msg.Message, r channel.Replier, done func(error)) {
	if done == nil {
		done = func(error) {}
	}
	submit := s.Lanes.Submit
	if s.Inline {
		submit = s.Lanes.Run
	}
	if err := submit(ctx, Key(m), func() { s.Next.Take(ctx, m, r, done) }); err != nil {
		done(err)
	}
}

// TryTake is Take for a caller that would rather be asked to deliver the
// message again than wait (an HTTP request the platform retries): when
// the lanes stay full for wait it returns ErrFull and done is not called;
// the message was not taken in. ctx is the message's context, not the
// bound of the wait.
func (s Sink) TryTake(ctx context.Context, m msg.Message, r channel.Replier, done func(error), wait time.Duration) error {
	if done == nil {
		done = func(error) {}
	}
	err := s.Lanes.TrySubmit(ctx, Key(m), wait, func() { s.Next.Take(ctx, m, r, done) })
	if errors.Is(err, ErrFull) {
		return err
	}
	if err != nil {
		done(err)
	}
	return nil
}

// Dispatch implements channel.Sink: Take, then wait for the outcome.
func (s Sink) Dispatch(ctx context.Context, m msg.Message, r channel.Replier) error {
	answered := make(chan error, 1)
	s.Take(ctx, m, r, func(err error) {
		select {
		case answered <- err:
		default: // told once already
		}
	})
	select {
	case err := <-answered:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}
