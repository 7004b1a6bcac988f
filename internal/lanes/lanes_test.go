package lanes

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestOrderPerKeyAndParallelAcrossKeys: the items of one key run one after
// the other in submission order; different keys run side by side, on at
// most Workers goroutines.
func TestOrderPerKeyAndParallelAcrossKeys(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := New(Options{Workers: 3, Capacity: 1000})
		var mu sync.Mutex
		got := map[string][]int{}
		running, peak := 0, 0
		for i := range 100 {
			for _, key := range []string{"a", "b", "c", "d", "e"} {
				if err := l.Submit(context.Background(), key, func() {
					mu.Lock()
					running++
					peak = max(peak, running)
					got[key] = append(got[key], i)
					mu.Unlock()
					time.Sleep(time.Millisecond) // work takes time
					mu.Lock()
					running--
					mu.Unlock()
				}); err != nil {
					t.Fatal(err)
				}
			}
		}
		l.Close()
		for key, seq := range got {
			if len(seq) != 100 || !slices.IsSorted(seq) {
				t.Errorf("%s ran out of order or not all: %v", key, seq)
			}
		}
		if peak != 3 {
			t.Errorf("%d items ran at once; want the 3 workers busy", peak)
		}
	})
}

// TestOneKeyNeverRunsTwiceAtOnce: a lane's items never overlap, even with
// idle workers.
func TestOneKeyNeverRunsTwiceAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := New(Options{Workers: 8})
		var mu sync.Mutex
		running, peak := 0, 0
		for range 50 {
			_ = l.Submit(context.Background(), "chat", func() {
				mu.Lock()
				running++
				peak = max(peak, running)
				mu.Unlock()
				time.Sleep(time.Millisecond)
				mu.Lock()
				running--
				mu.Unlock()
			})
		}
		l.Close()
		if peak != 1 {
			t.Errorf("one chat ran %d items at once", peak)
		}
	})
}

// TestFullQueueHoldsSubmittersBack: Submit blocks at Capacity until an
// item ends; TrySubmit gives up after its wait.
func TestFullQueueHoldsSubmittersBack(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := New(Options{Workers: 1, Capacity: 2})
		release := make(chan struct{})
		for range 2 {
			if err := l.Submit(context.Background(), "k", func() { <-release }); err != nil {
				t.Fatal(err)
			}
		}
		submitted := make(chan error, 1)
		go func() { submitted <- l.Submit(context.Background(), "other", func() {}) }()
		synctest.Wait()
		select {
		case err := <-submitted:
			t.Fatalf("a third item was taken at capacity 2: %v", err)
		default:
		}
		start := time.Now()
		if err := l.TrySubmit(context.Background(), "x", time.Second, func() {}); !errors.Is(err, ErrFull) || time.Since(start) != time.Second {
			t.Errorf("TrySubmit: %v after %v", err, time.Since(start))
		}
		release <- struct{}{}
		if err := <-submitted; err != nil {
			t.Fatal(err)
		}
		close(release)
		l.Close()
		if n := l.Len(); n != 0 {
			t.Errorf("%d left", n)
		}
		if err := l.Submit(context.Background(), "k", func() {}); !errors.Is(err, ErrClosed) {
			t.Errorf("after Close: %v", err)
		}
	})
}

// TestPanicStaysInItsItem: a panicking item is reported and the lane goes
// on.
func TestPanicStaysInItsItem(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var reported []string
		l := New(Options{OnPanic: func(v any) { reported = append(reported, fmt.Sprint(v)) }})
		ran := false
		_ = l.Submit(context.Background(), "k", func() { panic("boom") })
		_ = l.Submit(context.Background(), "k", func() { ran = true })
		l.Close()
		if !ran || len(reported) != 1 || reported[0] != "boom" {
			t.Errorf("ran %v, reported %v", ran, reported)
		}
	})
}

// goroutineID is the id the runtime gives the calling goroutine.
func goroutineID() string {
	b := make([]byte, 64)
	b = b[:runtime.Stack(b, false)]
	f := strings.Fields(string(b)) // "goroutine 123 [running]: ..."
	return f[1]
}

// TestTrickleReusesAWorker: items that come one at a time, each after the
// last is done, run on the one worker that is kept parked between them,
// not on a new goroutine each; Close stops it (the bubble ends only when
// every goroutine of it has).
func TestTrickleReusesAWorker(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := New(Options{Workers: 4})
		ids := map[string]bool{}
		for i := range 50 {
			done := make(chan string)
			if err := l.Submit(context.Background(), fmt.Sprint("chat", i), func() { done <- goroutineID() }); err != nil {
				t.Fatal(err)
			}
			ids[<-done] = true
			time.Sleep(time.Millisecond)
		}
		if len(ids) != 1 {
			t.Errorf("50 items one after another ran on %d goroutines, want 1", len(ids))
		}
		l.Close()
	})
}

// TestRunInlineWhenIdle: Run takes an item on the caller's goroutine when
// nothing else is queued or running and the last came 200 µs or more
// before; while something is, it queues the item as Submit does, after
// the key's earlier items, and an item submitted for the key while an
// inline one runs runs after it. Items closer together (a burst) go to
// the workers even when they are idle.
func TestRunInlineWhenIdle(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := New(Options{Workers: 2})
		ctx := context.Background()
		me := goroutineID()
		var ran string
		if err := l.Run(ctx, "a", func() { ran = goroutineID() }); err != nil {
			t.Fatal(err)
		}
		if ran != me {
			t.Errorf("idle: ran on goroutine %s, want the caller's (%s)", ran, me)
		}

		// Busy: an item of "a" holds a worker.
		release := make(chan struct{})
		var mu sync.Mutex
		var order []string
		add := func(s string) { mu.Lock(); order = append(order, s); mu.Unlock() }
		if err := l.Submit(ctx, "a", func() { <-release; add("a1") }); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if err := l.Run(ctx, "a", func() { add("a2") }); err != nil {
			t.Fatal(err)
		}
		got := make(chan string, 1)
		if err := l.Run(ctx, "b", func() { got <- goroutineID() }); err != nil {
			t.Fatal(err)
		}
		if id := <-got; id == me {
			t.Errorf("busy: ran on the caller's goroutine")
		}
		close(release)
		synctest.Wait()
		mu.Lock()
		if diff := cmp.Diff([]string{"a1", "a2"}, order); diff != "" {
			t.Errorf("order of key a (-want +got):\n%s", diff)
		}
		mu.Unlock()

		// A burst: the next item right after another goes to a worker.
		time.Sleep(time.Millisecond)
		if err := l.Run(ctx, "d", func() {}); err != nil {
			t.Fatal(err)
		}
		got2 := make(chan string, 1)
		if err := l.Run(ctx, "e", func() { got2 <- goroutineID() }); err != nil {
			t.Fatal(err)
		}
		if id := <-got2; id == me {
			t.Errorf("an item right after another ran on the caller's goroutine; a burst goes to the workers")
		}
		synctest.Wait()

		// Inline, with an item of the same key submitted meanwhile.
		time.Sleep(time.Millisecond)
		order = nil
		err := l.Run(ctx, "c", func() {
			if err := l.Submit(ctx, "c", func() { add("c2") }); err != nil {
				t.Error(err)
			}
			synctest.Wait()
			add("c1")
		})
		if err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		mu.Lock()
		if diff := cmp.Diff([]string{"c1", "c2"}, order); diff != "" {
			t.Errorf("order of key c (-want +got):\n%s", diff)
		}
		mu.Unlock()
		l.Close()
	})
}
