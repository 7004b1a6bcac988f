package engine

import (
	"context"
	"errors"
	"sync"
	"time"
)

// SlotPatience is how long a model call may wait for its provider's first
// word while holding one of the global slots; after that it lends the slot
// to a turn that may be answered sooner. A call that waits on a hung
// provider costs nothing but its wait.
const SlotPatience = 5 * time.Second

// errTurnTimeout is the cause of a turn cut at its deadline.
var errTurnTimeout = errors.New("the turn took longer than its time limit")

// slot is one of the global limit's slots, held by one model run.
type slot struct {
	e     *Engine
	mu    sync.Mutex
	held  bool
	timer *time.Timer
}

// acquire takes a slot, waiting until one is free or ctx ends.
func (e *Engine) acquire(ctx context.Context) (*slot, error) {
	select {
	case e.slots <- struct{}{}:
		return &slot{e: e, held: true}, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// lend gives the slot back if no text arrives within SlotPatience: a model
// call starts.
func (s *slot) lend() {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.held {
		return
	}
	if s.timer == nil {
		s.timer = time.AfterFunc(SlotPatience, s.release)
	} else {
		s.timer.Reset(SlotPatience)
	}
}

// busy says the call is producing text: it keeps its slot (if it has not
// lent it already; then it goes on without one rather than wait).
func (s *slot) busy() {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.timer != nil {
		s.timer.Stop()
	}
}

// release frees the slot once.
func (s *slot) release() {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.timer != nil {
		s.timer.Stop()
	}
	if s.held {
		s.held = false
		<-s.e.slots
	}
}
