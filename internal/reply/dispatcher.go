package reply

import (
	"context"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/pincerbot/pincer/internal/msg"
)

// Kind is the kind of a reply payload.
type Kind string

// Payload kinds.
const (
	KindTool  Kind = "tool"
	KindBlock Kind = "block"
	KindFinal Kind = "final"
)

// DelayRange is the human delay between streamed blocks; the zero value
// means no delay.
type DelayRange struct {
	Min, Max time.Duration
}

// DefaultHumanDelay is the range of the "natural" human delay.
var DefaultHumanDelay = DelayRange{Min: 800 * time.Millisecond, Max: 2500 * time.Millisecond}

// pick returns a delay drawn uniformly from the range.
func (r DelayRange) pick() time.Duration {
	if r.Max <= r.Min {
		return r.Min
	}
	return r.Min + rand.N(r.Max-r.Min+1)
}

// DispatcherOptions configure a Dispatcher.
type DispatcherOptions struct {
	// Deliver sends one normalized payload.
	Deliver func(ctx context.Context, kind Kind, p msg.Outbound) error
	// Normalizer prepares payloads; nil delivers them as they are.
	Normalizer *Normalizer
	// HumanDelay is waited before every block but the first.
	HumanDelay DelayRange
	// OnError learns of failed deliveries; delivery goes on with the next.
	OnError func(err error, kind Kind)
	// OnIdle runs once, after Finish was called, when every payload is
	// done.
	OnIdle func()
}

// Dispatcher delivers the payloads of one turn strictly in order, one at a
// time. A reservation held from creation until Finish keeps it from going
// idle between payloads, however fast each is delivered, so idle means the
// turn is over and everything is out.
//
// Tool results and blocks go out in the background as they come, on a
// goroutine of the dispatcher's. The final reply, which ends the turn, goes
// out with them when they are still going out, else at Finish, on the
// caller's goroutine, which waits for it anyway, rather than on a goroutine
// of its own.
type Dispatcher struct {
	ctx  context.Context
	opts DispatcherOptions

	mu        sync.Mutex
	queue     []job
	running   bool
	pending   int // queued or delivering, plus 1 until Finish
	completed bool
	blocks    int // blocks delivered or being delivered
	idle      chan struct{}
}

type job struct {
	kind Kind
	p    msg.Outbound
}

// NewDispatcher returns a Dispatcher whose deliveries run under ctx.
func NewDispatcher(ctx context.Context, o DispatcherOptions) *Dispatcher {
	return &Dispatcher{ctx: ctx, opts: o, pending: 1, idle: make(chan struct{})}
}

// SendTool queues a tool result; see Send.
func (d *Dispatcher) SendTool(p msg.Outbound) bool { return d.Send(KindTool, p) }

// SendBlock queues a streamed block; see Send.
func (d *Dispatcher) SendBlock(p msg.Outbound) bool { return d.Send(KindBlock, p) }

// SendFinal queues the final reply; see Send.
func (d *Dispatcher) SendFinal(p msg.Outbound) bool { return d.Send(KindFinal, p) }

// Send queues p. It returns false when p is dropped by normalization or the
// dispatcher has finished. A final reply waits for Finish unless earlier
// payloads are still going out (see Dispatcher).
func (d *Dispatcher) Send(kind Kind, p msg.Outbound) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.completed {
		return false
	}
	if d.opts.Normalizer != nil {
		var ok bool
		if p, ok = d.opts.Normalizer.Normalize(kind, p); !ok {
			return false
		}
	}
	d.pending++
	d.queue = append(d.queue, job{kind, p})
	if !d.running && kind != KindFinal {
		d.running = true
		go d.drain()
	}
	return true
}

// drain delivers queued jobs in order until the queue is empty.
func (d *Dispatcher) drain() {
	for {
		d.mu.Lock()
		if len(d.queue) == 0 {
			d.running = false
			d.mu.Unlock()
			return
		}
		j := d.queue[0]
		d.queue = d.queue[1:]
		delay := j.kind == KindBlock && d.blocks > 0
		if j.kind == KindBlock {
			d.blocks++
		}
		d.mu.Unlock()

		if delay && d.opts.HumanDelay.Max > 0 {
			wait(d.ctx, d.opts.HumanDelay.pick())
		}
		if err := d.opts.Deliver(d.ctx, j.kind, j.p); err != nil && d.opts.OnError != nil {
			d.opts.OnError(err, j.kind)
		}
		d.release()
	}
}

// release drops one pending count and signals idle at zero.
func (d *Dispatcher) release() {
	d.mu.Lock()
	d.pending--
	idle := d.pending == 0
	d.mu.Unlock()
	if idle {
		if d.opts.OnIdle != nil {
			d.opts.OnIdle()
		}
		close(d.idle)
	}
}

// Finish says no more payloads will come, releases the reservation and
// returns once everything queued went out; what is queued and not going
// out yet (the final reply) goes out on the caller's goroutine. Calling it
// again only waits.
func (d *Dispatcher) Finish() {
	d.mu.Lock()
	first := !d.completed
	d.completed = true
	start := first && !d.running && len(d.queue) > 0
	if start {
		d.running = true
	}
	d.mu.Unlock()
	if first {
		d.release()
	}
	if start {
		d.drain()
	}
	<-d.idle
}

func wait(ctx context.Context, dur time.Duration) {
	t := time.NewTimer(dur)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}
