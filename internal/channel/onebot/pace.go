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
	// For, when set, gives a chat's own gap and the key path it comes
	// from; ok false keeps Gap for the chat.
	For func(peer msg.Peer) (gap time.Duration, setting string, ok bool)

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
// who must call done after the send when held is true. It returns how
// long it waited: 0 when the turn was free and the gap past.
func (p *Pacer) wait(ctx context.Context, peer msg.Peer) (waitedFor time.Duration, held bool, err error) {
	gap, _ := p.gapOf(peer)
	if gap <= 0 {
		return 0, false, nil
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
			return time.Since(start), false, ctx.Err()
		}
	}
	p.mu.Lock()
	at := c.last
	p.mu.Unlock()
	if !at.IsZero() {
		at = at.Add(spacing(gap))
	}
	if d := time.Until(at); d > 0 {
		waited = true
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-ctx.Done():
			p.leave(c, true)
			return time.Since(start), false, ctx.Err()
		case <-t.C:
		}
	}
	if !waited {
		return 0, true, nil
	}
	return time.Since(start), true, nil
}

// gapOf is the gap of peer's chat and the key path it comes from.
func (p *Pacer) gapOf(peer msg.Peer) (time.Duration, string) {
	if p == nil {
		return 0, ""
	}
	if p.For != nil {
		if gap, setting, ok := p.For(peer); ok {
			return gap, setting
		}
	}
	return p.Gap, p.Setting
}

// done ends the turn wait gave (held). sent says a message may have gone
// out (the send was attempted): the chat's next payload then waits the
// gap from now.
func (p *Pacer) done(peer msg.Peer, sent bool) {
	if p == nil {
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

func spacing(gap time.Duration) time.Duration { return gap + rand.N(gap/5+1) }

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
