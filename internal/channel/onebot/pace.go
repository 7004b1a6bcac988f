package onebot

import (
	"context"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/pincerbot/pincer/internal/msg"
)

// Pacer spaces the messages sent to one chat: each waits until Gap (plus
// up to a fifth more, at random) after the previous one to that chat
// finished. QQ treats a rapid run of messages to a group as risky; other
// chats are not held up.
type Pacer struct {
	Gap time.Duration

	mu   sync.Mutex
	next map[msg.Peer]time.Time
}

// wait blocks until peer's turn, and holds it for the caller: the next
// caller waits at least Gap more. done must follow the send.
func (p *Pacer) wait(ctx context.Context, peer msg.Peer) error {
	if p == nil || p.Gap <= 0 {
		return nil
	}
	now := time.Now()
	p.mu.Lock()
	if p.next == nil {
		p.next = map[msg.Peer]time.Time{}
	}
	at := p.next[peer]
	if at.Before(now) {
		at = now
	}
	p.next[peer] = at.Add(p.spacing())
	p.prune(now)
	p.mu.Unlock()
	if d := at.Sub(now); d > 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
	return nil
}

// done moves peer's next turn to Gap after now, when the send took longer
// than its slot (several chunks).
func (p *Pacer) done(peer msg.Peer) {
	if p == nil || p.Gap <= 0 {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if after := time.Now().Add(p.Gap); p.next[peer].Before(after) {
		p.next[peer] = after
	}
}

func (p *Pacer) spacing() time.Duration { return p.Gap + rand.N(p.Gap/5+1) }

// prune forgets chats whose turn is long past, so the map stays small.
func (p *Pacer) prune(now time.Time) {
	if len(p.next) < 1024 {
		return
	}
	for peer, at := range p.next {
		if now.Sub(at) > time.Minute {
			delete(p.next, peer)
		}
	}
}
