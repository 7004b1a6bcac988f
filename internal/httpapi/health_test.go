package httpapi

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestOverallIsTheWorstComponent(t *testing.T) {
	for _, tc := range []struct {
		statuses []Status
		want     Status
	}{
		{nil, StatusOK},
		{[]Status{StatusOK, StatusOK}, StatusOK},
		{[]Status{StatusOK, StatusDegraded, StatusOK}, StatusDegraded},
		{[]Status{StatusDegraded, StatusDown, StatusOK}, StatusDown},
		{[]Status{StatusDown, StatusDegraded}, StatusDown},
		{[]Status{StatusOK, "broken"}, StatusDown},
		{[]Status{""}, StatusDown},
	} {
		var h Health
		for i, s := range tc.statuses {
			h.Components = append(h.Components, Component{Name: string(rune('a' + i)), Status: s})
		}
		if got := h.Overall(); got != tc.want {
			t.Errorf("Overall(%q) = %q, want %q", tc.statuses, got, tc.want)
		}
	}
}

// healthServer serves /healthz with the gateway token "s3cret" (none when
// token is empty) and the health that report returns.
func healthServer(t *testing.T, token string, report func(context.Context) Health, ready func() bool) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(New(Options{Token: token, App: http.NotFoundHandler(), Health: report, Ready: ready, Started: time.Now().Add(-time.Minute)}))
	t.Cleanup(srv.Close)
	return srv
}

// TestHealthzStates: ok and degraded answer 200, down 503; a probe without
// the token learns the status and nothing else, one with the token each
// component with its reason, and the uptime.
func TestHealthzStates(t *testing.T) {
	store := Component{Name: "store", Status: StatusOK}
	tests := []struct {
		name   string
		parts  []Component
		status Status
		code   int
	}{
		{"all ok", []Component{store, {Name: "onebot/default", Status: StatusOK}}, StatusOK, http.StatusOK},
		{"an account reconnecting", []Component{store, {Name: "onebot/default", Status: StatusDegraded, Reason: "reconnecting: connection refused"}}, StatusDegraded, http.StatusOK},
		{"the store down", []Component{{Name: "store", Status: StatusDown, Reason: "disk I/O error"}, {Name: "onebot/default", Status: StatusDegraded, Reason: "reconnecting"}}, StatusDown, http.StatusServiceUnavailable},
		{"an unknown state", []Component{store, {Name: "onebot/x", Status: "weird", Reason: "?"}}, StatusDown, http.StatusServiceUnavailable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := healthServer(t, "s3cret", func(context.Context) Health { return Health{Components: tt.parts} }, nil)
			for name, h := range map[string]http.Header{"no token": nil, "a wrong token": {"Authorization": {"Bearer wrong"}}} {
				res, body := get(t, srv.Client(), srv.URL+"/healthz", h)
				if res.StatusCode != tt.code || body != `{"status":"`+string(tt.status)+`"}`+"\n" {
					t.Errorf("with %s: %d %q", name, res.StatusCode, body)
				}
			}
			res, body := get(t, srv.Client(), srv.URL+"/healthz", http.Header{"Authorization": {"Bearer s3cret"}})
			var full struct {
				Status        Status
				Components    []Component
				UptimeSeconds int
			}
			if err := json.Unmarshal([]byte(body), &full); err != nil {
				t.Fatalf("%v: %s", err, body)
			}
			if res.StatusCode != tt.code || full.Status != tt.status || full.UptimeSeconds < 60 || len(full.Components) != len(tt.parts) {
				t.Errorf("with the token: %d %s", res.StatusCode, body)
			}
			for i, c := range full.Components {
				want := tt.parts[i]
				want.Status = want.Status.normalized()
				if c != want {
					t.Errorf("component %d: %+v, want %+v", i, c, want)
				}
			}
		})
	}
}

// TestHealthzWithoutAGatewayToken: with no token configured every request
// gets the whole report.
func TestHealthzWithoutAGatewayToken(t *testing.T) {
	srv := healthServer(t, "", func(context.Context) Health {
		return Health{Components: []Component{{Name: "onebot/default", Status: StatusDegraded, Reason: "reconnecting"}}}
	}, nil)
	res, body := get(t, srv.Client(), srv.URL+"/healthz", nil)
	if res.StatusCode != http.StatusOK || !strings.HasPrefix(body, `{"status":"degraded","components":[{"name":"onebot/default","status":"degraded","reason":"reconnecting"}],"uptimeSeconds":`) {
		t.Errorf("%d %s", res.StatusCode, body)
	}
	if res.Header.Get("Cache-Control") != "no-store" || res.Header.Get("Content-Type") != "application/json" {
		t.Errorf("headers %v", res.Header)
	}
}

// TestHealthzWhileNotReady: not ready is 503 "unavailable", and the parts
// are not asked.
func TestHealthzWhileNotReady(t *testing.T) {
	var asked atomic.Int32
	var ready atomic.Bool
	srv := healthServer(t, "s3cret", func(context.Context) Health {
		asked.Add(1)
		return Health{Components: []Component{{Name: "store", Status: StatusOK}}}
	}, ready.Load)
	if res, body := get(t, srv.Client(), srv.URL+"/healthz", nil); res.StatusCode != http.StatusServiceUnavailable || body != `{"status":"unavailable"}`+"\n" {
		t.Errorf("not ready: %d %q", res.StatusCode, body)
	}
	if res, body := get(t, srv.Client(), srv.URL+"/healthz", http.Header{"Authorization": {"Bearer s3cret"}}); res.StatusCode != http.StatusServiceUnavailable || !strings.HasPrefix(body, `{"status":"unavailable","components":[],"uptimeSeconds":`) {
		t.Errorf("not ready, with the token: %d %q", res.StatusCode, body)
	}
	if n := asked.Load(); n != 0 {
		t.Errorf("Health called %d times before ready", n)
	}
	ready.Store(true)
	if res, body := get(t, srv.Client(), srv.URL+"/healthz", nil); res.StatusCode != http.StatusOK || body != `{"status":"ok"}`+"\n" || asked.Load() != 1 {
		t.Errorf("ready: %d %q, asked %d", res.StatusCode, body, asked.Load())
	}
}

// TestHealthIsAskedWithADeadline: a slow part cannot hold a probe
// forever.
func TestHealthIsAskedWithADeadline(t *testing.T) {
	var left atomic.Int64
	srv := healthServer(t, "", func(ctx context.Context) Health {
		if d, ok := ctx.Deadline(); ok {
			left.Store(int64(time.Until(d)))
		}
		return Health{}
	}, nil)
	get(t, srv.Client(), srv.URL+"/healthz", nil)
	if d := time.Duration(left.Load()); d <= 0 || d > HealthTimeout {
		t.Errorf("time left %v, want at most %v", d, HealthTimeout)
	}
}
