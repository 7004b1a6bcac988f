// Package lazylog gives a logger its attributes without formatting them
// until it logs. slog's With hands the attributes to the handler at once,
// and a handler prepares them then: a text handler formats them, pincer's
// dashboard and throttling handlers render and key them. A turn's logger
// carries its chat and message, and most turns log nothing, so that work
// was done for every turn and used by few; With here defers it to the
// logger's first record, and does it once however many records follow.
package lazylog

import (
	"context"
	"log/slog"
	"sync"
)

// With returns l with args (as slog.Logger.With takes them) added to every
// record it logs, handed to l's handler only when the first record at an
// enabled level is.
func With(l *slog.Logger, args ...any) *slog.Logger {
	if len(args) == 0 {
		return l
	}
	return slog.New(&handler{parent: l.Handler(), attrs: attrs(args)})
}

// attrs turns args into attributes as slog.Logger.With does.
func attrs(args []any) []slog.Attr {
	var r slog.Record
	r.Add(args...)
	as := make([]slog.Attr, 0, r.NumAttrs())
	r.Attrs(func(a slog.Attr) bool {
		as = append(as, a)
		return true
	})
	return as
}

// handler is parent with attrs, which it hands to parent when it first
// needs them.
type handler struct {
	parent slog.Handler
	attrs  []slog.Attr

	once  sync.Once
	bound slog.Handler
}

// get is parent with attrs, made on first use.
func (h *handler) get() slog.Handler {
	h.once.Do(func() { h.bound = h.parent.WithAttrs(h.attrs) })
	return h.bound
}

// Enabled implements slog.Handler; the attributes do not decide it.
func (h *handler) Enabled(ctx context.Context, level slog.Level) bool {
	return h.parent.Enabled(ctx, level)
}

// Handle implements slog.Handler.
func (h *handler) Handle(ctx context.Context, r slog.Record) error {
	return h.get().Handle(ctx, r)
}

// WithAttrs implements slog.Handler: the new attributes wait with the
// others.
func (h *handler) WithAttrs(as []slog.Attr) slog.Handler {
	if len(as) == 0 {
		return h
	}
	return &handler{parent: h.parent, attrs: append(h.attrs[:len(h.attrs):len(h.attrs)], as...)}
}

// WithGroup implements slog.Handler: later attributes go in the group,
// the ones before it do not, so those are handed on first.
func (h *handler) WithGroup(name string) slog.Handler {
	if name == "" {
		return h
	}
	return h.get().WithGroup(name)
}
