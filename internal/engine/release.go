package engine

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/pincerbot/pincer/internal/msg"
)

// A process that gives some chats up to another (the chats' partition
// moved) releases them: their turns, running or queued, are cut as a
// crash would cut them, and stay in the journal for the chats' next owner
// to resume (see ResumeWhere). Nothing of a cut turn is sent or stored
// after the cut: its reply so far is neither delivered nor kept in the
// transcript, so its next owner finds the turn as a crash leaves it.

// ErrReleased is the outcome of a message whose turn Release cut: its
// chat's next owner answers it.
var ErrReleased = errors.New("engine: the chat was released to another process")

// flight is one dispatched or resumed turn, from its dispatch until its
// dispatcher returns.
type flight struct {
	m   msg.Message
	key string
	// cancel cuts the turn's context; cut says Release cut it.
	cancel context.CancelCauseFunc
	cut    atomic.Bool
	done   chan struct{}
}

// flights are the turns in flight, for Release to find.
type flights struct {
	mu  sync.Mutex
	all map[*flight]struct{}
}

// track records a turn in flight; untrack, once it is over.
func (e *Engine) track(m msg.Message, key string, cancel context.CancelCauseFunc) *flight {
	f := &flight{m: m, key: key, cancel: cancel, done: make(chan struct{})}
	e.flights.mu.Lock()
	if e.flights.all == nil {
		e.flights.all = map[*flight]struct{}{}
	}
	e.flights.all[f] = struct{}{}
	e.flights.mu.Unlock()
	return f
}

func (e *Engine) untrack(f *flight) {
	e.flights.mu.Lock()
	delete(e.flights.all, f)
	e.flights.mu.Unlock()
	close(f.done)
}

// inFlight reports whether the turn key is in flight here.
func (e *Engine) inFlight(key string) bool {
	e.flights.mu.Lock()
	defer e.flights.mu.Unlock()
	for f := range e.flights.all {
		if f.key == key {
			return true
		}
	}
	return false
}

// released reports whether Release cut the turn ctx belongs to.
func released(ctx context.Context) bool {
	return errors.Is(context.Cause(ctx), ErrReleased)
}

// Release cuts the turns, running or queued, of the messages keep
// accepts, and returns once they have stopped (or ctx ended: then with
// its error, the turns still stopping). A cut turn sends nothing more,
// stores nothing more of its reply, and stays in the journal as admitted
// (it is not finished, given up, or counted as resumed), for the next
// owner's ResumeWhere to answer once; its dispatcher returns ErrReleased
// when it had not started. The heartbeat no longer goes to a released
// chat it last heard from. A message of a released chat that comes later
// is handled as any other.
//
// Release waits for the cut turns' own goroutines; a part of a reply
// already on the wire when the turn is cut may still be confirmed (see
// outbox.Release for the replies stored before the cut).
func (e *Engine) Release(ctx context.Context, keep func(msg.Message) bool) error {
	if keep == nil {
		return nil
	}
	// First the turns in flight: from now on they stop at their next
	// step, and a message among them that reaches its session's queue
	// after the queues were looked at below is not queued.
	var cut []*flight
	e.flights.mu.Lock()
	for f := range e.flights.all {
		if keep(f.m) {
			f.cut.Store(true)
			f.cancel(ErrReleased)
			cut = append(cut, f)
		}
	}
	e.flights.mu.Unlock()
	// Then the sessions' lanes: queued and steered messages leave them,
	// and the running turns of those chats are cut.
	for i := range e.shards {
		sh := &e.shards[i]
		sh.mu.Lock()
		for _, l := range sh.lanes {
			l.queue = releaseWaiting(l.queue, keep)
			l.steered = releaseWaiting(l.steered, keep)
			if l.cancel != nil && keep(l.current) {
				l.cancel(ErrReleased)
			}
		}
		sh.mu.Unlock()
	}
	if t := e.last.Load(); t != nil && keep(msg.Message{Channel: t.channel, Account: t.account, Peer: t.peer}) {
		e.last.CompareAndSwap(t, nil)
	}
	for _, f := range cut {
		select {
		case <-f.done:
		case <-ctx.Done():
			return fmt.Errorf("release: turns still stopping: %w", ctx.Err())
		}
	}
	if len(cut) > 0 {
		e.log.Info("turns released to the chats' next owner", "turns", len(cut))
	}
	return nil
}

// releaseWaiting takes the messages keep accepts out of ws; they learn
// ErrReleased. The caller holds the lane's lock.
func releaseWaiting(ws []*waiting, keep func(msg.Message) bool) []*waiting {
	kept := ws[:0]
	for _, w := range ws {
		if keep(w.mc.Message) {
			w.done <- ErrReleased
			continue
		}
		kept = append(kept, w)
	}
	clear(ws[len(kept):])
	return kept
}

// keyMessage is the message a turn key (see TurnKey) names: its channel,
// account, chat and id.
func keyMessage(key string) (msg.Message, bool) {
	rest, ok := strings.CutPrefix(key, "in:")
	if !ok {
		return msg.Message{}, false
	}
	f := strings.SplitN(rest, ":", 5)
	if len(f) != 5 {
		return msg.Message{}, false
	}
	peer, err := msg.ParsePeer(f[2] + ":" + f[3])
	if err != nil {
		return msg.Message{}, false
	}
	return msg.Message{Channel: msg.ChannelID(f[0]), Account: msg.AccountID(f[1]), Peer: peer, ID: msg.MessageID(f[4])}, true
}
