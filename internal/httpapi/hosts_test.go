package httpapi

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func TestHostsServed(t *testing.T) {
	h := newHosts([]string{"Pincer.Example.com", "[2001:DB8::1]", "192.0.2.7", "box."})
	for host, want := range map[string]bool{
		"":                           true,
		"localhost":                  true,
		"localhost:18789":            true,
		"LocalHost:18789":            true,
		"localhost.:18789":           true,
		"pincer.localhost:18789":     true,
		"127.0.0.1:18789":            true,
		"127.0.0.1":                  true,
		"127.1.2.3:80":               true,
		"[::1]:18789":                true,
		"[::1]":                      true,
		"[::ffff:127.0.0.1]:18789":   true,
		"pincer.example.com:443":     true,
		"PINCER.EXAMPLE.COM":         true,
		"pincer.example.com.":        true,
		"[2001:db8:0::1]:18789":      true,
		"192.0.2.7:18789":            true,
		"box:18789":                  true,
		"evil.example":               false,
		"evil.example:18789":         false,
		"localhost.evil.example":     false,
		"127.0.0.1.evil.example":     false,
		"notlocalhost:18789":         false,
		"example.com":                false,
		"www.pincer.example.com":     false,
		"192.0.2.8:18789":            false,
		"0.0.0.0:18789":              false,
		"[2001:db8::2]:18789":        false,
		"pincer.example.com.evil.io": false,
	} {
		if got := h.serves(host); got != want {
			t.Errorf("serves(%q) = %v, want %v", host, got, want)
		}
	}
}

// hostRequest sends method path to srv with the Host header host.
func hostRequest(t *testing.T, srv *httptest.Server, method, path, host string, header http.Header) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, srv.URL+path, strings.NewReader(`{"text":"/status"}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Host = host
	for k, v := range header {
		req.Header[k] = v
	}
	res, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

func hostServer(t *testing.T, o Options) *httptest.Server {
	t.Helper()
	o.App = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "app:"+r.URL.Path) })
	o.Endpoints = map[string]http.Handler{"/onebot/v11/ws": http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "endpoint") })}
	o.Started = time.Now()
	srv := httptest.NewServer(New(o))
	t.Cleanup(srv.Close)
	return srv
}

// TestLoopbackListenerServesOnlyLoopbackHosts: a page whose name was
// rebound to 127.0.0.1 reaches pincer with its own name as the Host; on a
// loopback listener that is refused on every path, token or not.
func TestLoopbackListenerServesOnlyLoopbackHosts(t *testing.T) {
	srv := hostServer(t, Options{Loopback: true, AllowedHosts: []string{"pincer.lan"}})
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	port = ":" + port
	paths := []struct{ method, path string }{
		{http.MethodGet, "/api/session"}, {http.MethodPost, "/api/messages"}, {http.MethodGet, "/"},
		{http.MethodGet, "/metrics"}, {http.MethodGet, "/healthz"}, {http.MethodGet, "/onebot/v11/ws"},
	}
	for _, p := range paths {
		for _, host := range []string{"evil.example" + port, "evil.example", "localhost.evil.example" + port} {
			code, body := hostRequest(t, srv, p.method, p.path, host, nil)
			if code != http.StatusMisdirectedRequest || !strings.Contains(body, "gateway.allowedHosts") {
				t.Errorf("%s %s for %s: %d %q", p.method, p.path, host, code, body)
			}
		}
		for _, host := range []string{"localhost" + port, "127.0.0.1" + port, "[::1]" + port, "pincer.localhost" + port, "pincer.lan" + port, "PINCER.LAN"} {
			if code, body := hostRequest(t, srv, p.method, p.path, host, nil); code != http.StatusOK {
				t.Errorf("%s %s for %s: %d %q", p.method, p.path, host, code, body)
			}
		}
	}
}

// TestHostIsCheckedBeforeTheToken: the token does not make a foreign
// host acceptable on a loopback listener.
func TestHostIsCheckedBeforeTheToken(t *testing.T) {
	srv := hostServer(t, Options{Loopback: true, Token: "s3cret"})
	if code, _ := hostRequest(t, srv, http.MethodGet, "/api/session", "evil.example", http.Header{"Authorization": {"Bearer s3cret"}}); code != http.StatusMisdirectedRequest {
		t.Errorf("foreign host with the token: %d", code)
	}
	if code, _ := hostRequest(t, srv, http.MethodGet, "/api/session", "localhost", http.Header{"Authorization": {"Bearer s3cret"}}); code != http.StatusOK {
		t.Errorf("localhost with the token: %d", code)
	}
	if code, _ := hostRequest(t, srv, http.MethodGet, "/api/session", "localhost", nil); code != http.StatusUnauthorized {
		t.Errorf("localhost without the token: %d", code)
	}
}

// TestOtherListenersCheckHostsOnlyWhenListed: off loopback the gateway
// token guards everything; allowedHosts, when set, narrows the names.
func TestOtherListenersCheckHostsOnlyWhenListed(t *testing.T) {
	open := hostServer(t, Options{Token: "s3cret"})
	for _, host := range []string{"evil.example", "192.0.2.7:18789", "localhost"} {
		if code, _ := hostRequest(t, open, http.MethodGet, "/api/session", host, http.Header{"Authorization": {"Bearer s3cret"}}); code != http.StatusOK {
			t.Errorf("no allowedHosts, %s: %d", host, code)
		}
	}
	listed := hostServer(t, Options{Token: "s3cret", AllowedHosts: []string{"pincer.example.com"}})
	for host, want := range map[string]int{"pincer.example.com": http.StatusOK, "127.0.0.1:1": http.StatusOK, "evil.example": http.StatusMisdirectedRequest, "192.0.2.7": http.StatusMisdirectedRequest} {
		if code, _ := hostRequest(t, listed, http.MethodGet, "/api/session", host, http.Header{"Authorization": {"Bearer s3cret"}}); code != want {
			t.Errorf("allowedHosts set, %s: %d, want %d", host, code, want)
		}
	}
}
