package engine

import (
	"context"
	"log/slog"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pincerbot/pincer/internal/agent"
	"github.com/pincerbot/pincer/internal/llm"
	"github.com/pincerbot/pincer/internal/store/sqlite"
	"github.com/pincerbot/pincer/internal/texts"
)

// withCounter is a handler that counts the attributes handed to it (and
// to the handlers it returns) by WithAttrs.
type withCounter struct {
	slog.Handler
	n *atomic.Int64
}

func (w withCounter) WithAttrs(as []slog.Attr) slog.Handler {
	w.n.Add(1)
	return withCounter{Handler: w.Handler.WithAttrs(as), n: w.n}
}

func (w withCounter) WithGroup(name string) slog.Handler {
	return withCounter{Handler: w.Handler.WithGroup(name), n: w.n}
}

// TestAQuietTurnFormatsNoLogAttributes: a turn that logs nothing hands
// its chat and message to no handler (the dashboard's and the text
// handler format them when they get them).
func TestAQuietTurnFormatsNoLogAttributes(t *testing.T) {
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "p.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	var n atomic.Int64
	log := slog.New(withCounter{Handler: slog.DiscardHandler, n: &n})
	runner := agent.NewRunner(agent.Options{Providers: map[string]llm.Provider{"fake": scriptProvider{[]string{"好的"}}}, MaxTokens: 100, ContextTokens: 10000})
	e := New(Options{Store: st, Runner: runner, Models: []llm.Ref{{Provider: "fake", Model: "m"}},
		System: func() string { return "sys" }, Location: time.UTC, Locale: texts.EN, Logger: log})
	before := n.Load()
	rec := &recorder{}
	if err := e.Dispatch(context.Background(), message("1", "ann", "你好，在吗？", t0), rec); err != nil {
		t.Fatal(err)
	}
	if len(rec.delivered) != 1 || rec.delivered[0].Text != "好的" {
		t.Fatalf("delivered %+v, want one reply 好的", rec.delivered)
	}
	if d := n.Load() - before; d != 0 {
		t.Errorf("a quiet turn handed attributes to the log handler %d times, want 0", d)
	}
}
