package cluster

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// testServer is an embedded nats-server with JetStream on a random port that
// can be stopped and started again on the same port and store.
type testServer struct {
	t    testing.TB
	dir  string
	port int
	s    *server.Server
}

func startServer(t testing.TB) *testServer {
	t.Helper()
	ts := &testServer{t: t, dir: t.TempDir(), port: -1}
	ts.start()
	t.Cleanup(ts.stop)
	return ts
}

func (ts *testServer) start() {
	ts.t.Helper()
	s, err := server.NewServer(&server.Options{
		Host:      "127.0.0.1",
		Port:      ts.port,
		JetStream: true,
		StoreDir:  ts.dir,
		NoLog:     true,
		NoSigs:    true,
	})
	if err != nil {
		ts.t.Fatalf("nats-server: %v", err)
	}
	go s.Start()
	if !s.ReadyForConnections(10 * time.Second) {
		ts.t.Fatal("nats-server not ready")
	}
	ts.port = s.Addr().(*net.TCPAddr).Port
	ts.s = s
}

func (ts *testServer) stop() {
	if ts.s != nil {
		ts.s.Shutdown()
		ts.s.WaitForShutdown()
		ts.s = nil
	}
}

func (ts *testServer) url() string { return fmt.Sprintf("nats://127.0.0.1:%d", ts.port) }

var prefixSeq atomic.Int64

func uniquePrefix() string { return fmt.Sprintf("t%d", prefixSeq.Add(1)) }

func testLogger() *slog.Logger {
	if os.Getenv("CLUSTER_TEST_LOG") == "" {
		return slog.New(slog.DiscardHandler)
	}
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// openNode opens a node and closes it when the test ends.
func openNode(t testing.TB, o Options) *Node {
	t.Helper()
	if o.Logger == nil {
		o.Logger = testLogger().With("test", t.Name())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	n, err := Open(ctx, o)
	if err != nil {
		t.Fatalf("Open(%s): %v", o.Instance, err)
	}
	t.Cleanup(func() { n.Close() })
	return n
}

// await waits for cond to hold, checking every few milliseconds, and fails
// the test after the generous bound d.
func await(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// recv waits for a value from ch for at most d.
func recv[T any](t testing.TB, ch <-chan T, d time.Duration, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(d):
		t.Fatalf("timed out after %v waiting for %s", d, what)
		panic("unreachable")
	}
}

// group runs a test's goroutines under one context; when the test ends
// (before the nodes opened earlier are closed) it cancels the context and
// waits for them.
type group struct {
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

func newGroup(t testing.TB) *group {
	g := &group{}
	g.ctx, g.cancel = context.WithCancel(context.Background())
	t.Cleanup(func() {
		g.cancel()
		g.wg.Wait()
	})
	return g
}

func (g *group) spawn(f func()) {
	g.wg.Add(1)
	go func() {
		defer g.wg.Done()
		f()
	}()
}

// proxy forwards TCP connections to a target until it is cut: then it
// drops the upstream side of every connection but keeps the client side
// open and silent, as a network partition looks to the client.
type proxy struct {
	ln     net.Listener
	target string
	mu     sync.Mutex
	cut    bool
	conns  []net.Conn // upstream connections
	held   []net.Conn // client connections accepted while cut
}

func newProxy(t testing.TB, target string) *proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{ln: ln, target: target}
	go p.serve()
	t.Cleanup(func() {
		ln.Close()
		p.mu.Lock()
		defer p.mu.Unlock()
		for _, c := range append(p.conns, p.held...) {
			c.Close()
		}
	})
	return p
}

func (p *proxy) url() string { return "nats://" + p.ln.Addr().String() }

func (p *proxy) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		if p.cut {
			p.held = append(p.held, c)
			p.mu.Unlock()
			continue
		}
		up, err := net.Dial("tcp", p.target)
		if err != nil {
			p.mu.Unlock()
			c.Close()
			continue
		}
		p.conns = append(p.conns, up)
		p.held = append(p.held, c)
		p.mu.Unlock()
		go func() { _, _ = io.Copy(up, c) }()
		go func() { _, _ = io.Copy(c, up) }()
	}
}

// partition cuts every connection from the clients' view without closing
// their sockets.
func (p *proxy) partition() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = true
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}
