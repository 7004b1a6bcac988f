// Package httpapi assembles pincer's HTTP surface: health, Prometheus
// metrics and the channels that serve over HTTP (the web chat), behind the
// gateway token when one is configured, and on a loopback listener only
// for the host names pincer serves.
package httpapi

import (
	"context"
	"crypto/subtle"
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
	// Token, when not empty, is required on every request but /healthz
	// and Endpoints, as "Authorization: Bearer <token>", ?token=<token> or
	// the token cookie.
	Token string
	// Loopback says the listener binds only loopback addresses. Every
	// request must then name a loopback host in its Host header
	// (localhost, *.localhost, 127.0.0.1, [::1] or another loopback
	// address, any port) or one of AllowedHosts, so a web page that
	// rebinds its own name to 127.0.0.1 cannot reach pincer. Others get
	// 421 Misdirected Request.
	Loopback bool
	// AllowedHosts are more host names (or IP addresses) requests may
	// name, without a port, compared case-insensitively. On a listener
	// that is not Loopback they apply only when set, and then the loopback
	// names and these are the only ones served.
	AllowedHosts []string
	// Gatherer is the metrics registry served on /metrics.
	Gatherer prometheus.Gatherer
	// App serves everything else (the web chat); nil serves 404.
	App http.Handler
	// Endpoints are served by exact path outside the gateway token: chat
	// platforms that call in (a OneBot reverse WebSocket, event POSTs)
	// authenticate with their own secrets.
	Endpoints map[string]http.Handler
	// Ready reports readiness for /healthz; nil means always ready. While
	// not ready, /healthz answers 503 with the status "unavailable".
	Ready func() bool
	// Health reports the health of pincer's parts for /healthz once it is
	// ready; nil means all is ok. Its context ends with the request or
	// after HealthTimeout.
	Health func(ctx context.Context) Health
	// Pprof serves Go's runtime profiles under /debug/pprof/ (the index,
	// cmdline, profile, symbol, trace and the named profiles), behind
	// Token; without a Token they are not served at all.
	Pprof bool
	// Started gives the uptime /healthz shows to requests with the token
	// (to all when there is no token).
	Started time.Time
}

// New returns the gateway's HTTP handler.
func New(o Options) http.Handler {
	g := gate{want: []byte(o.Token)}
	mux := http.NewServeMux()
	if o.Gatherer != nil {
		// Uncompressed: the exposition is a few kilobytes, and a gzip
		// writer costs most of a megabyte of garbage per scrape.
		mux.Handle("GET /metrics", promhttp.HandlerFor(o.Gatherer, promhttp.HandlerOpts{DisableCompression: true}))
	}
	if o.Pprof && o.Token != "" {
		mountPprof(mux)
	}
	if o.App != nil {
		mux.Handle("/", o.App)
	}
	var h http.Handler = mux
	if o.Token != "" {
		h = g.require(h)
	}
	outer := http.NewServeMux()
	// Health probes (Kubernetes, Docker, load balancers) carry no token:
	// they learn how pincer is and nothing else.
	outer.Handle("GET /healthz", health(o, g))
	for path, e := range o.Endpoints {
		outer.Handle(path, e)
	}
	outer.Handle("/", h)
	if o.Loopback || len(o.AllowedHosts) > 0 {
		return newHosts(o.AllowedHosts).require(outer)
	}
	return outer
}

// gate checks the gateway token.
type gate struct{ want []byte }

func (g gate) ok(got string) bool {
	return got != "" && subtle.ConstantTimeCompare([]byte(got), g.want) == 1
}

// carried reports whether r carries the token, in any of the accepted
// places.
func (g gate) carried(r *http.Request) bool {
	if bearer, found := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); found && g.ok(bearer) {
		return true
	}
	if g.ok(r.URL.Query().Get("token")) {
		return true
	}
	c, err := r.Cookie(TokenCookie)
	return err == nil && g.ok(c.Value)
}

// require admits requests carrying the token. A browser that opens a page
// with ?token= gets the token as an HttpOnly cookie and is redirected to
// the URL without it, so the token does not linger in history or logs;
// the API and the profiles, which programs fetch, are served at once.
func (g gate) require(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if bearer, found := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); found && g.ok(bearer) {
			next.ServeHTTP(w, r)
			return
		}
		if q := r.URL.Query().Get("token"); q != "" && g.ok(q) {
			if r.Method == http.MethodGet && !strings.HasPrefix(r.URL.Path, "/api/") && !strings.HasPrefix(r.URL.Path, pprofPrefix) {
				http.SetCookie(w, &http.Cookie{Name: TokenCookie, Value: q, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: overHTTPS(r)})
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
		if c, err := r.Cookie(TokenCookie); err == nil && g.ok(c.Value) {
			next.ServeHTTP(w, r)
			return
		}
		w.Header().Set("WWW-Authenticate", `Bearer realm="pincer"`)
		http.Error(w, "unauthorized: the gateway token is missing or wrong", http.StatusUnauthorized)
	})
}

// overHTTPS reports whether the browser reached pincer over HTTPS: directly
// over TLS, or through a proxy that says so in X-Forwarded-Proto (its first
// value, the one nearest the browser). The header is taken on trust; at
// worst a forged one makes the cookie Secure, which only withholds it from
// plain HTTP.
func overHTTPS(r *http.Request) bool {
	if r.TLS != nil {
		return true
	}
	first, _, _ := strings.Cut(r.Header.Get("X-Forwarded-Proto"), ",")
	return strings.EqualFold(strings.TrimSpace(first), "https")
}
