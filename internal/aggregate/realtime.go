package aggregate

import (
	"strings"
	"sync"
	"time"

	"github.com/pincerbot/pincer/internal/msg"
)

// RealtimeOptions configure realtime windows.
type RealtimeOptions[T any] struct {
	// Disabled keeps no windows: a triggered message flushes alone at once
	// (immediate) and the others are dropped.
	Disabled bool
	// Window is the quiet time that ends a window, reset by every message.
	Window time.Duration
	// MaxWindow ends a window this long after it opened, whatever comes.
	MaxWindow time.Duration
	// MaxMessages and MaxChars end a window once reached (messages) or
	// exceeded (characters of text).
	MaxMessages int
	MaxChars    int
	// Flush receives every ended window. It is called without locks held,
	// from Accept (capacity, immediate) or a timer; it should hand the
	// batch off rather than run the turn.
	Flush func(Flushed[T])
}

// Realtime merges bursts: a triggered message opens a window for its key
// (peer and sender); every later message with that key joins it until it
// ends.
type Realtime[T any] struct {
	opts RealtimeOptions[T]
	// shape is the options' shape.
	shape Shape

	mu      sync.Mutex
	windows map[string]*rtWindow[T]
}

// Shape is the form of one chat's windows, in place of the options'
// Disabled, Window, MaxWindow, MaxMessages and MaxChars.
type Shape struct {
	Disabled          bool
	Window, MaxWindow time.Duration
	MaxMessages       int
	MaxChars          int
}

// shapeOf is s, or the options' shape when s is nil.
func (r *Realtime[T]) shapeOf(s *Shape) *Shape {
	if s != nil {
		return s
	}
	return &r.shape
}

type rtWindow[T any] struct {
	// shape is the chat's, as the window opened.
	shape   *Shape
	opened  time.Time
	entries []Entry[T]
	chars   int
	trigger msg.TriggerReason
	quiet   *time.Timer
	hard    *time.Timer
}

// NewRealtime returns empty windows.
func NewRealtime[T any](o RealtimeOptions[T]) *Realtime[T] {
	return &Realtime[T]{
		opts:    o,
		shape:   Shape{Disabled: o.Disabled, Window: o.Window, MaxWindow: o.MaxWindow, MaxMessages: o.MaxMessages, MaxChars: o.MaxChars},
		windows: map[string]*rtWindow[T]{},
	}
}

// Accept offers a message with its trigger decision. It reports whether
// the message was taken (into a window or an immediate batch); an
// untriggered message with no open window is not.
func (r *Realtime[T]) Accept(key string, e Entry[T], triggered bool, reason msg.TriggerReason) bool {
	return r.AcceptIn(key, e, triggered, reason, nil)
}

// AcceptIn is Accept for a chat whose windows have a shape of their own
// (nil: the options'); a window keeps the shape it opened with.
func (r *Realtime[T]) AcceptIn(key string, e Entry[T], triggered bool, reason msg.TriggerReason, s *Shape) bool {
	s = r.shapeOf(s)
	if s.Disabled {
		if !triggered {
			return false
		}
		r.opts.Flush(Flushed[T]{Key: key, Entries: []Entry[T]{e}, Trigger: reason, Reason: msg.FlushImmediate})
		return true
	}
	r.mu.Lock()
	w := r.windows[key]
	if w == nil {
		if !triggered {
			r.mu.Unlock()
			return false
		}
		w = &rtWindow[T]{shape: s, trigger: reason, opened: time.Now()}
		r.windows[key] = w
		w.hard = time.AfterFunc(s.MaxWindow, func() { r.expire(key, w, msg.FlushMaxWindow) })
	}
	s = w.shape
	w.entries = append(w.entries, e)
	w.chars += chars(e.Message)
	var reason2 msg.FlushReason
	switch {
	case len(w.entries) >= s.MaxMessages:
		reason2 = msg.FlushMaxMessages
	case w.chars > s.MaxChars:
		reason2 = msg.FlushMaxChars
	}
	if reason2 != "" {
		f := r.endLocked(key, w, reason2)
		r.mu.Unlock()
		r.opts.Flush(f)
		return true
	}
	if w.quiet == nil {
		w.quiet = time.AfterFunc(s.Window, func() { r.expire(key, w, msg.FlushQuiet) })
	} else {
		w.quiet.Reset(s.Window)
	}
	r.mu.Unlock()
	return true
}

// Takes reports whether Accept would take a message with this trigger
// outcome now: windows are on and one is open for key, or it triggered.
func (r *Realtime[T]) Takes(key string, triggered bool) bool {
	return r.TakesIn(key, triggered, nil)
}

// TakesIn is Takes for a chat whose windows have a shape of their own.
func (r *Realtime[T]) TakesIn(key string, triggered bool, s *Shape) bool {
	if triggered {
		return true
	}
	if r.shapeOf(s).Disabled {
		return false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.windows[key] != nil
}

// FlushNow ends the window of key at once, if one is open (a command in
// it should not wait out the quiet time).
func (r *Realtime[T]) FlushNow(key string, reason msg.FlushReason) {
	r.mu.Lock()
	w := r.windows[key]
	if w == nil {
		r.mu.Unlock()
		return
	}
	f := r.endLocked(key, w, reason)
	r.mu.Unlock()
	r.opts.Flush(f)
}

// FlushAll ends every open window (shutdown).
func (r *Realtime[T]) FlushAll(reason msg.FlushReason) {
	r.mu.Lock()
	var out []Flushed[T]
	for key, w := range r.windows {
		out = append(out, r.endLocked(key, w, reason))
	}
	r.mu.Unlock()
	for _, f := range out {
		r.opts.Flush(f)
	}
}

// WindowInfo describes an open window.
type WindowInfo struct {
	Key      string
	Opened   time.Time
	Messages int
}

// Windows lists the open windows whose keys start with prefix.
func (r *Realtime[T]) Windows(prefix string) []WindowInfo {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []WindowInfo
	for key, w := range r.windows {
		if strings.HasPrefix(key, prefix) {
			out = append(out, WindowInfo{Key: key, Opened: w.opened, Messages: len(w.entries)})
		}
	}
	return out
}

// Open reports how many windows are open.
func (r *Realtime[T]) Open() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.windows)
}

// expire ends w by timer, unless it already ended.
func (r *Realtime[T]) expire(key string, w *rtWindow[T], reason msg.FlushReason) {
	r.mu.Lock()
	if r.windows[key] != w {
		r.mu.Unlock()
		return
	}
	f := r.endLocked(key, w, reason)
	r.mu.Unlock()
	r.opts.Flush(f)
}

func (r *Realtime[T]) endLocked(key string, w *rtWindow[T], reason msg.FlushReason) Flushed[T] {
	delete(r.windows, key)
	w.hard.Stop()
	if w.quiet != nil {
		w.quiet.Stop()
	}
	return Flushed[T]{Key: key, Entries: w.entries, Trigger: w.trigger, Reason: reason}
}

// Discard ends the window of key without flushing it and returns what it
// held (a stop command drops the burst it ends).
func (r *Realtime[T]) Discard(key string) []Entry[T] {
	r.mu.Lock()
	defer r.mu.Unlock()
	w := r.windows[key]
	if w == nil {
		return nil
	}
	return r.endLocked(key, w, "").Entries
}
