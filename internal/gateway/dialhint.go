package gateway

import (
	"context"
	"log/slog"
	"strings"

	"github.com/pincerbot/pincer/internal/doctor"
)

// dialHints is the log handler of a QQ account that dials a forward
// WebSocket. A warning or error whose err is a failure to reach it says
// what pincer doctor says of it, err="nothing listens at 127.0.0.1:3001"
// with a hint naming the setting, in place of the whole nested dial error
// the adapter gives.
type dialHints struct {
	slog.Handler
	fw forwardWS
}

// Handle implements slog.Handler.
func (h dialHints) Handle(ctx context.Context, r slog.Record) error {
	if r.Level < slog.LevelWarn {
		return h.Handler.Handle(ctx, r)
	}
	explained := false
	out := slog.NewRecord(r.Time, r.Level, r.Message, r.PC)
	r.Attrs(func(a slog.Attr) bool {
		if err, ok := a.Value.Any().(error); ok && a.Key == "err" {
			if detail, hint, ok := h.fw.explain(err); ok {
				out.AddAttrs(slog.String("err", detail), slog.String("hint", hint))
				explained = true
				return true
			}
		}
		out.AddAttrs(a)
		return true
	})
	if !explained {
		return h.Handler.Handle(ctx, r)
	}
	return h.Handler.Handle(ctx, out)
}

// WithAttrs implements slog.Handler.
func (h dialHints) WithAttrs(attrs []slog.Attr) slog.Handler {
	return dialHints{h.Handler.WithAttrs(attrs), h.fw}
}

// WithGroup implements slog.Handler.
func (h dialHints) WithGroup(name string) slog.Handler {
	return dialHints{h.Handler.WithGroup(name), h.fw}
}

// explain says what a failure to reach the forward WebSocket means and
// what to do, as pincer doctor says it; ok is false for any other error.
func (f forwardWS) explain(err error) (detail, hint string, ok bool) {
	// The adapter names the URL it dialed in the error; a failure of
	// another endpoint (the HTTP API) is not this one's to explain.
	if f.url == "" || !strings.Contains(err.Error(), f.url) {
		return "", "", false
	}
	return doctor.ForwardUnreachable(err, f.key, f.url)
}
