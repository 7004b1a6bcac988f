package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/pincerbot/pincer/internal/channel/webchat"
	"github.com/pincerbot/pincer/internal/channel/webchat/webchattest"
	"github.com/pincerbot/pincer/internal/llm/llmtest"
)

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// binary builds cmd/pincer once per test process, with the race
// detector when the tests are built with it (go test -race): then pincer's
// own races show in the tests that run the binary, and a plain go test
// stays fast.
func binary(tb testing.TB) string {
	tb.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "pincer-bin-")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "pincer")
		args := []string{"build", "-o", binPath}
		if raceEnabled {
			args = append(args, "-race")
		}
		out, err := exec.Command("go", append(args, ".")...).CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	})
	if buildErr != nil {
		tb.Fatal(buildErr)
	}
	return binPath
}

// raceReport begins every report of the race detector.
const raceReport = "WARNING: DATA RACE"

// noRace fails tb when output, a child's, holds a race report. The
// children run with GORACE=halt_on_error=1 (see TestMain): a race stops
// them at once, with exit status 66, after the report.
func noRace(tb testing.TB, what, output string) {
	tb.Helper()
	if i := strings.Index(output, raceReport); i >= 0 {
		tb.Errorf("%s: the race detector reported:\n%s", what, output[i:min(len(output), i+8000)])
	}
}

func TestMain(m *testing.M) {
	if raceEnabled {
		// Every child, pincer serve and those pincer bench starts, stops
		// at its first race.
		os.Setenv("GORACE", strings.TrimSpace(os.Getenv("GORACE")+" halt_on_error=1"))
	}
	code := m.Run()
	if binPath != "" {
		os.RemoveAll(filepath.Dir(binPath))
	}
	os.Exit(code)
}

// proc is a running pincer serve.
type proc struct {
	cmd    *exec.Cmd
	ready  string // the ready line
	url    string
	stderr *logBuf
}

// startServe runs "pincer serve" in dir (with config when not empty) and
// waits for its ready line.
func startServe(tb testing.TB, dir, config string) (*proc, time.Duration) {
	tb.Helper()
	args := []string{"serve"}
	if config != "" {
		path := filepath.Join(dir, "test.json5")
		if err := os.WriteFile(path, []byte(config), 0o600); err != nil {
			tb.Fatal(err)
		}
		args = append(args, "--config", path)
	}
	cmd := exec.Command(binary(tb), args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "PINCER_CONFIG=")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	p := &proc{cmd: cmd, stderr: &logBuf{}}
	cmd.Stderr = p.stderr
	tb.Cleanup(func() { noRace(tb, "pincer serve", p.stderr.String()) })
	start := time.Now()
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	// A test that does not stop its pincer (or fails before it does)
	// leaves none running: killing one already stopped does nothing.
	tb.Cleanup(func() { _ = cmd.Process.Kill() })
	line, err := bufio.NewReader(stdout).ReadString('\n')
	elapsed := time.Since(start)
	if err != nil {
		_ = cmd.Wait()
		tb.Fatalf("no ready line: %v\nstderr:\n%s", err, p.stderr)
	}
	go io.Copy(io.Discard, stdout)
	i := strings.Index(line, "http://")
	if i < 0 {
		tb.Fatalf("ready line has no URL: %q", line)
	}
	p.ready = line
	p.url = strings.TrimSuffix(strings.Fields(line[i:])[0], "/")
	return p, elapsed
}

// stop sends SIGTERM and returns the exit error.
func (p *proc) stop() error {
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		return err
	}
	return p.cmd.Wait()
}

// logBuf keeps a process's output; it is written while the test reads it.
type logBuf struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *logBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuf) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func freePortConfig(extra string) string {
	return `{ gateway: { listen: '127.0.0.1:0' }, ` + extra + ` }`
}

// TestServeOnBuiltInDefaults is the quick start: no config at all, the web
// chat on 127.0.0.1:18789 and the preview agent answering.
func TestServeOnBuiltInDefaults(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:18789")
	if err != nil {
		t.Skipf("the default port is taken on this machine: %v", err)
	}
	ln.Close()
	dir := t.TempDir()
	p, _ := startServe(t, dir, "")
	if p.url != "http://127.0.0.1:18789" {
		t.Errorf("ready URL %q", p.url)
	}
	res, _, err := webchattest.New(p.url).Post("hello from the quick start", "")
	if err != nil {
		t.Fatal(err)
	}
	events, err := webchattest.Events(res)
	if err != nil {
		t.Fatal(err)
	}
	if got := webchattest.Text(events, webchat.EventReply); !strings.Contains(got, "[pincer preview]") || !strings.Contains(got, "hello from the quick start") {
		t.Errorf("reply %q", got)
	}
	if err := p.stop(); err != nil {
		t.Errorf("exit after SIGTERM: %v\n%s", err, p.stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, "data", "pincer.db")); err != nil {
		t.Errorf("the database is not under ./data: %v", err)
	}
}

func TestServeWithCompatibleServer(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	fake := llmtest.NewOpenAI(t)
	fake.Script(llmtest.Reply{Text: []string{"real ", "model ", "reply"}})
	cfg := freePortConfig(`
		models: { providers: { openai: { baseUrl: '` + fake.URL + `/v1', apiKey: '${PINCER_TEST_KEY}' } } },
		agents: { defaults: { model: { primary: 'openai/gpt-4o-mini' } } },`)
	t.Setenv("PINCER_TEST_KEY", "sk-from-env")
	p, _ := startServe(t, t.TempDir(), cfg)
	res, _, err := webchattest.New(p.url).Post("hi", "")
	if err != nil {
		t.Fatal(err)
	}
	events, err := webchattest.Events(res)
	if err != nil {
		t.Fatal(err)
	}
	if got := webchattest.Text(events, webchat.EventReply); got != "real model reply" {
		t.Errorf("reply %q", got)
	}
	if got := fake.Requests()[0].Header.Get("Authorization"); got != "Bearer sk-from-env" {
		t.Errorf("key from ${ENV} not used: %q", got)
	}
	if err := p.stop(); err != nil {
		t.Errorf("exit: %v", err)
	}
	if strings.Contains(p.stderr.String(), "sk-from-env") {
		t.Error("the API key appeared in the log")
	}
}

func TestServeRefusesPublicListenWithoutToken(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "c.json5")
	if err := os.WriteFile(path, []byte(`{ gateway: { listen: '0.0.0.0:0' } }`), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(binary(t), "serve", "--config", path).CombinedOutput()
	noRace(t, "pincer serve", string(out))
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 || !strings.Contains(string(out), "gateway.token") {
		t.Errorf("err %v\n%s", err, out)
	}
}

// TestServeOnAllInterfaces: a listener on 0.0.0.0 is announced with a URL
// a browser can open, and health probes get an answer without the token.
func TestServeOnAllInterfaces(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	p, _ := startServe(t, t.TempDir(), `{ gateway: { listen: '0.0.0.0:0', token: 'gw-secret' } }`)
	defer func() {
		if err := p.stop(); err != nil {
			t.Errorf("exit after SIGTERM: %v\n%s", err, p.stderr)
		}
	}()
	if !strings.HasPrefix(p.url, "http://127.0.0.1:") || strings.HasSuffix(p.url, ":0") || !strings.Contains(p.ready, "listening on all interfaces") || !strings.Contains(p.ready, "?token=") {
		t.Errorf("ready line %q", p.ready)
	}
	res, err := http.Get(p.url + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(res.Body)
	res.Body.Close()
	if err != nil || res.StatusCode != http.StatusOK || string(body) != `{"status":"ok"}`+"\n" {
		t.Errorf("healthz without the token: %d %q %v", res.StatusCode, body, err)
	}
	res, err = http.Get(p.url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusUnauthorized {
		t.Errorf("metrics without the token: %d", res.StatusCode)
	}
}

// BenchmarkStartToReady reports the time from exec to the ready line of a
// serve on a fresh data directory.
func BenchmarkStartToReady(b *testing.B) {
	binary(b)
	var total time.Duration
	for b.Loop() {
		p, elapsed := startServe(b, b.TempDir(), freePortConfig(""))
		total += elapsed
		b.StopTimer()
		if err := p.stop(); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
	b.ReportMetric(float64(total.Microseconds())/1000/float64(b.N), "ms-to-ready")
}

// BenchmarkIdleMemory reports the resident memory of a serve that has
// started and answered one health check: all of it (MiB-rss, mostly pages
// of the mapped binary) and the anonymous part (MiB-anon: heap, stacks).
func BenchmarkIdleMemory(b *testing.B) {
	binary(b)
	var rss, anon float64
	for b.Loop() {
		p, _ := startServe(b, b.TempDir(), freePortConfig(""))
		res, err := webchattest.New(p.url).HTTP.Get(p.url + "/healthz")
		if err != nil {
			b.Fatal(err)
		}
		res.Body.Close()
		total, err := statusKB(p.cmd.Process.Pid, "VmRSS")
		if err != nil {
			b.Fatal(err)
		}
		heap, err := statusKB(p.cmd.Process.Pid, "RssAnon")
		if err != nil {
			b.Fatal(err)
		}
		rss += float64(total) / 1024
		anon += float64(heap) / 1024
		if err := p.stop(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(rss/float64(b.N), "MiB-rss")
	b.ReportMetric(anon/float64(b.N), "MiB-anon")
}

// statusKB reads a kB field of /proc/<pid>/status.
func statusKB(pid int, field string) (int, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for line := range strings.Lines(string(b)) {
		if rest, ok := strings.CutPrefix(line, field+":"); ok {
			return strconv.Atoi(strings.Fields(rest)[0])
		}
	}
	return 0, fmt.Errorf("no %s in /proc status", field)
}

// TestServeReloadsOnSIGHUPAndOnChange: the real binary reloads its config
// file on SIGHUP and when the file is rewritten: the web chat's next turn
// has the new system prompt; a restart-only key is named in the log.
func TestServeReloadsOnSIGHUPAndOnChange(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	fake := llmtest.NewOpenAI(t)
	config := func(prompt, listen string) string {
		return `{ gateway: { listen: '` + listen + `' },
			models: { providers: { openai: { baseUrl: '` + fake.URL + `/v1', apiKey: 'sk-test' } } },
			agents: { defaults: { model: { primary: 'openai/gpt-4o-mini' }, systemPrompt: '` + prompt + `' } } }`
	}
	dir := t.TempDir()
	p, _ := startServe(t, dir, config("第一版", "127.0.0.1:0"))
	path := filepath.Join(dir, "test.json5")
	// waitLog waits for the n-th line holding want.
	waitLog := func(want string, n int) {
		t.Helper()
		for deadline := time.Now().Add(20 * time.Second); strings.Count(p.stderr.String(), want) < n; time.Sleep(20 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("no %q (%d) in the log within 20s:\n%s", want, n, p.stderr)
			}
		}
	}
	ask := func(n int) string {
		t.Helper()
		res, _, err := webchattest.New(p.url).Post("在吗", "")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := webchattest.Events(res); err != nil {
			t.Fatal(err)
		}
		reqs := fake.Requests()
		if len(reqs) != n {
			t.Fatalf("%d model requests, want %d", len(reqs), n)
		}
		msgs, _ := reqs[n-1].Body["messages"].([]any)
		first, _ := msgs[0].(map[string]any)
		s, _ := first["content"].(string)
		return s
	}
	if err := os.WriteFile(path, []byte(config("第二版", "127.0.0.1:0")), 0o600); err != nil {
		t.Fatal(err)
	}
	waitLog("config applied", 1)
	if got := ask(1); !strings.HasPrefix(got, "第二版") {
		t.Errorf("after a rewrite the system prompt is %q", got)
	}
	if err := p.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	waitLog("trigger=SIGHUP", 1)
	if err := os.WriteFile(path, []byte(config("第三版", "127.0.0.1:1")), 0o600); err != nil {
		t.Fatal(err)
	}
	waitLog("keys=gateway.listen", 1)
	waitLog("config applied", 2)
	if got := ask(2); !strings.HasPrefix(got, "第三版") {
		t.Errorf("after the second rewrite the system prompt is %q", got)
	}
	if err := p.stop(); err != nil {
		t.Errorf("exit: %v\n%s", err, p.stderr)
	}
}
