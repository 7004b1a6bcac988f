package onebot

import (
	"sync"

	"github.com/pincerbot/pincer/internal/msg"
)

// chatLanes takes the messages of each chat in one after the other, in the
// order they arrived, while different chats go on side by side: a chat's
// work runs on a goroutine of its own that lives while the chat has work
// queued.
type chatLanes struct {
	mu    sync.Mutex
	lanes map[msg.Peer]*[]func()
}

// run queues f on peer's lane, starting the lane on wg when it is idle.
func (l *chatLanes) run(peer msg.Peer, wg *sync.WaitGroup, f func()) {
	l.mu.Lock()
	if q, busy := l.lanes[peer]; busy {
		*q = append(*q, f)
		l.mu.Unlock()
		return
	}
	if l.lanes == nil {
		l.lanes = map[msg.Peer]*[]func(){}
	}
	q := new([]func())
	l.lanes[peer] = q
	l.mu.Unlock()
	wg.Go(func() {
		for {
			f()
			l.mu.Lock()
			if len(*q) == 0 {
				delete(l.lanes, peer)
				l.mu.Unlock()
				return
			}
			f = (*q)[0]
			*q = (*q)[1:]
			l.mu.Unlock()
		}
	})
}
