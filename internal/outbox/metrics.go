package outbox

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the outbox's Prometheus collectors.
type Metrics struct {
	pending    prometheus.Gauge
	sent       prometheus.Counter
	retries    prometheus.Counter
	expired    prometheus.Counter
	failed     prometheus.Counter
	duplicates prometheus.Counter
}

// NewMetrics creates the collectors and registers them with reg when it is
// not nil.
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{
		pending: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "pincer_outbox_pending", Help: "Replies stored and not yet delivered or given up.",
		}),
		sent: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "pincer_outbox_sent_total", Help: "Replies the platform confirmed.",
		}),
		retries: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "pincer_outbox_retries_total", Help: "Failed delivery attempts that were retried.",
		}),
		expired: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "pincer_outbox_expired_total", Help: "Replies given up because they were not delivered in time.",
		}),
		failed: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "pincer_outbox_failed_total", Help: "Replies the platform refused for good.",
		}),
		duplicates: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "pincer_outbox_duplicates_total", Help: "Replies not sent again because their id was already delivered or on its way.",
		}),
	}
	if reg != nil {
		for _, c := range []prometheus.Collector{m.pending, m.sent, m.retries, m.expired, m.failed, m.duplicates} {
			if err := reg.Register(c); err != nil {
				return nil, fmt.Errorf("outbox metrics: %w", err)
			}
		}
	}
	return m, nil
}
