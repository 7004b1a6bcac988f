package logthrottle

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// output is a log written by a text handler, safe for concurrent writes.
type output struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (o *output) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.buf.Write(p)
}

func (o *output) lines() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return strings.Split(strings.TrimSuffix(o.buf.String(), "\n"), "\n")
}

// count is how many lines hold s, and the suppressed counts they add up to.
func (o *output) count(s string) (lines, suppressed int) {
	re := regexp.MustCompile(` suppressed=(\d+)`)
	for _, l := range o.lines() {
		if !strings.Contains(l, s) {
			continue
		}
		lines++
		if m := re.FindStringSubmatch(l); m != nil {
			n, _ := strconv.Atoi(m[1])
			suppressed += n
		}
	}
	return lines, suppressed
}

func newLogger(level slog.Level, o Options) (*slog.Logger, *Handler, *output) {
	out := &output{}
	h := New(slog.NewTextHandler(out, &slog.HandlerOptions{Level: level}), o)
	return slog.New(h), h, out
}

// TestBurstOfIdenticalWarnings: 100,000 identical warnings, logged from
// eight goroutines at once, come out as the first five and, when the
// minute is over, one line that counts the other 99,995.
func TestBurstOfIdenticalWarnings(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		log, _, out := newLogger(slog.LevelInfo, Options{})
		log = log.With("channel", "onebot", "account", "default")
		var wg sync.WaitGroup
		for g := range 8 {
			wg.Go(func() {
				for i := range 100000 / 8 {
					log.Warn("undecodable event", "err", fmt.Sprintf("frame %d/%d", g, i))
				}
			})
		}
		wg.Wait()
		if lines, _ := out.count("undecodable event"); lines != DefaultBurst {
			t.Fatalf("%d lines during the burst, want %d:\n%s", lines, DefaultBurst, strings.Join(out.lines(), "\n"))
		}
		time.Sleep(DefaultInterval)
		synctest.Wait()
		lines, suppressed := out.count("undecodable event")
		if lines != DefaultBurst+1 || DefaultBurst+suppressed != 100000 {
			t.Fatalf("%d lines, %d suppressed; want %d lines adding up to 100000:\n%s", lines, suppressed, DefaultBurst+1, strings.Join(out.lines(), "\n"))
		}
		report := out.lines()[DefaultBurst]
		for _, want := range []string{"level=WARN", `msg="undecodable event (repeated)"`, "channel=onebot account=default err=\"frame "} {
			if !strings.Contains(report, want) {
				t.Errorf("report %q lacks %q", report, want)
			}
		}
		// The next minute starts over.
		log.Warn("undecodable event", "err", "again")
		if lines, _ := out.count("undecodable event"); lines != DefaultBurst+2 {
			t.Errorf("the next interval lets records through again: %d lines", lines)
		}
	})
}

// TestSustainedStormIsBoundedPerInterval: an error every ten milliseconds
// for an hour gives six lines a minute, and every one is counted.
func TestSustainedStormIsBoundedPerInterval(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		log, h, out := newLogger(slog.LevelInfo, Options{})
		const n = 360_000
		for range n {
			log.Error("writing the message log", "err", "disk full")
			time.Sleep(10 * time.Millisecond)
		}
		h.Flush(context.Background())
		lines, suppressed := out.count("writing the message log")
		if lines > 60*(DefaultBurst+1)+DefaultBurst+1 {
			t.Errorf("%d lines for an hour of errors", lines)
		}
		if passed := lines - strings.Count(strings.Join(out.lines(), "\n"), RepeatedSuffix); passed+suppressed != n {
			t.Errorf("%d let through and %d suppressed, want %d in all", passed, suppressed, n)
		}
	})
}

// TestKinds: level, message and scope attributes make a kind; other
// attributes do not; attributes inside a group are not scope.
func TestKinds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		log, h, out := newLogger(slog.LevelInfo, Options{Burst: 1})
		for i := range 3 {
			log.Warn("a", "msg_id", i)                                       // one kind
			log.Error("a")                                                   // another level
			log.Warn("b")                                                    // another message
			log.With("component", "engine").Warn("a")                        // another scope
			log.Warn("a", "component", "pipeline")                           // scope on the record
			log.WithGroup("g").With("component", "x").Warn("a", "n", i)      // grouped: the first kind
			log.With("component", "engine").WithGroup("g").Warn("a", "i", i) // the engine kind
		}
		h.Flush(context.Background())
		for _, want := range []string{
			`level=WARN msg=a msg_id=0`,
			`level=WARN msg="a (repeated)" g.component=x g.n=2 g.suppressed=5`,
			`level=ERROR msg=a`,
			`level=ERROR msg="a (repeated)" suppressed=2`,
			`level=WARN msg=b`,
			`level=WARN msg="b (repeated)" suppressed=2`,
			`level=WARN msg=a component=engine`,
			`level=WARN msg="a (repeated)" component=engine g.i=2 g.suppressed=5`,
			`level=WARN msg=a component=pipeline`,
			`level=WARN msg="a (repeated)" component=pipeline suppressed=2`,
		} {
			found := false
			for _, l := range out.lines() {
				found = found || strings.HasSuffix(l, want)
			}
			if !found {
				t.Errorf("no line ends with %q in\n%s", want, strings.Join(out.lines(), "\n"))
			}
		}
		if n := len(out.lines()); n != 10 {
			t.Errorf("%d lines, want 10", n)
		}
	})
}

// TestDebugIsUntouched: debug records all pass when debug is on, and cost
// nothing when it is off; Options.Level throttles them on request.
func TestDebugIsUntouched(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		log, _, out := newLogger(slog.LevelDebug, Options{})
		for range 100 {
			log.Debug("event dropped")
		}
		if lines, _ := out.count("event dropped"); lines != 100 {
			t.Errorf("%d of 100 debug lines", lines)
		}
		quiet, _, _ := newLogger(slog.LevelInfo, Options{})
		if quiet.Enabled(context.Background(), slog.LevelDebug) {
			t.Error("debug enabled on an info logger")
		}
		throttled, _, out := newLogger(slog.LevelDebug, Options{Level: slog.LevelDebug})
		for range 100 {
			throttled.Debug("event dropped")
		}
		if lines, _ := out.count("event dropped"); lines != DefaultBurst {
			t.Errorf("%d debug lines with Level debug, want %d", lines, DefaultBurst)
		}
	})
}

// TestManyKindsStayBounded: a storm of messages that all differ is
// counted together once MaxKinds kinds are tracked.
func TestManyKindsStayBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		log, h, out := newLogger(slog.LevelInfo, Options{MaxKinds: 100})
		for i := range 100000 {
			log.Warn(fmt.Sprintf("peer %d misbehaves", i))
		}
		h.Flush(context.Background())
		lines := out.lines()
		if len(lines) != 100+DefaultBurst+1 {
			t.Errorf("%d lines", len(lines))
		}
		if last := lines[len(lines)-1]; !strings.Contains(last, `msg="log records of many kinds (repeated)"`) || !strings.HasSuffix(last, "suppressed=99895") {
			t.Errorf("last line %q", last)
		}
		// A minute later the kinds are forgotten and new ones tracked.
		time.Sleep(DefaultInterval)
		log.Warn("something else")
		if got := out.lines(); !strings.Contains(got[len(got)-1], "something else") {
			t.Errorf("after the interval: %q", got[len(got)-1])
		}
	})
}

// TestFlushReportsOnce: Flush reports what is pending at once, and the
// interval's end reports nothing more.
func TestFlushReportsOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		log, h, out := newLogger(slog.LevelInfo, Options{Burst: 2, Interval: time.Second})
		for range 10 {
			log.Info("tick")
		}
		h.Flush(context.Background())
		time.Sleep(2 * time.Second)
		synctest.Wait()
		if lines, suppressed := out.count("tick"); lines != 3 || suppressed != 8 {
			t.Errorf("%d lines, %d suppressed:\n%s", lines, suppressed, strings.Join(out.lines(), "\n"))
		}
	})
}
