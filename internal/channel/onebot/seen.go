package onebot

import (
	"sync"
	"time"
)

// seen remembers event keys for a while, so the same message arriving
// over two transports (or a go-cqhttp POST retry) is handled once. It is
// bounded by size as well as age.
type seen struct {
	mu    sync.Mutex
	ttl   time.Duration
	max   int
	at    map[string]time.Time
	order []string
}

func newSeen(ttl time.Duration, max int) *seen {
	return &seen{ttl: ttl, max: max, at: map[string]time.Time{}}
}

// claim reports whether key is new, recording it.
func (s *seen) claim(key string) bool {
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	for len(s.order) > 0 {
		oldest := s.order[0]
		if now.Sub(s.at[oldest]) < s.ttl && len(s.order) < s.max {
			break
		}
		delete(s.at, oldest)
		s.order = s.order[1:]
	}
	if _, dup := s.at[key]; dup {
		return false
	}
	s.at[key] = now
	s.order = append(s.order, key)
	return true
}
