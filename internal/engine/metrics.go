package engine

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the engine's Prometheus collectors.
type Metrics struct {
	inbound     *prometheus.CounterVec
	dropped     *prometheus.CounterVec
	turns       *prometheus.CounterVec
	turnSeconds prometheus.Histogram
	firstText   prometheus.Histogram
}

// NewMetrics creates the engine's collectors and registers them with reg
// when it is not nil.
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{
		inbound: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "pincer_inbound_messages_total", Help: "Inbound messages by channel and outcome (accepted, duplicate).",
		}, []string{"channel", "outcome"}),
		dropped: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "pincer_queue_dropped_total", Help: "Messages a full session queue gave up, by drop policy (old, new, summarize).",
		}, []string{"policy"}),
		turns: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "pincer_turns_total", Help: "Agent turns by outcome (replied, failed, empty, undelivered, limited: held by a limit before any model call).",
		}, []string{"outcome"}),
		turnSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "pincer_turn_duration_seconds", Help: "Wall time of agent turns, delivery included.",
			Buckets: prometheus.ExponentialBuckets(0.05, 2, 12),
		}),
		firstText: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "pincer_turn_first_text_seconds", Help: "Time from dispatch to the first streamed reply text.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 16),
		}),
	}
	if reg != nil {
		for _, c := range []prometheus.Collector{m.inbound, m.dropped, m.turns, m.turnSeconds, m.firstText} {
			if err := reg.Register(c); err != nil {
				return nil, fmt.Errorf("engine metrics: %w", err)
			}
		}
	}
	return m, nil
}
