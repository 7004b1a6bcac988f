// Package gopool runs functions on goroutines it keeps for reuse.
//
// A goroutine starts on a small stack and grows it by copying, doubling it
// each time. A turn runs deep code (the engine, the model's HTTP client,
// SQLite's writer hand-off, the platform's send) and so copied its new
// goroutine's stack several times, turn after turn. A goroutine kept for
// the next function has grown already, until the garbage collector shrinks
// a stack it finds mostly unused. Waiting for the functions is a
// sync.WaitGroup's Go and Wait, as before.
package gopool

import (
	"sync"
	"sync/atomic"
	"time"
)

// Pool runs functions on goroutines that wait up to an idle time for the
// next one. The zero value is not usable: see New.
type Pool struct {
	idle    time.Duration
	handoff chan func()
	tasks   sync.WaitGroup
	stop    chan struct{}
	once    sync.Once
	// live counts the pool's goroutines.
	live atomic.Int32
}

// New returns a pool whose goroutines end after idle without work.
func New(idle time.Duration) *Pool {
	return &Pool{idle: idle, handoff: make(chan func()), stop: make(chan struct{})}
}

// Go runs f on a goroutine of the pool that waits for work, or on a new
// one when none does. It never waits for f.
func (p *Pool) Go(f func()) {
	p.tasks.Add(1)
	select {
	case p.handoff <- f:
	default:
		p.live.Add(1)
		go p.work(f)
	}
}

// work runs f and then what it is handed, until it waits idle for long or
// the pool is closed.
func (p *Pool) work(f func()) {
	defer p.live.Add(-1)
	timer := time.NewTimer(p.idle)
	defer timer.Stop()
	for {
		p.run(f)
		timer.Reset(p.idle)
		select {
		case f = <-p.handoff:
		case <-timer.C:
			return
		case <-p.stop:
			return
		}
	}
}

// run runs f and counts it done, even when it panics (the panic goes on).
func (p *Pool) run(f func()) {
	defer p.tasks.Done()
	f()
}

// Wait waits until every function handed to Go so far has returned.
func (p *Pool) Wait() { p.tasks.Wait() }

// Close ends the goroutines that wait for work, now and as each finishes
// what it runs. Functions handed to Go afterwards still run, each on a
// goroutine of its own.
func (p *Pool) Close() { p.once.Do(func() { close(p.stop) }) }
