package procs

import (
	"context"
	"log/slog"
	"runtime"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// world is a process whose CPU use the test sets, and the GOMAXPROCS
// the controller chose.
type world struct {
	mu     sync.Mutex
	used   time.Duration
	at     time.Time
	load   float64 // CPUs in use from at on
	single bool
	ones   int // how often one was called
	backs  int // how often back was called
}

func newWorld() *world { return &world{at: time.Now()} }

func (w *world) cpu() time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	now := time.Now()
	w.used += time.Duration(w.load * float64(now.Sub(w.at)))
	w.at = now
	return w.used
}

// setLoad changes the CPUs in use from now on.
func (w *world) setLoad(l float64) {
	w.cpu()
	w.mu.Lock()
	w.load = l
	w.mu.Unlock()
}

func (w *world) state() (single bool, ones, backs int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.single, w.ones, w.backs
}

// start runs a controller on w until the test's bubble ends it.
func (w *world) start(t *testing.T) context.CancelFunc {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	c := controller{
		cpu: w.cpu,
		max: func() int { return 2 },
		one: func() {
			w.mu.Lock()
			w.single, w.ones = true, w.ones+1
			w.mu.Unlock()
		},
		back: func() {
			w.mu.Lock()
			w.single, w.backs = false, w.backs+1
			w.mu.Unlock()
		},
		log: slog.New(slog.DiscardHandler),
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		c.run(ctx)
	}()
	return func() {
		cancel()
		<-done
	}
}

// at sleeps until d after the bubble started (the ticks at d have run).
func at(t *testing.T, start time.Time, d time.Duration) {
	t.Helper()
	time.Sleep(time.Until(start.Add(d)))
	synctest.Wait()
}

func TestAQuietProcessRunsOnOneThreadAfterTwoSeconds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		w := newWorld()
		w.setLoad(0.1)
		stop := w.start(t)
		defer stop()
		at(t, start, 1900*time.Millisecond)
		if single, _, _ := w.state(); single {
			t.Fatal("one thread before two seconds of quiet")
		}
		at(t, start, 2*time.Second)
		if single, ones, _ := w.state(); !single || ones != 1 {
			t.Fatalf("after two seconds of quiet: single %v, set to one %d times; want one thread, set once", single, ones)
		}
		at(t, start, 10*time.Second)
		if _, ones, backs := w.state(); ones != 1 || backs != 0 {
			t.Fatalf("a quiet process was set to one thread %d times and back %d times; want once and never", ones, backs)
		}
	})
}

func TestABusyProcessKeepsEveryThread(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		w := newWorld()
		w.setLoad(1.5)
		stop := w.start(t)
		defer stop()
		at(t, start, 5*time.Second)
		// Between the thresholds the setting stays as it is.
		w.setLoad(0.55)
		at(t, start, 10*time.Second)
		if _, ones, _ := w.state(); ones != 0 {
			t.Fatalf("a process using 1.5 then 0.55 CPUs was set to one thread %d times", ones)
		}
	})
}

func TestLoadRestoresEveryThreadWithinTwoTicks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		w := newWorld()
		w.setLoad(0.2)
		stop := w.start(t)
		defer stop()
		at(t, start, 3*time.Second)
		if single, _, _ := w.state(); !single {
			t.Fatal("a quiet process kept every thread")
		}
		// One busy tick is not enough; under the threshold, one thread
		// stays however long.
		w.setLoad(0.9)
		at(t, start, 3100*time.Millisecond)
		w.setLoad(0.2)
		at(t, start, 3500*time.Millisecond)
		w.setLoad(0.55)
		at(t, start, 5*time.Second)
		if single, _, backs := w.state(); !single || backs != 0 {
			t.Fatalf("after one tick at 0.9 CPUs and two seconds at 0.55: single %v, restored %d times; want one thread kept", single, backs)
		}
		w.setLoad(0.2)
		at(t, start, 6*time.Second)
		w.setLoad(0.9)
		at(t, start, 6100*time.Millisecond)
		if single, _, _ := w.state(); !single {
			t.Fatal("restored after one busy tick")
		}
		at(t, start, 6200*time.Millisecond)
		if single, _, backs := w.state(); single || backs != 1 {
			t.Fatalf("two ticks after the load rose to 0.9 CPUs: single %v, restored %d times; want the default, restored once", single, backs)
		}
	})
}

func TestABusySecondKeepsEveryThreadForLonger(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		w := newWorld()
		w.setLoad(0.1)
		stop := w.start(t)
		defer stop()
		at(t, start, time.Second)
		w.setLoad(1.2)
		at(t, start, 2*time.Second)
		w.setLoad(0.1)
		// The two seconds before 3.2 s used 0.54 CPUs, before 3.3 s 0.485.
		at(t, start, 3200*time.Millisecond)
		if single, _, _ := w.state(); single {
			t.Fatal("one thread while the last two seconds used more than half a CPU")
		}
		at(t, start, 3300*time.Millisecond)
		if single, _, _ := w.state(); !single {
			t.Fatal("every thread kept although the last two seconds used less than half a CPU")
		}
	})
}

func TestTheDefaultIsRestoredWhenRunEnds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		w := newWorld()
		stop := w.start(t)
		at(t, start, 3*time.Second)
		if single, _, _ := w.state(); !single {
			t.Fatal("an idle process kept every thread")
		}
		stop()
		if single, _, backs := w.state(); single || backs != 1 {
			t.Fatalf("after Run ended: single %v, restored %d times; want the default, restored once", single, backs)
		}
	})
}

func TestAGOMAXPROCSInTheEnvironmentIsKept(t *testing.T) {
	t.Setenv("GOMAXPROCS", "2")
	before := runtime.GOMAXPROCS(0)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	done := make(chan struct{})
	go func() {
		defer close(done)
		Run(ctx, slog.New(slog.DiscardHandler))
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Run went on fitting GOMAXPROCS although the environment set it")
	}
	if after := runtime.GOMAXPROCS(0); after != before {
		t.Fatalf("GOMAXPROCS changed from %d to %d although the environment set it", before, after)
	}
}
