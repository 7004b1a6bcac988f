package onebot

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/pincerbot/pincer/internal/msg"
)

// errSendPaused is returned for sends to a chat whose last send hit QQ's
// risk control, until the pause is over.
var errSendPaused = errors.New("onebot: sending paused after probable risk control")

// sendBackoff pauses sends to a chat after a probable risk-control
// failure: the first pause is Min, each further failure doubles it up to
// Max, with jitter; a successful send clears it. It replaces the retry
// storm that makes a flagged account worse.
type sendBackoff struct {
	Min, Max time.Duration

	mu     sync.Mutex
	paused map[msg.Peer]pause
}

type pause struct {
	until time.Time
	next  time.Duration
}

// defaultSendBackoff pauses from one minute up to half an hour.
func defaultSendBackoff() *sendBackoff { return &sendBackoff{Min: time.Minute, Max: 30 * time.Minute} }

// check fails with errSendPaused while peer is paused.
func (b *sendBackoff) check(peer msg.Peer) error {
	if b == nil {
		return nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	p, ok := b.paused[peer]
	if !ok {
		return nil
	}
	if left := time.Until(p.until); left > 0 {
		return &pausedError{peer: peer, left: left}
	}
	return nil
}

// pausedError is errSendPaused with the time left, for the outbox's next
// try.
type pausedError struct {
	peer msg.Peer
	left time.Duration
}

func (e *pausedError) Error() string {
	return fmt.Sprintf("%v: %s for %s more", errSendPaused, e.peer, e.left.Round(time.Second))
}

func (e *pausedError) Unwrap() error { return errSendPaused }

// RetryAfter says when sends to the chat resume.
func (e *pausedError) RetryAfter() time.Duration { return e.left }

// fail pauses peer and returns for how long.
func (b *sendBackoff) fail(peer msg.Peer) time.Duration {
	if b == nil {
		return 0
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.paused == nil {
		b.paused = map[msg.Peer]pause{}
	}
	d := b.Min
	if p, ok := b.paused[peer]; ok {
		d = p.next
	}
	d = min(d, b.Max)
	// Up to a quarter more, so accounts and chats do not resume in step.
	wait := d + rand.N(d/4+1)
	b.paused[peer] = pause{until: time.Now().Add(wait), next: min(2*d, b.Max)}
	return wait
}

// ok clears peer's pause after a successful send.
func (b *sendBackoff) ok(peer msg.Peer) {
	if b == nil {
		return
	}
	b.mu.Lock()
	delete(b.paused, peer)
	b.mu.Unlock()
}
