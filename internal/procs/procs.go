// Package procs fits how many threads run Go code at once (GOMAXPROCS)
// to the load.
//
// At a trickle, a gateway spends most of its CPU handing work from one
// goroutine to the next: a frame read wakes a lane, the lane the store's
// writer, the writer the turn waiting for its commit. With more than one
// thread allowed to run Go code, each hand-off to an idle thread wakes it
// (a futex call and a context switch), and the woken thread mostly finds
// the work already taken and sleeps again. On a virtual machine a context
// switch costs microseconds, and at 1,000 events a second they were a
// sixth of pincer's CPU: an answered turn took 21 context switches with
// two threads and 6 with one. One thread serves a trickle with room to
// spare; a burst needs them all.
//
// Run keeps one thread while the process uses less than half a CPU over
// two seconds, and goes back to the runtime's default (which follows the
// CPUs and the container's quota) once it used 0.6 of a CPU or more over
// a fifth of a second, for as long as it does. A GOMAXPROCS in the environment is the
// operator's choice: Run then changes nothing.
package procs

import (
	"context"
	"log/slog"
	"os"
	"runtime"
	"time"
)

// Thresholds, in CPUs used (user and system time of the process) over
// a span of time.
const (
	tick = 100 * time.Millisecond
	// raiseAt: one thread this busy over raiseAfter is near its limit
	// (work starts to queue behind other work): the default is restored.
	raiseAt    = 0.6
	raiseAfter = 2 * tick
	// lowerBelow: a process using less over lowerAfter is served by one
	// thread. The same work costs less CPU on one thread than on several,
	// so a load just under lowerBelow is well under raiseAt there, and the
	// setting does not flip to and fro.
	lowerBelow = 0.5
	lowerAfter = 2 * time.Second
)

// Run fits GOMAXPROCS to the load (see the package comment) until ctx
// ends, and then restores the runtime's default. It returns at once when
// GOMAXPROCS is set in the environment, when the runtime's default is
// one thread, or where the process's CPU time cannot be read.
func Run(ctx context.Context, log *slog.Logger) {
	if _, set := os.LookupEnv("GOMAXPROCS"); set {
		log.Debug("GOMAXPROCS is set in the environment: it is kept", "component", "procs", "gomaxprocs", runtime.GOMAXPROCS(0))
		return
	}
	if runtime.GOMAXPROCS(0) <= 1 || processCPU == nil {
		return
	}
	c := controller{
		cpu:  processCPU,
		max:  func() int { return runtime.GOMAXPROCS(0) },
		one:  func() { runtime.GOMAXPROCS(1) },
		back: runtime.SetDefaultGOMAXPROCS,
		log:  log,
	}
	c.run(ctx)
}

// controller is Run's loop, with what it reads and sets given, so a test
// can drive it.
type controller struct {
	cpu  func() time.Duration // the process's CPU time so far
	max  func() int           // GOMAXPROCS now
	one  func()               // sets GOMAXPROCS to 1
	back func()               // restores the runtime's default
	log  *slog.Logger
}

func (c controller) run(ctx context.Context) {
	t := time.NewTicker(tick)
	defer t.Stop()
	single := false
	defer func() {
		if single {
			c.back()
		}
	}()
	// The samples since the last change, oldest first, up to lowerAfter.
	samples := []sample{{c.cpu(), time.Now()}}
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			samples = append(samples, sample{c.cpu(), now})
			if len(samples) > int(lowerAfter/tick)+1 {
				samples = samples[1:]
			}
			switch {
			case single:
				if load, ok := loadOver(samples, raiseAfter); ok && load >= raiseAt {
					c.back()
					single = false
					samples = samples[len(samples)-1:]
					c.log.Debug("busy: every thread runs Go code again", "component", "procs", "cpus_used", load, "gomaxprocs", c.max())
				}
			default:
				if load, ok := loadOver(samples, lowerAfter); ok && load < lowerBelow {
					c.one()
					single = true
					samples = samples[len(samples)-1:]
					c.log.Debug("quiet: one thread runs Go code", "component", "procs", "cpus_used", load)
				}
			}
		}
	}
}

// sample is the process's CPU time at a moment.
type sample struct {
	cpu time.Duration
	at  time.Time
}

// loadOver is the CPUs used over the last span of samples; false when
// they do not reach that far back.
func loadOver(samples []sample, span time.Duration) (float64, bool) {
	last := samples[len(samples)-1]
	for i := len(samples) - 2; i >= 0; i-- {
		if d := last.at.Sub(samples[i].at); d >= span {
			return float64(last.cpu-samples[i].cpu) / float64(d), true
		}
	}
	return 0, false
}
