package onebot

import (
	"context"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/pincerbot/pincer/internal/msg"
)

// Pacer spaces the messages sent to one chat: a payload waits until the
// one before it to that chat is done, then until Gap (plus up to a fifth
// more, at random) after that one's last message. QQ treats a rapid run
// of messages to a group as risky; other chats are not held up. The parts
// of one payload are spaced by its sender (chunkSender.ChunkGap) while it
// holds the chat's turn. A zero Gap (or a nil Pacer) sends at once.
type Pacer struct {
	Gap time.Duration
	// Setting is the key path Gap comes from
	// ("channels.onebot.sendGapMs"), named in the trace of a reply that
	// waited for it.
	Setting string

	mu    sync.Mutex
	chats map[msg.Peer]*chatPace
}

// chatPace is one chat's turn: turn holds a token while a payload is
// being sent; last is when the chat's last message went out; users counts
// the payloads holding or waiting for the turn (a chat with none may be
// forgotten). last and users are guarded by Pacer.mu.
type chatPace struct {
	turn  chan struct{}
	last  time.Time
	users int
}

// wait blocks until it is peer's next payload's turn and the gap since
// the chat's last message has passed, and holds the turn for the caller,
// who must call done after the send. It returns how long it waited: 0
// when the turn was free and the gap past.
func (p *Pacer) wait(ctx context.Context, peer msg.Peer) (time.Duration, error) {
	if p == nil || p.Gap <= 0 {
		return 0, nil
	}
	start := time.Now()
	p.mu.Lock()
	if p.chats == nil {
		p.chats = map[msg.Peer]*chatPace{}
	}
	p.prune(start)
	c := p.chats[peer]
	if c == nil {
		c = &chatPace{turn: make(chan struct{}, 1)}
		p.chats[peer] = c
	}
	c.users++
	p.mu.Unlock()
	waited := false // blocked for the turn or the gap; else it took no wait
	select {
	case c.turn <- struct{}{}:
	default:
		waited = true
		select {
		case c.turn <- struct{}{}:
		case <-ctx.Done():
			p.leave(c, false)
			return time.Since(start), ctx.Err()
		}
	}
	p.mu.Lock()
	at := c.last
	p.mu.Unlock()
	if !at.IsZero() {
		at = at.Add(p.spacing())
	}
	if d := time.Until(at); d > 0 {
		waited = true
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-ctx.Done():
			p.leave(c, true)
			return time.Since(start), ctx.Err()
		case <-t.C:
		}
	}
	if !waited {
		return 0, nil
	}
	return time.Since(start), nil
}

// done ends the turn wait gave. sent says a message may have gone out
// (the send was attempted): the chat's next payload then waits the gap
// from now.
func (p *Pacer) done(peer msg.Peer, sent bool) {
	if p == nil || p.Gap <= 0 {
		return
	}
	p.mu.Lock()
	c := p.chats[peer]
	if sent && c != nil {
		c.last = time.Now()
	}
	p.mu.Unlock()
	if c != nil {
		p.leave(c, true)
	}
}

// leave gives up c's turn, when held, or the wait for it.
func (p *Pacer) leave(c *chatPace, held bool) {
	p.mu.Lock()
	c.users--
	p.mu.Unlock()
	if held {
		<-c.turn
	}
}

func (p *Pacer) spacing() time.Duration { return p.Gap + rand.N(p.Gap/5+1) }

// prune forgets chats nobody is sending to whose last message is long
// past, so the map stays small; p.mu is held.
func (p *Pacer) prune(now time.Time) {
	if len(p.chats) < 1024 {
		return
	}
	for peer, c := range p.chats {
		if c.users == 0 && now.Sub(c.last) > time.Minute+p.Gap {
			delete(p.chats, peer)
		}
	}
}
