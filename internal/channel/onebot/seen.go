package onebot

import (
	"hash/maphash"
	"sync"
	"time"
)

// seen remembers event keys for a while, so the same message arriving
// over two transports (or a go-cqhttp POST retry) is handled once. It is
// bounded by size as well as age, and keeps a 64-bit hash of each key
// rather than the key (two keys of one process share a hash with odds
// far below those of the machine failing), so a burst of tens of
// thousands of messages costs a few bytes each.
type seen struct {
	mu   sync.Mutex
	ttl  time.Duration
	max  int
	seed maphash.Seed
	// at holds the time each hash was claimed; ring holds the hashes in
	// claim order, from head, len(at) of them.
	at   map[uint64]int64
	ring []uint64
	head int
}

func newSeen(ttl time.Duration, max int) *seen {
	return &seen{ttl: ttl, max: max, seed: maphash.MakeSeed(), at: map[uint64]int64{}}
}

// claim reports whether key is new, recording it.
func (s *seen) claim(key string) bool {
	h := maphash.String(s.seed, key)
	now := time.Now().UnixNano()
	s.mu.Lock()
	defer s.mu.Unlock()
	for len(s.at) > 0 && now-s.at[s.ring[s.head]] >= int64(s.ttl) {
		s.forgetOldest()
	}
	if _, dup := s.at[h]; dup {
		return false
	}
	if len(s.at) >= s.max {
		s.forgetOldest()
	}
	s.push(h)
	s.at[h] = now
	return true
}

func (s *seen) forgetOldest() {
	delete(s.at, s.ring[s.head])
	s.head = (s.head + 1) % len(s.ring)
}

// push appends h to the ring, growing it (in claim order) when full.
func (s *seen) push(h uint64) {
	n := len(s.at)
	if n == len(s.ring) {
		grown := make([]uint64, max(16, min(2*n, s.max)))
		copy(grown, s.ring[s.head:])
		copy(grown[len(s.ring)-s.head:], s.ring[:s.head])
		s.ring, s.head = grown, 0
	}
	s.ring[(s.head+n)%len(s.ring)] = h
}
