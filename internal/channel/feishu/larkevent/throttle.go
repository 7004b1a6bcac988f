package larkevent

import (
	"sync"
	"time"
)

// throttle lets one log record of each reason through per interval and
// counts the ones it holds back, so a peer hammering the endpoint with
// bad signatures costs a line a minute. The reasons are the package's own
// constants, so the map stays small.
type throttle struct {
	every time.Duration
	now   func() time.Time

	mu      sync.Mutex
	reasons map[string]*throttled
}

type throttled struct {
	next       time.Time // when the next record may pass
	suppressed int       // records held back since the last one passed
}

func newThrottle(every time.Duration, now func() time.Time) *throttle {
	return &throttle{every: every, now: now, reasons: map[string]*throttled{}}
}

// admit reports whether a record of reason may be logged now and, when it
// may, how many records of that reason were held back before it.
func (t *throttle) admit(reason string) (ok bool, suppressed int) {
	now := t.now()
	t.mu.Lock()
	defer t.mu.Unlock()
	r := t.reasons[reason]
	if r == nil {
		r = &throttled{}
		t.reasons[reason] = r
	}
	if now.Before(r.next) {
		r.suppressed++
		return false, 0
	}
	suppressed, r.suppressed = r.suppressed, 0
	r.next = now.Add(t.every)
	return true, suppressed
}
