// Package logthrottle rate-limits repeated log records. Its Handler wraps
// a slog.Handler: of each kind of record it lets the first Burst through
// per Interval and drops the rest, and when the interval is over it emits
// one record that says how many it dropped, so a storm of identical
// warnings (a peer sending malformed frames, a full disk failing every
// write) costs a few lines a minute instead of one line per event, and
// the count still adds up.
//
// A record's kind is its level, its message and its scope: the values of
// the attributes named in Options.Scope ("component", "channel" and
// "account" by default), given to Logger.With or to the record itself,
// outside any group. Other attributes (a message id, an error) do not
// make a kind of their own.
//
// The record that reports the dropped ones has the same level, the
// message followed by " (repeated)", the attributes and the logger scope
// of the last record dropped, and suppressed=N (in that logger's group,
// if it has one open), the number dropped since the last record of that
// kind that was let through:
//
//	level=WARN msg="undecodable event (repeated)" channel=onebot err="…" suppressed=99995
//
// Records below Options.Level (debug, by default) pass untouched, and
// Enabled is the wrapped handler's, so disabled levels cost nothing.
package logthrottle

import (
	"context"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"
)

// Defaults of Options.
const (
	DefaultBurst    = 5
	DefaultInterval = time.Minute
	DefaultMaxKinds = 1000
)

// RepeatedSuffix ends the message of a record that reports dropped ones.
const RepeatedSuffix = " (repeated)"

// SuppressedKey is the attribute that counts the records dropped.
const SuppressedKey = "suppressed"

// overflowMessage is the message of the kind that collects records once
// MaxKinds kinds are tracked.
const overflowMessage = "log records of many kinds"

// Options configure a Handler; the zero value is the defaults.
type Options struct {
	// Burst is how many records of a kind pass per interval;
	// DefaultBurst when 0.
	Burst int
	// Interval is how long a kind's window lasts, from its first record;
	// DefaultInterval when 0.
	Interval time.Duration
	// Level is the lowest level throttled; records below it pass
	// untouched. slog.LevelInfo when nil: debug output, turned on to see
	// everything, shows everything.
	Level slog.Leveler
	// Scope names the attributes whose values are part of a record's kind;
	// component, channel and account when nil.
	Scope []string
	// MaxKinds bounds the kinds tracked in one interval; records of kinds
	// beyond it are counted together, per level. DefaultMaxKinds when 0.
	MaxKinds int
}

// Handler is a slog.Handler that throttles repeated records; see the
// package documentation. It is safe for concurrent use.
type Handler struct {
	inner slog.Handler
	lim   *limiter
	// scope is the part of the kind that WithAttrs gave; grouped is set
	// once a group is open, after which attributes are no longer scope.
	scope   string
	grouped bool
}

// New returns a Handler that passes what it lets through to h.
func New(h slog.Handler, o Options) *Handler {
	if o.Burst <= 0 {
		o.Burst = DefaultBurst
	}
	if o.Interval <= 0 {
		o.Interval = DefaultInterval
	}
	if o.Level == nil {
		o.Level = slog.LevelInfo
	}
	if o.Scope == nil {
		o.Scope = []string{"component", "channel", "account"}
	}
	if o.MaxKinds <= 0 {
		o.MaxKinds = DefaultMaxKinds
	}
	return &Handler{inner: h, lim: &limiter{opts: o, kinds: map[kind]*window{}}}
}

// Enabled reports whether the wrapped handler handles level.
func (h *Handler) Enabled(ctx context.Context, level slog.Level) bool {
	return h.inner.Enabled(ctx, level)
}

// Handle passes r on, unless the records of its kind are over their burst
// in the current interval.
func (h *Handler) Handle(ctx context.Context, r slog.Record) error {
	if r.Level < h.lim.opts.Level.Level() {
		return h.inner.Handle(ctx, r)
	}
	k := kind{level: r.Level, msg: r.Message, scope: h.scope}
	if !h.grouped {
		if s := h.lim.scopeOf(r); s != "" {
			k.scope += s
		}
	}
	if !h.lim.admit(k, r, h.inner) {
		return nil
	}
	return h.inner.Handle(ctx, r)
}

// WithAttrs returns a Handler whose records carry attrs; attributes named
// in Options.Scope become part of the kind of its records.
func (h *Handler) WithAttrs(attrs []slog.Attr) slog.Handler {
	if len(attrs) == 0 {
		return h
	}
	c := *h
	c.inner = h.inner.WithAttrs(attrs)
	if !h.grouped {
		for _, a := range attrs {
			c.scope += h.lim.scopeAttr(a)
		}
	}
	return &c
}

// WithGroup returns a Handler whose later attributes are in group name.
func (h *Handler) WithGroup(name string) slog.Handler {
	if name == "" {
		return h
	}
	c := *h
	c.inner = h.inner.WithGroup(name)
	c.grouped = true
	return &c
}

// Flush emits at once the reports of every kind whose records are being
// dropped, instead of at the end of their intervals; call it before the
// program exits.
func (h *Handler) Flush(ctx context.Context) {
	h.lim.mu.Lock()
	var due []*window
	for k, w := range h.lim.kinds {
		if w.suppressed > 0 {
			due = append(due, w)
			delete(h.lim.kinds, k)
		}
	}
	h.lim.mu.Unlock()
	slices.SortFunc(due, func(a, b *window) int { return a.start.Compare(b.start) })
	for _, w := range due {
		h.lim.report(ctx, w)
	}
}

// kind is what records are counted by.
type kind struct {
	level slog.Level
	msg   string
	scope string
}

// window counts the records of one kind in one interval.
type window struct {
	kind       kind
	start      time.Time
	passed     int
	suppressed int
	// last is the last record dropped and h the handler it went to, for
	// the report; timer emits the report when the interval ends.
	last     slog.Record
	h        slog.Handler
	timer    *time.Timer
	reported bool
}

// limiter is the state all the handlers derived from one New share.
type limiter struct {
	opts Options

	mu        sync.Mutex
	kinds     map[kind]*window
	nextSweep time.Time
}

// scopeAttr is a's part of a kind: " key=value" when a is a scope
// attribute, "" otherwise.
func (l *limiter) scopeAttr(a slog.Attr) string {
	if !slices.Contains(l.opts.Scope, a.Key) {
		return ""
	}
	return " " + a.Key + "=" + a.Value.String()
}

// scopeOf is the part of a kind a record's own attributes give.
func (l *limiter) scopeOf(r slog.Record) string {
	var b strings.Builder
	r.Attrs(func(a slog.Attr) bool {
		b.WriteString(l.scopeAttr(a))
		return true
	})
	return b.String()
}

// admit counts a record of kind k that would go to h, and reports whether
// it may pass.
func (l *limiter) admit(k kind, r slog.Record, h slog.Handler) bool {
	now := time.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	w := l.kinds[k]
	if w != nil && now.Sub(w.start) >= l.opts.Interval {
		// The window is over; if it dropped records, its timer reports
		// them (it has fired or is about to).
		delete(l.kinds, k)
		w = nil
	}
	if w == nil {
		if len(l.kinds) >= l.opts.MaxKinds && !l.sweep(now) {
			k = kind{level: k.level, msg: overflowMessage}
			w = l.kinds[k]
		}
		if w == nil {
			w = &window{kind: k, start: now}
			l.kinds[k] = w
		}
	}
	if w.passed < l.opts.Burst {
		w.passed++
		return true
	}
	w.suppressed++
	w.last, w.h = r.Clone(), h
	if w.timer == nil {
		w.timer = time.AfterFunc(w.start.Add(l.opts.Interval).Sub(now), func() {
			l.mu.Lock()
			if l.kinds[w.kind] == w {
				delete(l.kinds, w.kind)
			}
			l.mu.Unlock()
			l.report(context.Background(), w)
		})
	}
	return false
}

// sweep forgets the kinds whose windows are over and dropped nothing (at
// most every eighth of an interval) and reports whether there is room for
// another kind now.
func (l *limiter) sweep(now time.Time) bool {
	if now.Before(l.nextSweep) {
		return false
	}
	l.nextSweep = now.Add(l.opts.Interval / 8)
	for k, w := range l.kinds {
		if w.suppressed == 0 && now.Sub(w.start) >= l.opts.Interval {
			delete(l.kinds, k)
		}
	}
	return len(l.kinds) < l.opts.MaxKinds
}

// report emits w's report once, whoever asks first (its timer or Flush).
func (l *limiter) report(ctx context.Context, w *window) {
	l.mu.Lock()
	if w.reported || w.suppressed == 0 {
		l.mu.Unlock()
		return
	}
	w.reported = true
	if w.timer != nil {
		w.timer.Stop()
	}
	n, last, h := w.suppressed, w.last, w.h
	l.mu.Unlock()
	r := slog.NewRecord(time.Now(), w.kind.level, w.kind.msg+RepeatedSuffix, 0)
	last.Attrs(func(a slog.Attr) bool {
		r.AddAttrs(a)
		return true
	})
	r.AddAttrs(slog.Int(SuppressedKey, n))
	_ = h.Handle(ctx, r)
}
