package config

import "time"

// Outbox configures the delivery of replies: each is stored before it is
// sent and retried, across disconnects and restarts, until the platform
// confirmed it or it is too old to make sense.
type Outbox struct {
	// MaxAgeMs is how long an undelivered reply keeps being retried; after
	// that it is given up, logged and counted. At least 1000.
	MaxAgeMs int `json:"maxAgeMs"`
}

// defaultOutboxMaxAgeMs is the default of Outbox.MaxAgeMs: five minutes.
const defaultOutboxMaxAgeMs = 300000

// MaxAge returns MaxAgeMs as a duration, the default when unset.
func (o Outbox) MaxAge() time.Duration {
	if o.MaxAgeMs == 0 {
		return ms(defaultOutboxMaxAgeMs)
	}
	return ms(o.MaxAgeMs)
}

// Validate checks the outbox section.
func (o Outbox) Validate() error {
	if o.MaxAgeMs < 1000 {
		return problem("maxAgeMs", "must be at least 1000 (one second), got %d", o.MaxAgeMs)
	}
	return nil
}
