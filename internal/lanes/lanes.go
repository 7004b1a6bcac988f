// Package lanes runs work in per-key order on a bounded set of workers:
// the work of one key (a chat) runs one item after the other, in the order
// it was submitted, while different keys run side by side on at most
// Workers goroutines. At most Capacity items wait at once; Submit blocks
// beyond that, which is how a reader of a busy connection stops reading
// (the sender buffers) instead of memory growing without bound.
package lanes

import (
	"context"
	"errors"
	"sync"
	"time"
)

// ErrFull is returned by TrySubmit when no room freed in time.
var ErrFull = errors.New("lanes: the queue is full")

// ErrClosed is returned for work submitted after Close.
var ErrClosed = errors.New("lanes: closed")

// Options configure Lanes.
type Options struct {
	// Workers bounds the goroutines running work; 8 when zero.
	Workers int
	// Capacity bounds the items queued or running; 1024 when zero.
	Capacity int
	// OnPanic, when set, learns of a panic in a work item; the worker goes
	// on with the next item either way.
	OnPanic func(v any)
}

// Lanes runs work in per-key order. It is safe for concurrent use.
type Lanes struct {
	opts  Options
	slots chan struct{} // one per queued or running item

	mu      sync.Mutex
	lanes   map[string]*lane
	ready   []*lane // lanes with work and no worker, oldest first
	workers int
	closed  bool
	idle    *sync.Cond
	running int // items queued or running
	// Workers stay once started, parked on wake while nothing is ready,
	// so a trickle of messages wakes one instead of starting a goroutine
	// (and growing its stack again) for every message. parked counts the
	// workers parked and not yet woken.
	wake   *sync.Cond
	parked int
	// lastRun is when Run was last called.
	lastRun time.Time
}

// runInlineAfter is the quiet before an item that Run takes on the
// caller's goroutine: items closer together than this are a burst, which
// the workers take side by side.
const runInlineAfter = 200 * time.Microsecond

type lane struct {
	key   string
	items []func()
	// busy: a worker is running this lane's head.
	busy bool
}

// New returns Lanes.
func New(o Options) *Lanes {
	if o.Workers <= 0 {
		o.Workers = 8
	}
	if o.Capacity <= 0 {
		o.Capacity = 1024
	}
	l := &Lanes{opts: o, slots: make(chan struct{}, o.Capacity), lanes: map[string]*lane{}}
	l.idle = sync.NewCond(&l.mu)
	l.wake = sync.NewCond(&l.mu)
	return l
}

// Submit queues f on key's lane, after the work submitted there before.
// It blocks while Capacity items are queued or running, until there is
// room or ctx ends.
func (l *Lanes) Submit(ctx context.Context, key string, f func()) error {
	select {
	case l.slots <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	return l.enqueue(key, f)
}

// TrySubmit is Submit that gives up with ErrFull when no room frees
// within wait (an HTTP request that should rather be retried).
func (l *Lanes) TrySubmit(ctx context.Context, key string, wait time.Duration, f func()) error {
	select {
	case l.slots <- struct{}{}:
		return l.enqueue(key, f)
	default:
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case l.slots <- struct{}{}:
		return l.enqueue(key, f)
	case <-t.C:
		return ErrFull
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Run is Submit that runs f on the calling goroutine, before it returns,
// when nothing else is queued or running and the caller's last item came
// at least runInlineAfter before: at a trickle a message is then taken in
// without waking a worker (and the thread it runs on), while a burst
// still goes to the workers side by side. Otherwise f is queued as Submit
// queues it. f must not wait for anything the caller itself would provide.
func (l *Lanes) Run(ctx context.Context, key string, f func()) error {
	select {
	case l.slots <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	now := time.Now()
	l.mu.Lock()
	last := l.lastRun
	l.lastRun = now
	if l.closed || l.running > 0 || now.Sub(last) < runInlineAfter {
		l.mu.Unlock()
		return l.enqueue(key, f)
	}
	l.running++
	ln := &lane{key: key, busy: true}
	l.lanes[key] = ln
	l.mu.Unlock()

	l.run(f)

	l.mu.Lock()
	defer l.mu.Unlock()
	if l.ran(ln) {
		// Queued behind it meanwhile: a worker takes over.
		l.startWorker()
	}
	return nil
}

func (l *Lanes) enqueue(key string, f func()) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		<-l.slots
		return ErrClosed
	}
	l.running++
	ln := l.lanes[key]
	if ln == nil {
		ln = &lane{key: key}
		l.lanes[key] = ln
	}
	ln.items = append(ln.items, f)
	if !ln.busy && len(ln.items) == 1 {
		l.ready = append(l.ready, ln)
		l.startWorker()
	}
	return nil
}

// startWorker wakes a parked worker for a lane just made ready, or starts
// one if there is room; with neither, a busy worker takes the lane next.
// l.mu is held.
func (l *Lanes) startWorker() {
	switch {
	case l.parked > 0:
		l.parked--
		l.wake.Signal()
	case l.workers < l.opts.Workers:
		l.workers++
		go l.work()
	}
}

// work runs ready lanes' heads, parked while none is ready, until Close.
func (l *Lanes) work() {
	l.mu.Lock()
	for {
		for len(l.ready) == 0 {
			if l.closed {
				l.workers--
				l.idle.Broadcast()
				l.mu.Unlock()
				return
			}
			l.parked++
			l.wake.Wait() // whoever wakes it takes it off parked
		}
		ln := l.ready[0]
		l.ready = l.ready[1:]
		ln.busy = true
		f := ln.items[0]
		ln.items[0] = nil
		ln.items = ln.items[1:]
		l.mu.Unlock()

		l.run(f)

		l.mu.Lock()
		l.ran(ln)
	}
}

// ran settles the item of ln that just ran, with l.mu held: its slot is
// freed, and the lane goes to the back of ready when more of its items
// wait (other chats get their turn first), which ran reports, or is
// forgotten.
func (l *Lanes) ran(ln *lane) bool {
	<-l.slots
	l.running--
	ln.busy = false
	more := len(ln.items) > 0
	if more {
		l.ready = append(l.ready, ln)
	} else {
		delete(l.lanes, ln.key)
	}
	if l.running == 0 {
		l.idle.Broadcast()
	}
	return more
}

// run runs f; a panic in it stays in f (and is reported).
func (l *Lanes) run(f func()) {
	defer func() {
		if v := recover(); v != nil && l.opts.OnPanic != nil {
			l.opts.OnPanic(v)
		}
	}()
	f()
}

// Len counts the items queued or running.
func (l *Lanes) Len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.running
}

// Close refuses new work, waits for what was submitted to run, and stops
// the workers.
func (l *Lanes) Close() {
	l.mu.Lock()
	l.closed = true
	l.parked = 0
	l.wake.Broadcast()
	for l.running > 0 || l.workers > 0 {
		l.idle.Wait()
	}
	l.mu.Unlock()
}
