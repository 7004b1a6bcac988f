package engine

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/pincerbot/pincer/internal/agent"
	"github.com/pincerbot/pincer/internal/llm"
	"github.com/pincerbot/pincer/internal/store/sqlite"
)

// benchEngine is an engine on a real SQLite file with a provider that
// answers at once, so what is measured is pincer's own work per turn:
// dedup, inbound log, session, transcript, envelope, agent loop,
// normalization and delivery.
func benchEngine(b *testing.B) *Engine {
	b.Helper()
	st, err := sqlite.Open(context.Background(), filepath.Join(b.TempDir(), "bench.db"), sqlite.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	runner := agent.NewRunner(agent.Options{Providers: map[string]llm.Provider{"fake": scriptProvider{[]string{"ok"}}}, MaxTokens: 100, ContextTokens: 10000})
	return New(Options{Store: st, Runner: runner, Models: []llm.Ref{{Provider: "fake", Model: "m"}}, MaxConcurrent: 64})
}

// BenchmarkEngineTurn reports the median wall time of one turn on a new
// session and its allocations.
func BenchmarkEngineTurn(b *testing.B) {
	e := benchEngine(b)
	lat := make([]time.Duration, 0, b.N)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		i++
		m := message(fmt.Sprint(i), fmt.Sprint("peer-", i), "hello", t0)
		start := time.Now()
		if err := e.Dispatch(context.Background(), m, &recorder{}); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(start))
	}
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Nanoseconds())/1000, "µs-median")
}

// BenchmarkConcurrentSessions runs one turn on each of n sessions at once
// and reports turns per second; flat throughput across n means the cost
// grows linearly with the number of sessions.
func BenchmarkConcurrentSessions(b *testing.B) {
	for _, n := range []int{100, 1000, 10000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			e := benchEngine(b)
			round := 0
			var total time.Duration
			for b.Loop() {
				round++
				var wg sync.WaitGroup
				start := time.Now()
				for s := range n {
					wg.Go(func() {
						m := message(fmt.Sprint(round, "-", s), fmt.Sprint("peer-", s), "hello", t0)
						if err := e.Dispatch(context.Background(), m, &recorder{}); err != nil {
							b.Error(err)
						}
					})
				}
				wg.Wait()
				total += time.Since(start)
			}
			b.ReportMetric(float64(n*b.N)/total.Seconds(), "turns/s")
		})
	}
}
