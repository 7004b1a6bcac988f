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
// far below those of the machine failing): a burst of tens of thousands
// of messages costs a few dozen bytes each.
type seen struct {
	mu   sync.Mutex
	ttl  time.Duration
	max  int
	seed maphash.Seed
	// set holds the hashes; ring holds them with their claim times, in
	// claim order from head, len(set) of them.
	set  map[uint64]struct{}
	ring []claim
	head int
}

type claim struct {
	hash uint64
	at   int64 // unix nanoseconds
}

func newSeen(ttl time.Duration, max int) *seen {
	return &seen{ttl: ttl, max: max, seed: maphash.MakeSeed(), set: map[uint64]struct{}{}}
}

// claim reports whether key is new, recording it.
func (s *seen) claim(key string) bool {
	h := maphash.String(s.seed, key)
	now := time.Now().UnixNano()
	s.mu.Lock()
	defer s.mu.Unlock()
	for len(s.set) > 0 && now-s.ring[s.head].at >= int64(s.ttl) {
		s.forgetOldest()
	}
	if _, dup := s.set[h]; dup {
		return false
	}
	if len(s.set) >= s.max {
		s.forgetOldest()
	}
	s.push(claim{hash: h, at: now})
	s.set[h] = struct{}{}
	return true
}

// has reports whether key was claimed and is still remembered.
func (s *seen) has(key string) bool {
	h := maphash.String(s.seed, key)
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.set[h]
	return ok
}

func (s *seen) forgetOldest() {
	delete(s.set, s.ring[s.head].hash)
	s.head = (s.head + 1) % len(s.ring)
}

// push appends c to the ring, growing it (in claim order) when full.
func (s *seen) push(c claim) {
	n := len(s.set)
	if n == len(s.ring) {
		grown := make([]claim, max(16, min(2*n, s.max)))
		copy(grown, s.ring[s.head:])
		copy(grown[len(s.ring)-s.head:], s.ring[:s.head])
		s.ring, s.head = grown, 0
	}
	s.ring[(s.head+n)%len(s.ring)] = c
}
