package lanes

import (
	"context"
	"errors"
	"sync"
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
	t := newTake(s.Next, ctx, &m, r, done)
	if err := submit(ctx, Key(m), t.run); err != nil {
		t.recycle()
		done(err)
	}
}

// take is a message on its way through a lane to next.Take. Taken from a
// pool, it is what a closure over the message was without an allocation:
// the closure moved the message, a few hundred bytes, to the heap for
// every message of a burst.
type take struct {
	next channel.Taker
	ctx  context.Context
	m    msg.Message
	r    channel.Replier
	done func(error)
	// run is do, bound once for the pooled take's lifetime.
	run func()
}

// takePool recycles the takes of Take and TryTake.
var takePool sync.Pool

func newTake(next channel.Taker, ctx context.Context, m *msg.Message, r channel.Replier, done func(error)) *take {
	t, _ := takePool.Get().(*take)
	if t == nil {
		t = new(take)
		t.run = t.do
	}
	t.next, t.ctx, t.m, t.r, t.done = next, ctx, *m, r, done
	return t
}

// do hands the message on; the take goes back to the pool first, as the
// lane runs it once.
func (t *take) do() {
	next, ctx, m, r, done := t.next, t.ctx, t.m, t.r, t.done
	t.recycle()
	next.Take(ctx, m, r, done)
}

// recycle clears t (it holds no message for the garbage collector to
// keep) and puts it back.
func (t *take) recycle() {
	*t = take{run: t.run}
	takePool.Put(t)
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
	t := newTake(s.Next, ctx, &m, r, done)
	err := s.Lanes.TrySubmit(ctx, Key(m), wait, t.run)
	if err != nil {
		t.recycle()
	}
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
