// Package httpapi assembles pincer's HTTP surface: health, Prometheus
// metrics and the channels that serve over HTTP (the web chat), behind the
// gateway token when one is configured.
package httpapi

import (
	"crypto/subtle"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// TokenCookie carries the gateway token for browsers after they opened a
// ?token= link once.
const TokenCookie = "pincer_token"

// Options configure the handler.
type Options struct {
	// Token, when not empty, is required on every request, as
	// "Authorization: Bearer <token>", ?token=<token> or the token cookie.
	Token string
	// Gatherer is the metrics registry served on /metrics.
	Gatherer prometheus.Gatherer
	// App serves everything else (the web chat); nil serves 404.
	App http.Handler
	// Endpoints are served by exact path outside the gateway token: chat
	// platforms that call in (a OneBot reverse WebSocket, event POSTs)
	// authenticate with their own secrets.
	Endpoints map[string]http.Handler
	// Ready reports readiness for /healthz; nil means always ready.
	Ready func() bool
	// Started is shown by /healthz.
	Started time.Time
}

// New returns the gateway's HTTP handler.
func New(o Options) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		ready := o.Ready == nil || o.Ready()
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		if !ready {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"ok": ready, "uptimeSeconds": int(time.Since(o.Started).Seconds())})
	})
	if o.Gatherer != nil {
		mux.Handle("GET /metrics", promhttp.HandlerFor(o.Gatherer, promhttp.HandlerOpts{}))
	}
	if o.App != nil {
		mux.Handle("/", o.App)
	}
	var h http.Handler = mux
	if o.Token != "" {
		h = requireToken(o.Token, h)
	}
	if len(o.Endpoints) == 0 {
		return h
	}
	outer := http.NewServeMux()
	for path, e := range o.Endpoints {
		outer.Handle(path, e)
	}
	outer.Handle("/", h)
	return outer
}

// requireToken admits requests carrying token. A browser that opens a page
// with ?token= gets the token as an HttpOnly cookie and is redirected to the
// URL without it, so the token does not linger in history or logs.
func requireToken(token string, next http.Handler) http.Handler {
	want := []byte(token)
	ok := func(got string) bool { return got != "" && subtle.ConstantTimeCompare([]byte(got), want) == 1 }
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if bearer, found := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); found && ok(bearer) {
			next.ServeHTTP(w, r)
			return
		}
		if q := r.URL.Query().Get("token"); q != "" && ok(q) {
			if r.Method == http.MethodGet && !strings.HasPrefix(r.URL.Path, "/api/") {
				http.SetCookie(w, &http.Cookie{Name: TokenCookie, Value: token, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil})
				clean := *r.URL
				v := clean.Query()
				v.Del("token")
				clean.RawQuery = v.Encode()
				http.Redirect(w, r, (&url.URL{Path: clean.Path, RawQuery: clean.RawQuery}).String(), http.StatusSeeOther)
				return
			}
			next.ServeHTTP(w, r)
			return
		}
		if c, err := r.Cookie(TokenCookie); err == nil && ok(c.Value) {
			next.ServeHTTP(w, r)
			return
		}
		w.Header().Set("WWW-Authenticate", `Bearer realm="pincer"`)
		http.Error(w, "unauthorized: the gateway token is missing or wrong", http.StatusUnauthorized)
	})
}
