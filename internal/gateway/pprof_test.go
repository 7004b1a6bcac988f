package gateway

import (
	"context"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pincerbot/pincer/internal/config"
)

// fetch GETs path from the gateway at base, with the gateway token as a
// Bearer header when token is not empty, and returns the status and body.
func fetch(t *testing.T, base, path, token string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, base+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return res.StatusCode, string(b)
}

// TestPprofBehindTheGatewayToken: with gateway.pprof on, the runtime
// profiles are served on the gateway's listener to requests that carry
// the gateway token, and to no others.
func TestPprofBehindTheGatewayToken(t *testing.T) {
	cfg := config.Default()
	cfg.Gateway.Token = "gateway-secret"
	cfg.Gateway.Pprof = true
	g := startGateway(t, cfg)

	paths := []string{"/debug/pprof/", "/debug/pprof/cmdline", "/debug/pprof/heap?debug=1", "/debug/pprof/goroutine?debug=1", "/debug/pprof/symbol"}
	for _, p := range paths {
		if code, _ := fetch(t, g.url, p, ""); code != http.StatusUnauthorized {
			t.Errorf("%s without the token: %d", p, code)
		}
		if code, _ := fetch(t, g.url, p, "wrong"); code != http.StatusUnauthorized {
			t.Errorf("%s with a wrong token: %d", p, code)
		}
	}

	code, body := fetch(t, g.url, "/debug/pprof/", "gateway-secret")
	if code != http.StatusOK || !strings.Contains(body, "Types of profiles available") {
		t.Errorf("index with the token: %d %.200s", code, body)
	}
	for _, name := range []string{"allocs", "block", "goroutine", "heap", "mutex", "threadcreate", "cmdline", "profile", "symbol", "trace"} {
		if !strings.Contains(body, "href='"+name) {
			t.Errorf("the index does not link %s", name)
		}
	}
	code, body = fetch(t, g.url, "/debug/pprof/heap?debug=1", "gateway-secret")
	if code != http.StatusOK || !strings.HasPrefix(body, "heap profile:") {
		t.Errorf("heap with the token: %d %.200s", code, body)
	}
	code, body = fetch(t, g.url, "/debug/pprof/goroutine?debug=1", "gateway-secret")
	if code != http.StatusOK || !strings.HasPrefix(body, "goroutine profile:") {
		t.Errorf("goroutines with the token: %d %.200s", code, body)
	}
	for name, head := range map[string]string{"allocs": "heap profile:", "block": "--- contention:", "mutex": "--- mutex:", "threadcreate": "threadcreate profile:"} {
		if code, body := fetch(t, g.url, "/debug/pprof/"+name+"?debug=1", "gateway-secret"); code != http.StatusOK || !strings.HasPrefix(body, head) {
			t.Errorf("%s with the token: %d %.200s", name, code, body)
		}
	}
	if code, body := fetch(t, g.url, "/debug/pprof/cmdline", "gateway-secret"); code != http.StatusOK || body == "" {
		t.Errorf("cmdline with the token: %d %q", code, body)
	}
	if code, body := fetch(t, g.url, "/debug/pprof/symbol", "gateway-secret"); code != http.StatusOK || !strings.HasPrefix(body, "num_symbols:") {
		t.Errorf("symbol with the token: %d %q", code, body)
	}

	// The shortest CPU profile there is: gzipped protocol buffers, as go
	// tool pprof reads them.
	code, body = fetch(t, g.url, "/debug/pprof/profile?seconds=1", "gateway-secret")
	if code != http.StatusOK || !strings.HasPrefix(body, "\x1f\x8b") {
		t.Errorf("CPU profile with the token: %d %q", code, body[:min(len(body), 40)])
	}

	// A program such as go tool pprof, which cannot send a header, may
	// carry the token as ?token=: it gets the profile, not the redirect
	// that moves a browser's token into a cookie.
	code, body = fetch(t, g.url, "/debug/pprof/heap?debug=1&token=gateway-secret", "")
	if code != http.StatusOK || !strings.HasPrefix(body, "heap profile:") {
		t.Errorf("heap with ?token=: %d %.200s", code, body)
	}
}

// TestPprofOffByDefault: without gateway.pprof nothing is served under
// /debug/pprof/, to requests with the token either.
func TestPprofOffByDefault(t *testing.T) {
	cfg := config.Default()
	cfg.Gateway.Token = "gateway-secret"
	g := startGateway(t, cfg)
	for _, p := range []string{"/debug/pprof/", "/debug/pprof/heap?debug=1", "/debug/pprof/cmdline", "/debug/pprof/goroutine"} {
		if code, body := fetch(t, g.url, p, "gateway-secret"); code != http.StatusNotFound {
			t.Errorf("%s with pprof off: %d %.200s", p, code, body)
		}
	}
}

// TestPprofWithoutTokenIsRefusedAtStart: serve refuses gateway.pprof on a
// gateway without a token before it listens.
func TestPprofWithoutTokenIsRefusedAtStart(t *testing.T) {
	cfg := config.Default()
	cfg.Store.Path = filepath.Join(t.TempDir(), "pincer.db")
	cfg.Gateway.Pprof = true
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	result := make(chan error, 1)
	ready := make(chan struct{})
	go func() { result <- Run(ctx, cfg, Options{Listener: ln, Ready: readyWriter(ready)}) }()
	select {
	case err = <-result:
	case <-ready:
		cancel()
		t.Fatalf("the gateway started: %v", <-result)
	}
	if err == nil || !strings.Contains(err.Error(), "gateway.pprof: requires gateway.token") {
		t.Fatalf("got %v", err)
	}
}
