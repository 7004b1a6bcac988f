package httpapi

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func pprofServer(t *testing.T, token string) *httptest.Server {
	t.Helper()
	app := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "app:"+r.URL.Path) })
	srv := httptest.NewServer(New(Options{Token: token, Pprof: true, App: app}))
	t.Cleanup(srv.Close)
	return srv
}

// TestPprofNeverWithoutToken: a handler asked for the profiles without a
// token to guard them does not serve them (the configuration refuses
// that; this is the second lock).
func TestPprofNeverWithoutToken(t *testing.T) {
	srv := pprofServer(t, "")
	for _, p := range []string{"/debug/pprof/", "/debug/pprof/heap", "/debug/pprof/cmdline"} {
		if _, body := get(t, srv.Client(), srv.URL+p, nil); body != "app:"+p {
			t.Errorf("%s without a token is not the app's: %.100q", p, body)
		}
	}
}

func TestPprofTakesTheTokenEveryWay(t *testing.T) {
	srv := pprofServer(t, "s3cret")
	noRedirect := *srv.Client()
	noRedirect.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	for name, h := range map[string]http.Header{
		"bearer": {"Authorization": {"Bearer s3cret"}},
		"cookie": {"Cookie": {TokenCookie + "=s3cret"}},
	} {
		if res, body := get(t, &noRedirect, srv.URL+"/debug/pprof/", h); res.StatusCode != http.StatusOK || !strings.Contains(body, "Types of profiles available") {
			t.Errorf("%s: %d %.100q", name, res.StatusCode, body)
		}
	}
	// Programs fetch profiles and follow no cookie: ?token= is served at
	// once, not redirected.
	if res, body := get(t, &noRedirect, srv.URL+"/debug/pprof/heap?debug=1&token=s3cret", nil); res.StatusCode != http.StatusOK || !strings.HasPrefix(body, "heap profile:") {
		t.Errorf("?token=: %d %.100q", res.StatusCode, body)
	}
	if res, _ := get(t, &noRedirect, srv.URL+"/debug/pprof/heap?debug=1", nil); res.StatusCode != http.StatusUnauthorized {
		t.Errorf("without the token: %d", res.StatusCode)
	}
}
