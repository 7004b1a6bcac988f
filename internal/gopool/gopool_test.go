package gopool

import (
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// TestGoroutinesAreReused: functions handed in one after another run on
// the goroutine that ran the first, which ends after the idle time; Wait
// waits for the functions, not for the idle goroutines.
func TestGoroutinesAreReused(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(time.Minute)
		var ran atomic.Int32
		var most int
		for range 5 {
			p.Go(func() { ran.Add(1) })
			p.Wait()
			synctest.Wait() // the goroutine waits for work again
			most = max(most, int(p.live.Load()))
		}
		if ran.Load() != 5 {
			t.Fatalf("ran %d functions, want 5", ran.Load())
		}
		if most != 1 {
			t.Errorf("%d goroutines kept for five functions in a row, want 1", most)
		}
		time.Sleep(time.Minute + time.Second)
		synctest.Wait()
		if n := p.live.Load(); n != 0 {
			t.Errorf("%d goroutines left after the idle time", n)
		}
	})
}

// TestConcurrentFunctionsGetGoroutinesOfTheirOwn: a function handed in
// while the others run does not wait for them.
func TestConcurrentFunctionsGetGoroutinesOfTheirOwn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(time.Minute)
		defer p.Close()
		release := make(chan struct{})
		var started atomic.Int32
		for range 3 {
			p.Go(func() { started.Add(1); <-release })
		}
		synctest.Wait()
		if started.Load() != 3 {
			t.Fatalf("%d of 3 functions started while the others ran", started.Load())
		}
		close(release)
		p.Wait()
	})
}

// TestCloseEndsIdleGoroutines: Close ends the goroutines waiting for work
// at once, and functions handed in after it still run.
func TestCloseEndsIdleGoroutines(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(time.Hour)
		p.Go(func() {})
		p.Wait()
		synctest.Wait()
		p.Close()
		synctest.Wait()
		if n := p.live.Load(); n != 0 {
			t.Errorf("%d goroutines left after Close", n)
		}
		ran := false
		p.Go(func() { ran = true })
		p.Wait()
		if !ran {
			t.Error("a function handed in after Close did not run")
		}
	})
}

// TestPanicCountsTheFunctionDone: a panicking function is counted done,
// so Wait does not hang on it.
func TestPanicCountsTheFunctionDone(t *testing.T) {
	p := New(time.Minute)
	defer p.Close()
	recovered := make(chan any, 1)
	p.Go(func() {
		defer func() { recovered <- recover() }()
		func() {
			defer func() {
				if v := recover(); v != nil {
					panic(v)
				}
			}()
			panic("boom")
		}()
	})
	p.Wait()
	if v := <-recovered; v != "boom" {
		t.Errorf("recovered %v, want boom", v)
	}
}
