package lazylog

import (
	"bytes"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// counting is a text handler that counts the calls of WithAttrs on it and
// on the handlers it returns.
type counting struct {
	slog.Handler
	n  *int
	mu *sync.Mutex
}

func (c counting) WithAttrs(as []slog.Attr) slog.Handler {
	c.mu.Lock()
	*c.n++
	c.mu.Unlock()
	return counting{Handler: c.Handler.WithAttrs(as), n: c.n, mu: c.mu}
}

func (c counting) WithGroup(name string) slog.Handler {
	return counting{Handler: c.Handler.WithGroup(name), n: c.n, mu: c.mu}
}

func textLogger(buf *bytes.Buffer, level slog.Level) *slog.Logger {
	return slog.New(slog.NewTextHandler(buf, &slog.HandlerOptions{
		Level: level,
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey {
				return slog.Attr{}
			}
			return a
		},
	}))
}

// TestLinesAreThoseOfWith: what a logger made by With logs, through
// further With calls, groups and a record's own attributes, is
// line for line what slog's own With makes of it.
func TestLinesAreThoseOfWith(t *testing.T) {
	logAll := func(l *slog.Logger) {
		l.Info("收到", "n", 1)
		l2 := l.With("stage", "reply")
		l2.Warn("慢了", "ms", 2500)
		l2.WithGroup("model").With("ref", "openai/gpt").Error("失败", "err", "timeout")
		l.Debug("not shown")
	}
	var eager, lazy bytes.Buffer
	logAll(textLogger(&eager, slog.LevelInfo).With("channel", "onebot", "peer", "group:123", slog.Int("msg", 42)))
	logAll(With(textLogger(&lazy, slog.LevelInfo), "channel", "onebot", "peer", "group:123", slog.Int("msg", 42)))
	if diff := cmp.Diff(eager.String(), lazy.String()); diff != "" {
		t.Errorf("lines (-slog's With +lazylog's):\n%s", diff)
	}
	if !strings.Contains(lazy.String(), "model.ref=openai/gpt") {
		t.Errorf("the group is missing:\n%s", lazy.String())
	}
}

// TestNothingIsHandedOnUntilARecordIs: the handler learns the attributes
// only at the first record at an enabled level, and once for every record
// that follows, from any goroutine.
func TestNothingIsHandedOnUntilARecordIs(t *testing.T) {
	var buf bytes.Buffer
	var n int
	var mu sync.Mutex
	base := slog.New(counting{Handler: textLogger(&buf, slog.LevelInfo).Handler(), n: &n, mu: &mu})
	l := With(base, "channel", "onebot", "peer", "group:123")
	l = l.With("msg_id", "9")
	l.Debug("below the level")
	if n != 0 {
		t.Fatalf("WithAttrs called %d times before any record was logged, want 0", n)
	}
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() { l.Info("回复", "i", i) })
	}
	wg.Wait()
	if n != 1 {
		t.Errorf("WithAttrs called %d times for 8 records, want 1", n)
	}
	if got := strings.Count(buf.String(), "channel=onebot peer=group:123 msg_id=9"); got != 8 {
		t.Errorf("%d of 8 lines carry the attributes:\n%s", got, buf.String())
	}
}

// TestNoArgsIsTheLogger: With without attributes is the logger itself.
func TestNoArgsIsTheLogger(t *testing.T) {
	l := slog.New(slog.DiscardHandler)
	if With(l) != l {
		t.Error("With(l) is a new logger")
	}
}
