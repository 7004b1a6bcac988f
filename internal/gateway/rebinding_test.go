package gateway

import (
	"io"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/pincerbot/pincer/internal/channel/webchat"
	"github.com/pincerbot/pincer/internal/channel/webchat/webchattest"
	"github.com/pincerbot/pincer/internal/config"
)

// asHost sends method path to the gateway at base with the Host header
// host, as a browser on a page of that host would (same origin).
func asHost(t *testing.T, base, method, path, host, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, base+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Host = host
	if method == http.MethodPost {
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Origin", "http://"+host)
		req.Header.Set("Sec-Fetch-Site", "same-origin")
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(res.Body, 1000))
	return res.StatusCode, string(b)
}

// TestLoopbackGatewayRefusesReboundHosts: a page on evil.example whose
// name was rebound to 127.0.0.1 talks to pincer with Host: evil.example,
// same-origin as far as the browser knows. A loopback gateway refuses it
// on every path; the loopback names and gateway.allowedHosts pass.
func TestLoopbackGatewayRefusesReboundHosts(t *testing.T) {
	cfg := config.Default()
	cfg.Gateway.AllowedHosts = []string{"pincer.lan"}
	english(&cfg) // /status's answer is read below
	g := startGateway(t, cfg)
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(g.url, "http://"))
	status := `{"text":"/status"}`
	for _, host := range []string{"evil.example:" + port, "evil.example", "localhost.evil.example:" + port} {
		for _, r := range []struct{ method, path, body string }{
			{http.MethodGet, "/api/session", ""},
			{http.MethodPost, "/api/messages", status},
			{http.MethodGet, "/", ""},
			{http.MethodGet, "/healthz", ""},
			{http.MethodGet, "/metrics", ""},
			{http.MethodGet, "/dashboard", ""},
			{http.MethodGet, "/api/trace", ""},
			{http.MethodGet, "/api/trace/stream", ""},
			{http.MethodGet, "/api/dashboard/status", ""},
		} {
			code, body := asHost(t, g.url, r.method, r.path, host, r.body)
			if code != http.StatusMisdirectedRequest || !strings.Contains(body, "gateway.allowedHosts") {
				t.Errorf("%s %s as %s: %d %.80q", r.method, r.path, host, code, body)
			}
		}
	}
	for _, host := range []string{"localhost:" + port, "127.0.0.1:" + port, "[::1]:" + port, "pincer.lan:" + port} {
		if code, body := asHost(t, g.url, http.MethodGet, "/api/session", host, ""); code != http.StatusOK {
			t.Errorf("GET /api/session as %s: %d %q", host, code, body)
		}
	}
	// /status runs for the loopback name, and only for it.
	code, body := asHost(t, g.url, http.MethodPost, "/api/messages", "localhost:"+port, status)
	if code != http.StatusOK || !strings.Contains(body, "Model: ") {
		t.Errorf("POST /status as localhost: %d %q", code, body)
	}
	res, _, err := webchattest.New(g.url).Post("/status", "")
	if err != nil {
		t.Fatal(err)
	}
	events, err := webchattest.Events(res)
	if err != nil {
		t.Fatal(err)
	}
	if got := webchattest.Text(events, webchat.EventReply); !strings.Contains(got, "Model: ") {
		t.Errorf("the web chat on 127.0.0.1: %q", got)
	}
}

// TestExposedGatewayChecksHostsOnlyWhenListed: off loopback the gateway
// token guards every request, whatever its Host; gateway.allowedHosts,
// when set, narrows the names.
func TestExposedGatewayChecksHostsOnlyWhenListed(t *testing.T) {
	cfg := config.Default()
	cfg.Gateway.Token = "gateway-secret"
	g := startExposed(t, cfg)
	if code, _ := asHost(t, g.url, http.MethodGet, "/api/session", "evil.example", ""); code != http.StatusUnauthorized {
		t.Errorf("without allowedHosts, a foreign host meets the token: %d", code)
	}
	if code, _ := asHost(t, g.url, http.MethodGet, "/healthz", "pincer.example.com", ""); code != http.StatusOK {
		t.Errorf("without allowedHosts, any host is served: %d", code)
	}
	cfg.Gateway.AllowedHosts = []string{"pincer.example.com"}
	g = startExposed(t, cfg)
	if code, _ := asHost(t, g.url, http.MethodGet, "/healthz", "pincer.example.com", ""); code != http.StatusOK {
		t.Errorf("a listed host: %d", code)
	}
	if code, _ := asHost(t, g.url, http.MethodGet, "/healthz", "evil.example", ""); code != http.StatusMisdirectedRequest {
		t.Errorf("a host not listed: %d", code)
	}
}
