package lazylog

import (
	"io"
	"log/slog"
	"testing"

	"github.com/pincerbot/pincer/internal/dashboard"
	"github.com/pincerbot/pincer/internal/logthrottle"
)

// BenchmarkTurnLogger makes a turn's logger on pincer serve's handlers
// (text, throttled, the dashboard's error log) and logs nothing with it,
// as most turns do: eagerly, as slog's With does, and with With here.
func BenchmarkTurnLogger(b *testing.B) {
	log := slog.New(dashboard.NewErrorLog(logthrottle.New(slog.NewTextHandler(io.Discard, nil), logthrottle.Options{}), dashboard.ErrorLogOptions{}))
	log = log.With("component", "engine")
	b.Run("slog", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			l := log.With("channel", "onebot", "peer", "group:700001234", "msg_id", "1780000123")
			l.Debug("below the level")
		}
	})
	b.Run("lazylog", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			l := With(log, "channel", "onebot", "peer", "group:700001234", "msg_id", "1780000123")
			l.Debug("below the level")
		}
	})
}
