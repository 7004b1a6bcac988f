package httpapi

import (
	"context"
	"encoding/json"
	"net/http"
	"time"
)

// Status is how pincer, or one of its parts, is doing.
type Status string

// The states /healthz reports.
const (
	// StatusOK: working.
	StatusOK Status = "ok"
	// StatusDegraded: working, but not fully (a channel account that is
	// reconnecting, a store that is slow); /healthz still answers 200.
	StatusDegraded Status = "degraded"
	// StatusDown: not working (the store cannot write, an account that
	// gave up); /healthz answers 503.
	StatusDown Status = "down"
)

// HealthTimeout bounds the context Options.Health is called with.
const HealthTimeout = 5 * time.Second

// Component is the health of one part of pincer.
type Component struct {
	// Name identifies the part, such as "store" or "onebot/default".
	Name   string `json:"name"`
	Status Status `json:"status"`
	// Reason says why the part is not ok, such as "reconnecting: dial tcp
	// 127.0.0.1:3001: connection refused"; it may be empty when ok.
	Reason string `json:"reason,omitempty"`
}

// Health is what Options.Health reports: the health of each part. The
// overall status is the worst of theirs (Overall).
type Health struct {
	Components []Component
}

// Overall is the worst status of h's components: StatusOK when there are
// none. A status other than ok, degraded or down counts as down.
func (h Health) Overall() Status {
	worst := StatusOK
	for _, c := range h.Components {
		if s := c.Status.normalized(); s.rank() > worst.rank() {
			worst = s
		}
	}
	return worst
}

// normalized is s, or StatusDown when s is not a known status.
func (s Status) normalized() Status {
	switch s {
	case StatusOK, StatusDegraded, StatusDown:
		return s
	}
	return StatusDown
}

func (s Status) rank() int {
	switch s {
	case StatusOK:
		return 0
	case StatusDegraded:
		return 1
	}
	return 2
}

// statusUnavailable is /healthz's status while pincer is not ready.
const statusUnavailable = "unavailable"

// probeBody is what /healthz tells requests without the token.
type probeBody struct {
	Status string `json:"status"`
}

// fullBody is what /healthz tells requests with the token (all requests
// when no token is configured).
type fullBody struct {
	Status        string      `json:"status"`
	Components    []Component `json:"components"`
	UptimeSeconds int         `json:"uptimeSeconds"`
}

// health answers /healthz. Anyone gets {"status": ...}: "ok" and
// "degraded" with 200, "down" with 503, and "unavailable" with 503 while
// not ready. Requests that carry the token (all when there is none) also
// get each component with its reason, and the uptime.
func health(o Options, g gate) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		full := o.Token == "" || g.carried(r)
		status, code := statusUnavailable, http.StatusServiceUnavailable
		components := []Component{}
		if o.Ready == nil || o.Ready() {
			var h Health
			if o.Health != nil {
				ctx, cancel := context.WithTimeout(r.Context(), HealthTimeout)
				h = o.Health(ctx)
				cancel()
			}
			overall := h.Overall()
			status, code = string(overall), http.StatusOK
			if overall == StatusDown {
				code = http.StatusServiceUnavailable
			}
			for _, c := range h.Components {
				c.Status = c.Status.normalized()
				components = append(components, c)
			}
		}
		var body any = probeBody{Status: status}
		if full {
			body = fullBody{Status: status, Components: components, UptimeSeconds: int(time.Since(o.Started).Seconds())}
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		w.WriteHeader(code)
		_ = json.NewEncoder(w).Encode(body)
	})
}
