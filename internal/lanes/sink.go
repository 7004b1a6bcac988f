package lanes

import (
	"context"

	"github.com/pincerbot/pincer/internal/channel"
	"github.com/pincerbot/pincer/internal/msg"
)

// Sink takes messages in through Next in per-chat order on Lanes: every
// message of a chat (channel, account and peer) is handed to Next.Take on
// that chat's lane, after the ones that came before it, while other chats
// go on side by side. Take returns once the message is queued — it blocks
// only while the lanes are full.
type Sink struct {
	Lanes *Lanes
	Next  channel.Taker
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
	if err := s.Lanes.Submit(ctx, Key(m), func() { s.Next.Take(ctx, m, r, done) }); err != nil {
		done(err)
	}
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
