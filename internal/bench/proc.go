package bench

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// child is a process the bench started and measures: pincer serve, or the
// baseline's reader.
type child struct {
	name    string
	cmd     *exec.Cmd
	logPath string
	lines   chan string // its stdout, line by line
	done    chan struct{}
	err     error // how it ended, once done is closed
}

// startChild starts cmd with its stdout read line by line and its stderr
// in logPath.
func startChild(name string, cmd *exec.Cmd, logPath string) (*child, error) {
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, fmt.Errorf("bench: %s log: %w", name, err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		logFile.Close()
		return nil, fmt.Errorf("bench: %s: %w", name, err)
	}
	cmd.Stderr = logFile
	dieWithParent(cmd)
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("bench: start %s: %w", name, err)
	}
	c := &child{name: name, cmd: cmd, logPath: logPath, lines: make(chan string, 64), done: make(chan struct{})}
	go func() {
		s := bufio.NewScanner(out)
		for s.Scan() {
			select {
			case c.lines <- s.Text():
			default: // nobody listens any more
			}
		}
		close(c.lines)
		c.err = cmd.Wait()
		logFile.Close()
		close(c.done)
	}()
	return c, nil
}

// line waits for a line of the child's output that contains want.
func (c *child) line(ctx context.Context, want string) (string, error) {
	for {
		select {
		case l, ok := <-c.lines:
			if !ok {
				<-c.done
				return "", fmt.Errorf("bench: %s exited before it printed %q (%v)%s", c.name, want, c.err, c.logTail())
			}
			if strings.Contains(l, want) {
				return l, nil
			}
		case <-ctx.Done():
			return "", fmt.Errorf("bench: waiting for %s to print %q: %w%s", c.name, want, ctx.Err(), c.logTail())
		}
	}
}

// exited reports whether the child has ended, and how.
func (c *child) exited() (bool, error) {
	select {
	case <-c.done:
		return true, c.err
	default:
		return false, nil
	}
}

// stop asks the child to end (SIGTERM) and kills it after grace.
func (c *child) stop(grace time.Duration) error {
	if done, err := c.exited(); done {
		return unexpected(c, err)
	}
	_ = c.cmd.Process.Signal(syscall.SIGTERM)
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-c.done:
		return c.err
	case <-t.C:
		_ = c.cmd.Process.Kill()
		<-c.done
		return fmt.Errorf("bench: %s did not stop within %s of SIGTERM and was killed%s", c.name, grace, c.logTail())
	}
}

func unexpected(c *child, err error) error {
	return fmt.Errorf("bench: %s exited during the run (%v)%s", c.name, err, c.logTail())
}

// logTail is the end of the child's log, for error messages.
func (c *child) logTail() string {
	b, err := os.ReadFile(c.logPath)
	if err != nil || len(b) == 0 {
		return ""
	}
	if len(b) > 2000 {
		b = b[len(b)-2000:]
	}
	return "\n" + c.name + " log (end):\n" + string(b)
}

// usage is what the kernel counts for a running process.
type usage struct {
	cpu  time.Duration // user + system, all threads
	hwm  int64         // peak resident set (VmHWM), bytes
	rss  int64         // resident set now (VmRSS), bytes
	anon int64         // anonymous part of rss now (RssAnon): the heap, stacks, SQLite's cache
	// switches are the context switches of the threads alive now,
	// voluntary (a thread that slept) and not.
	switches int64
	// reads and writes are the system calls that read and wrote
	// (read, pread, recvmsg...; write, pwrite, sendmsg...), of every
	// thread the process had (/proc/<pid>/io: syscr, syscw).
	reads, writes int64
}

// metrics is one scrape of pincer's /metrics, by series ("name{labels}").
type metrics map[string]float64

// scrape reads pincer's Prometheus metrics.
func scrape(ctx context.Context, at endpoint) (metrics, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	res, err := at.get(ctx, "/metrics")
	if err != nil {
		return nil, fmt.Errorf("bench: metrics: %w", err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("bench: metrics: HTTP %d", res.StatusCode)
	}
	body, err := io.ReadAll(res.Body)
	if err != nil {
		return nil, fmt.Errorf("bench: metrics: %w", err)
	}
	m := metrics{}
	for line := range strings.Lines(string(body)) {
		line = strings.TrimSpace(line)
		if line == "" || line[0] == '#' {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			continue
		}
		if v, err := strconv.ParseFloat(line[i+1:], 64); err == nil {
			m[line[:i]] = v
		}
	}
	return m, nil
}

// sum adds the series of a metric whose labels include every one given
// (as `name="value"`).
func (m metrics) sum(name string, labels ...string) float64 {
	var total float64
	for series, v := range m {
		base, rest, _ := strings.Cut(series, "{")
		if base != name {
			continue
		}
		ok := true
		for _, l := range labels {
			if !strings.Contains(rest, l) {
				ok = false
				break
			}
		}
		if ok {
			total += v
		}
	}
	return total
}

// sampler watches a child while a run lasts: its anonymous memory every
// 100 ms (/proc), and, for pincer, its goroutines every second (its
// /metrics).
type sampler struct {
	pid  int
	at   endpoint // pincer's HTTP root; zero for no metrics
	stop chan struct{}
	wg   sync.WaitGroup

	mu          sync.Mutex
	peak, last  int
	peakAnon    int64
	lastMetrics metrics
	// allocFirst and allocLast are go_memstats_alloc_bytes_total at the
	// first and the latest scrape; scraped says there was a first.
	allocFirst, allocLast float64
	scraped               bool
}

func startSampler(ctx context.Context, pid int, at endpoint) *sampler {
	s := &sampler{pid: pid, at: at, stop: make(chan struct{})}
	s.memory()
	s.scrape(ctx)
	s.wg.Go(func() {
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for i := 1; ; i++ {
			select {
			case <-s.stop:
				return
			case <-ctx.Done():
				return
			case <-t.C:
				s.memory()
				if i%10 == 0 {
					s.scrape(ctx)
				}
			}
		}
	})
	return s
}

func (s *sampler) memory() {
	u, err := procMemory(s.pid)
	if err != nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.peakAnon = max(s.peakAnon, u.anon)
}

func (s *sampler) scrape(ctx context.Context) {
	if s.at.base == "" {
		return
	}
	m, err := scrape(ctx, s.at)
	if err != nil {
		return
	}
	n := int(m.sum("go_goroutines"))
	alloc := m.sum("go_memstats_alloc_bytes_total")
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.scraped {
		s.scraped, s.allocFirst = true, alloc
	}
	s.allocLast = alloc
	s.last = n
	s.peak = max(s.peak, n)
	s.lastMetrics = m
}

// sampled is what a sampler saw.
type sampled struct {
	goroutinesPeak, goroutinesEnd int
	peakAnon                      int64
	metrics                       metrics // the last scrape
	// allocated is what the process allocated on its heap between the
	// first scrape and the last (Go's cumulative count); 0 unscraped.
	allocated float64
}

// finish takes a last sample and stops.
func (s *sampler) finish(ctx context.Context) sampled {
	close(s.stop)
	s.wg.Wait()
	s.memory()
	s.scrape(ctx)
	s.mu.Lock()
	defer s.mu.Unlock()
	return sampled{goroutinesPeak: s.peak, goroutinesEnd: s.last, peakAnon: s.peakAnon, metrics: s.lastMetrics,
		allocated: s.allocLast - s.allocFirst}
}
