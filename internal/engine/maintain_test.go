package engine

import (
	"context"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/pincerbot/pincer/internal/store"
)

type pruneCounter struct {
	store.Store
	calls atomic.Int32
}

func (p *pruneCounter) PruneDedup(ctx context.Context) (int64, error) {
	p.calls.Add(1)
	return p.Store.PruneDedup(ctx)
}

func TestRunPrunesDedupKeys(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, st := newEngine(t, &echoProvider{})
		counter := &pruneCounter{Store: st}
		e := New(Options{Store: counter})
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error)
		go func() { done <- e.Run(ctx) }()

		if _, err := st.ClaimDedup(ctx, "k", time.Minute); err != nil {
			t.Fatal(err)
		}
		time.Sleep(PruneInterval - time.Second)
		synctest.Wait()
		if n := counter.calls.Load(); n != 0 {
			t.Fatalf("pruned %d times before the interval", n)
		}
		time.Sleep(time.Second)
		synctest.Wait()
		if n := counter.calls.Load(); n != 1 {
			t.Fatalf("pruned %d times after one interval, want 1", n)
		}
		// The expired key is gone, so it can be claimed again.
		if ok, _ := st.ClaimDedup(ctx, "k", time.Minute); !ok {
			t.Error("the expired key was not pruned")
		}
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
}
