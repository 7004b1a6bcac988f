package reply

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// TypingPolicy says when a turn shows a typing indicator.
type TypingPolicy string

// Typing policies.
const (
	// TypingUser: a person is waiting; show typing from the start of the run.
	TypingUser TypingPolicy = "user"
	// TypingSystem: a system-triggered turn; show typing only once visible
	// text is on its way, so a silent outcome shows nothing.
	TypingSystem TypingPolicy = "system"
	// TypingHeartbeat: never show typing.
	TypingHeartbeat TypingPolicy = "heartbeat"
)

// Typing defaults.
const (
	DefaultTypingInterval = 6 * time.Second
	DefaultTypingTTL      = 2 * time.Minute
)

// TypingOptions configure a Typing controller.
type TypingOptions struct {
	// Set turns the platform's indicator on or off.
	Set    func(ctx context.Context, on bool) error
	Policy TypingPolicy
	// Interval is how often the indicator is refreshed; 6s when zero.
	Interval time.Duration
	// TTL force-stops the indicator, whatever happens; 2 min when zero.
	TTL    time.Duration
	Logger *slog.Logger
}

// Typing shows a typing indicator for one turn: started per policy,
// refreshed on an interval, and stopped on the final reply, an error, a
// silent outcome, or after its TTL, so it can never stay stuck.
type Typing struct {
	ctx  context.Context
	opts TypingOptions

	mu      sync.Mutex
	started bool
	stopped bool
	done    chan struct{}
	exited  chan struct{}
}

// NewTyping returns a controller; nothing is shown until RunStarted or
// TextStarted, per policy.
func NewTyping(ctx context.Context, o TypingOptions) *Typing {
	if o.Interval <= 0 {
		o.Interval = DefaultTypingInterval
	}
	if o.TTL <= 0 {
		o.TTL = DefaultTypingTTL
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return &Typing{ctx: ctx, opts: o, done: make(chan struct{}), exited: make(chan struct{})}
}

// RunStarted is called when the model run begins.
func (t *Typing) RunStarted() {
	if t.opts.Policy == TypingUser {
		t.start()
	}
}

// TextStarted is called when visible reply text begins to stream.
func (t *Typing) TextStarted() {
	if t.opts.Policy == TypingUser || t.opts.Policy == TypingSystem {
		t.start()
	}
}

func (t *Typing) start() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.started || t.stopped || t.opts.Set == nil {
		return
	}
	t.started = true
	go t.loop()
}

// loop shows the indicator, refreshes it and turns it off at the end.
func (t *Typing) loop() {
	defer close(t.exited)
	t.set(true)
	refresh := time.NewTicker(t.opts.Interval)
	defer refresh.Stop()
	deadline := time.Now().Add(t.opts.TTL)
	ttl := time.NewTimer(t.opts.TTL)
	defer ttl.Stop()
	expire := func() {
		t.opts.Logger.Warn("typing indicator hit its TTL and was force-stopped", "ttl", t.opts.TTL.String())
		t.set(false)
	}
	for {
		select {
		case <-refresh.C:
			// A refresh due at the same instant as the TTL loses to it:
			// the indicator never turns back on at its deadline.
			if !time.Now().Before(deadline) {
				expire()
				return
			}
			t.set(true)
		case <-ttl.C:
			expire()
			return
		case <-t.done:
			t.set(false)
			return
		case <-t.ctx.Done():
			// The turn is gone; turn the indicator off on a context of
			// its own so it is not left on.
			ctx, cancel := context.WithTimeout(context.WithoutCancel(t.ctx), 5*time.Second)
			defer cancel()
			if err := t.opts.Set(ctx, false); err != nil {
				t.opts.Logger.Debug("typing off", "err", err)
			}
			return
		}
	}
}

func (t *Typing) set(on bool) {
	if err := t.opts.Set(t.ctx, on); err != nil {
		t.opts.Logger.Debug("typing indicator", "on", on, "err", err)
	}
}

// Stop turns the indicator off and waits until it is. It is safe to call
// more than once and before the indicator ever started.
func (t *Typing) Stop() {
	t.mu.Lock()
	if t.stopped {
		t.mu.Unlock()
		return
	}
	t.stopped = true
	started := t.started
	close(t.done)
	t.mu.Unlock()
	if started {
		<-t.exited
	}
}
