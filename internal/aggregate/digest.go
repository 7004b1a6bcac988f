package aggregate

import (
	"sync"
	"time"

	"github.com/pincerbot/pincer/internal/msg"
)

// DigestOptions configure digest windows.
type DigestOptions[T any] struct {
	// Interval after a window opens, it flushes, if it holds at least
	// MinMessages; otherwise it waits another Interval, and so on.
	Interval    time.Duration
	MinMessages int
	// MaxMessages flushes at once, whatever MinMessages says.
	MaxMessages int
	// MaxChars trims the buffer from the oldest end; Size measures a
	// message (its transcript line), its text length when nil.
	MaxChars int
	Size     func(msg.Message) int
	Flush    func(Flushed[T])
}

// Digest collects every message of a chat into one window per key (the
// peer), ignoring triggers, and flushes it on a timer or when full.
type Digest[T any] struct {
	opts DigestOptions[T]

	mu      sync.Mutex
	windows map[string]*dgWindow[T]
}

type dgWindow[T any] struct {
	entries []Entry[T]
	sizes   []int // Size of each entry, measured once
	size    int
	timer   *time.Timer
	// every is the window's interval, and due when the timer fires.
	every time.Duration
	due   time.Time
}

// NewDigest returns empty windows; MinMessages is clamped to MaxMessages.
func NewDigest[T any](o DigestOptions[T]) *Digest[T] {
	o.MinMessages = min(o.MinMessages, o.MaxMessages)
	if o.Size == nil {
		o.Size = chars
	}
	return &Digest[T]{opts: o, windows: map[string]*dgWindow[T]{}}
}

// Accept adds a message to its window, opening one if needed, and
// returns the entries trimmed away to stay within MaxChars.
func (d *Digest[T]) Accept(key string, e Entry[T]) (dropped []Entry[T]) {
	return d.AcceptEvery(key, e, 0)
}

// AcceptEvery is Accept for a chat with an interval of its own (0: the
// Interval of the options), which a window it opens keeps.
func (d *Digest[T]) AcceptEvery(key string, e Entry[T], every time.Duration) (dropped []Entry[T]) {
	if every <= 0 {
		every = d.opts.Interval
	}
	d.mu.Lock()
	w := d.windows[key]
	if w == nil {
		w = &dgWindow[T]{every: every, due: time.Now().Add(every)}
		d.windows[key] = w
		w.timer = time.AfterFunc(every, func() { d.tick(key, w) })
	}
	n := d.opts.Size(e.Message)
	w.entries = append(w.entries, e)
	w.sizes = append(w.sizes, n)
	w.size += n
	for w.size > d.opts.MaxChars && len(w.entries) > 1 {
		w.size -= w.sizes[0]
		dropped = append(dropped, w.entries[0])
		w.entries, w.sizes = w.entries[1:], w.sizes[1:]
	}
	if len(w.entries) >= d.opts.MaxMessages {
		f := d.endLocked(key, w, msg.FlushMaxMessages)
		d.mu.Unlock()
		d.opts.Flush(f)
		return dropped
	}
	d.mu.Unlock()
	return dropped
}

// tick is the interval timer: it flushes a window that holds enough
// messages and re-arms for one that does not.
func (d *Digest[T]) tick(key string, w *dgWindow[T]) {
	d.mu.Lock()
	if d.windows[key] != w {
		d.mu.Unlock()
		return
	}
	if len(w.entries) < d.opts.MinMessages {
		w.due = time.Now().Add(w.every)
		w.timer.Reset(w.every)
		d.mu.Unlock()
		return
	}
	f := d.endLocked(key, w, msg.FlushInterval)
	d.mu.Unlock()
	d.opts.Flush(f)
}

// Reschedule gives each open window the interval every says of its key
// now (0: the Interval of the options), as a chat's settings changed: a
// window whose interval changed is due its new interval after its period
// began, at once if that is past.
func (d *Digest[T]) Reschedule(every func(key string) time.Duration) {
	d.mu.Lock()
	defer d.mu.Unlock()
	now := time.Now()
	for key, w := range d.windows {
		next := every(key)
		if next <= 0 {
			next = d.opts.Interval
		}
		if next == w.every {
			continue
		}
		w.due = w.due.Add(next - w.every)
		w.every = next
		w.timer.Reset(max(0, w.due.Sub(now)))
	}
}

// Pending reports how many messages wait in key's window.
func (d *Digest[T]) Pending(key string) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	if w := d.windows[key]; w != nil {
		return len(w.entries)
	}
	return 0
}

// Stop drops every window and its timer; digests are not sent at
// shutdown.
func (d *Digest[T]) Stop() {
	d.mu.Lock()
	defer d.mu.Unlock()
	for key, w := range d.windows {
		w.timer.Stop()
		delete(d.windows, key)
	}
}

func (d *Digest[T]) endLocked(key string, w *dgWindow[T], reason msg.FlushReason) Flushed[T] {
	delete(d.windows, key)
	w.timer.Stop()
	return Flushed[T]{Key: key, Entries: w.entries, Reason: reason}
}
