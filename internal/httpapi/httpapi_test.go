package httpapi

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

func newServer(t *testing.T, token string) *httptest.Server {
	t.Helper()
	reg := prometheus.NewRegistry()
	c := prometheus.NewCounter(prometheus.CounterOpts{Name: "pincer_test_total", Help: "x"})
	reg.MustRegister(c)
	c.Inc()
	app := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "app:"+r.URL.Path) })
	srv := httptest.NewServer(New(Options{Token: token, Gatherer: reg, App: app, Started: time.Now()}))
	t.Cleanup(srv.Close)
	return srv
}

func get(t *testing.T, c *http.Client, url string, header http.Header) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	for k, v := range header {
		req.Header[k] = v
	}
	res, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res, string(b)
}

func TestHealthAndMetricsWithoutToken(t *testing.T) {
	srv := newServer(t, "")
	res, body := get(t, srv.Client(), srv.URL+"/healthz", nil)
	if res.StatusCode != 200 || !strings.HasPrefix(body, `{"status":"ok","components":[],"uptimeSeconds":`) {
		t.Errorf("healthz: %d %s", res.StatusCode, body)
	}
	res, body = get(t, srv.Client(), srv.URL+"/metrics", nil)
	if res.StatusCode != 200 || !strings.Contains(body, "pincer_test_total 1") {
		t.Errorf("metrics: %d %s", res.StatusCode, body)
	}
	if strings.Contains(body, "go_goroutines") {
		t.Error("metrics must come from pincer's own registry, not the global one")
	}
	res, _ = get(t, srv.Client(), srv.URL+"/metrics", http.Header{"Accept-Encoding": {"gzip"}})
	if enc := res.Header.Get("Content-Encoding"); enc != "" {
		t.Errorf("metrics encoded %q: a gzip writer per scrape is most of a megabyte of garbage", enc)
	}
	if _, body = get(t, srv.Client(), srv.URL+"/anything", nil); body != "app:/anything" {
		t.Errorf("app not mounted: %q", body)
	}
}

func TestTokenIsCheckedOnEveryRequestButHealth(t *testing.T) {
	srv := newServer(t, "s3cret")
	for _, path := range []string{"/metrics", "/", "/api/session", "/healthz/x"} {
		if res, _ := get(t, srv.Client(), srv.URL+path, nil); res.StatusCode != http.StatusUnauthorized {
			t.Errorf("%s without token: %d", path, res.StatusCode)
		}
		if res, _ := get(t, srv.Client(), srv.URL+path, http.Header{"Authorization": {"Bearer wrong"}}); res.StatusCode != http.StatusUnauthorized {
			t.Errorf("%s with a wrong token: %d", path, res.StatusCode)
		}
		if res, _ := get(t, srv.Client(), srv.URL+path, http.Header{"Authorization": {"Bearer s3cret"}}); res.StatusCode != http.StatusOK {
			t.Errorf("%s with the token: %d", path, res.StatusCode)
		}
	}
	if res, _ := get(t, srv.Client(), srv.URL+"/api/session?token=s3cret", nil); res.StatusCode != http.StatusOK {
		t.Errorf("query token on the API: %d", res.StatusCode)
	}
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/healthz", nil)
	res, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusUnauthorized {
		t.Errorf("POST /healthz without token: %d", res.StatusCode)
	}
}

// TestHealthzAnswersProbesWithoutToken: health probes (Kubernetes, Docker,
// load balancers) carry no token; they get the status and nothing else.
func TestHealthzAnswersProbesWithoutToken(t *testing.T) {
	var ready atomic.Bool
	srv := httptest.NewServer(New(Options{Token: "s3cret", App: http.NotFoundHandler(), Ready: ready.Load, Started: time.Now().Add(-time.Hour)}))
	defer srv.Close()
	ready.Store(true)
	for name, h := range map[string]http.Header{"no token": nil, "a wrong token": {"Authorization": {"Bearer wrong"}}} {
		res, body := get(t, srv.Client(), srv.URL+"/healthz", h)
		if res.StatusCode != http.StatusOK || body != `{"status":"ok"}`+"\n" {
			t.Errorf("with %s: %d %q", name, res.StatusCode, body)
		}
	}
	res, body := get(t, srv.Client(), srv.URL+"/healthz", http.Header{"Authorization": {"Bearer s3cret"}})
	var full struct {
		Status        string
		UptimeSeconds int
	}
	if err := json.Unmarshal([]byte(body), &full); err != nil || res.StatusCode != http.StatusOK || full.Status != "ok" || full.UptimeSeconds < 3600 {
		t.Errorf("with the token: %d %s", res.StatusCode, body)
	}
	ready.Store(false)
	if res, body := get(t, srv.Client(), srv.URL+"/healthz", nil); res.StatusCode != http.StatusServiceUnavailable || body != `{"status":"unavailable"}`+"\n" {
		t.Errorf("not ready: %d %q", res.StatusCode, body)
	}
}

func tokenCookie(t *testing.T, res *http.Response) *http.Cookie {
	t.Helper()
	for _, ck := range res.Cookies() {
		if ck.Name == TokenCookie {
			return ck
		}
	}
	t.Fatalf("no %s cookie: %d %v", TokenCookie, res.StatusCode, res.Header)
	return nil
}

// TestTokenCookieIsSecureOverHTTPS: the cookie is Secure when the browser
// came over TLS, directly or through a proxy that says so.
func TestTokenCookieIsSecureOverHTTPS(t *testing.T) {
	srv := newServer(t, "s3cret")
	c := srv.Client()
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	for _, tc := range []struct {
		proto  []string
		secure bool
	}{
		{nil, false},
		{[]string{"http"}, false},
		{[]string{"https"}, true},
		{[]string{"HTTPS"}, true},
		{[]string{"https, http"}, true},
		{[]string{"http, https"}, false},
		{[]string{"http", "https"}, false},
	} {
		var h http.Header
		if tc.proto != nil {
			h = http.Header{"X-Forwarded-Proto": tc.proto}
		}
		res, _ := get(t, c, srv.URL+"/?token=s3cret", h)
		ck := tokenCookie(t, res)
		if ck.Secure != tc.secure || !ck.HttpOnly || ck.SameSite != http.SameSiteStrictMode {
			t.Errorf("X-Forwarded-Proto %q: secure %v, httpOnly %v, sameSite %v", tc.proto, ck.Secure, ck.HttpOnly, ck.SameSite)
		}
	}

	tls := httptest.NewTLSServer(New(Options{Token: "s3cret", App: http.NotFoundHandler(), Started: time.Now()}))
	defer tls.Close()
	c = tls.Client()
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	res, _ := get(t, c, tls.URL+"/?token=s3cret", nil)
	if ck := tokenCookie(t, res); !ck.Secure || !ck.HttpOnly || ck.SameSite != http.SameSiteStrictMode {
		t.Errorf("over TLS: %+v", ck)
	}
}

func TestOpenURL(t *testing.T) {
	for _, tc := range []struct {
		addr, url string
		all       bool
	}{
		{"127.0.0.1:18789", "http://127.0.0.1:18789/", false},
		{"192.0.2.7:80", "http://192.0.2.7:80/", false},
		{"[::1]:18789", "http://[::1]:18789/", false},
		{"[2001:db8::1]:18789", "http://[2001:db8::1]:18789/", false},
		{"localhost:18789", "http://localhost:18789/", false},
		{"0.0.0.0:18789", "http://127.0.0.1:18789/", true},
		{"[::]:18789", "http://127.0.0.1:18789/", true},
		{"[::ffff:0.0.0.0]:18789", "http://127.0.0.1:18789/", true},
		{":18789", "http://127.0.0.1:18789/", true},
		{"[fe80::1%eth0]:18789", "http://[fe80::1%25eth0]:18789/", false},
		{"pipe", "http://pipe/", false},
	} {
		url, all := OpenURL(tc.addr)
		if url != tc.url || all != tc.all {
			t.Errorf("OpenURL(%q) = %q, %v; want %q, %v", tc.addr, url, all, tc.url, tc.all)
		}
	}
}

func TestTokenLinkSetsCookieAndRedirects(t *testing.T) {
	srv := newServer(t, "s3cret")
	c := srv.Client()
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	res, _ := get(t, c, srv.URL+"/?token=s3cret&x=1", nil)
	if res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != "/?x=1" {
		t.Fatalf("got %d to %q", res.StatusCode, res.Header.Get("Location"))
	}
	var cookie *http.Cookie
	for _, ck := range res.Cookies() {
		if ck.Name == TokenCookie {
			cookie = ck
		}
	}
	if cookie == nil || !cookie.HttpOnly {
		t.Fatalf("cookie = %+v", cookie)
	}
	res, body := get(t, c, srv.URL+"/", http.Header{"Cookie": {cookie.String()}})
	if res.StatusCode != 200 || body != "app:/" {
		t.Errorf("with cookie: %d %q", res.StatusCode, body)
	}
}

func TestEndpointsBypassTheGatewayTokenOnlyOnTheirPath(t *testing.T) {
	ep := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "endpoint") })
	srv := httptest.NewServer(New(Options{Token: "gw", App: http.NotFoundHandler(), Endpoints: map[string]http.Handler{"/onebot/v11/ws": ep}, Started: time.Now()}))
	defer srv.Close()
	if res, body := get(t, srv.Client(), srv.URL+"/onebot/v11/ws", nil); res.StatusCode != 200 || body != "endpoint" {
		t.Errorf("endpoint: %d %q", res.StatusCode, body)
	}
	for _, path := range []string{"/onebot/v11/ws/x", "/onebot/v11", "/metrics"} {
		if res, _ := get(t, srv.Client(), srv.URL+path, nil); res.StatusCode != http.StatusUnauthorized {
			t.Errorf("%s without the gateway token: %d", path, res.StatusCode)
		}
	}
}
