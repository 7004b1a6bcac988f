package agent

import (
	"sync"
	"time"

	"github.com/pincerbot/pincer/internal/llm"
)

// Cooldown bounds: the first failure rests a model for a minute, each
// further one five times longer, up to an hour; a longer Retry-After wins.
const (
	cooldownBase = time.Minute
	cooldownMax  = time.Hour
)

// cooldowns remembers models that failed recently, so later turns go
// straight to a fallback instead of waiting on a model that is down.
type cooldowns struct {
	mu sync.Mutex
	m  map[llm.Ref]*cooldown
}

type cooldown struct {
	failures int
	until    time.Time
}

// failed records a failure of ref and returns how long it rests.
func (c *cooldowns) failed(ref llm.Ref, retryAfter time.Duration, now time.Time) time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	cd := c.m[ref]
	if cd == nil {
		cd = &cooldown{}
		c.m[ref] = cd
	}
	cd.failures++
	wait := cooldownBase
	for i := 1; i < cd.failures && wait < cooldownMax; i++ {
		wait *= 5
	}
	wait = max(min(wait, cooldownMax), retryAfter)
	cd.until = now.Add(wait)
	return wait
}

// succeeded forgets ref's failures.
func (c *cooldowns) succeeded(ref llm.Ref) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.m, ref)
}

// order returns the chain with resting models moved to the end, in chain
// order, so they are still tried when nothing else is left.
func (c *cooldowns) order(chain []llm.Ref, now time.Time) []llm.Ref {
	c.mu.Lock()
	defer c.mu.Unlock()
	ready := make([]llm.Ref, 0, len(chain))
	var resting []llm.Ref
	for _, ref := range chain {
		if cd := c.m[ref]; cd != nil && now.Before(cd.until) {
			resting = append(resting, ref)
			continue
		}
		ready = append(ready, ref)
	}
	return append(ready, resting...)
}
