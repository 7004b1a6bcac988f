package channeltest_test

import (
	"sync"

	"github.com/pincerbot/pincer/internal/msg"
)

// board is what a simulated platform received from the bot, per chat,
// with a channel that is closed on every new message: Platform.Sent.
type board struct {
	mu    sync.Mutex
	texts map[msg.Peer][]string
	more  chan struct{}
}

func newBoard() *board {
	return &board{texts: map[msg.Peer][]string{}, more: make(chan struct{})}
}

// add records text as received in peer.
func (b *board) add(peer msg.Peer, text string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.texts[peer] = append(b.texts[peer], text)
	close(b.more)
	b.more = make(chan struct{})
}

// get returns what peer received so far and a channel closed on the next
// message anywhere.
func (b *board) get(peer msg.Peer) ([]string, <-chan struct{}) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.texts[peer]...), b.more
}
