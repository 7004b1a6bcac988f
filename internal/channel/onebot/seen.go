package onebot

import (
	"hash/maphash"
	"math/bits"
	"sync"
	"time"
)

// seen remembers event keys for a while, so the same message arriving
// over two transports (or a go-cqhttp POST retry) is handled once. It is
// bounded by size as well as age, and keeps a 64-bit hash of each key
// rather than the key (two keys of one process share a hash with odds
// far below those of the machine failing).
//
// The hashes live in a ring, in claim order, and are found through an
// open-addressing index of their places in the ring (linear probing, at
// most half full): about 30 bytes a key where a map of the hashes beside
// the ring took 63, as its tables grew under the steady churn of
// remembering and forgetting and never shrank. A burst of tens of
// thousands of messages leaves 1.5 MiB behind rather than 3.
type seen struct {
	mu   sync.Mutex
	ttl  time.Duration
	max  int
	seed maphash.Seed
	// ring holds the claims in claim order from head, n of them.
	ring    []claim
	head, n int
	// index holds 1 + the place in ring of each claim, 0 where empty; a
	// claim's first probe is its hash masked to the index's length.
	index []uint32
}

type claim struct {
	hash uint64
	at   int64 // unix nanoseconds
}

func newSeen(ttl time.Duration, max int) *seen {
	return &seen{ttl: ttl, max: max, seed: maphash.MakeSeed()}
}

// claim reports whether key is new, recording it.
func (s *seen) claim(key string) bool {
	h := maphash.String(s.seed, key)
	now := time.Now().UnixNano()
	s.mu.Lock()
	defer s.mu.Unlock()
	for s.n > 0 && now-s.ring[s.head].at >= int64(s.ttl) {
		s.forgetOldest()
	}
	if _, dup := s.find(h); dup {
		return false
	}
	if s.n >= s.max {
		s.forgetOldest()
	}
	s.push(claim{hash: h, at: now})
	return true
}

// has reports whether key was claimed and is still remembered.
func (s *seen) has(key string) bool {
	h := maphash.String(s.seed, key)
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.find(h)
	return ok
}

// len is how many keys are remembered.
func (s *seen) len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.n
}

// find returns the index slot holding hash h, or the empty slot that
// ends its probe and false.
func (s *seen) find(h uint64) (int, bool) {
	if len(s.index) == 0 {
		return 0, false
	}
	mask := uint64(len(s.index) - 1)
	for i := h & mask; ; i = (i + 1) & mask {
		p := s.index[i]
		if p == 0 {
			return int(i), false
		}
		if s.ring[p-1].hash == h {
			return int(i), true
		}
	}
}

// forgetOldest drops the claim at the ring's head from the index (moving
// back the entries after it that its slot kept from their first probe)
// and from the ring.
func (s *seen) forgetOldest() {
	i, ok := s.find(s.ring[s.head].hash)
	if ok {
		mask := len(s.index) - 1
		for j := (i + 1) & mask; s.index[j] != 0; j = (j + 1) & mask {
			home := int(s.ring[s.index[j]-1].hash) & mask
			// The entry at j stays when its first probe lies after i, up
			// to j, going round the index's end.
			if (j-home)&mask < (j-i)&mask {
				continue
			}
			s.index[i] = s.index[j]
			i = j
		}
		s.index[i] = 0
	}
	s.head = (s.head + 1) % len(s.ring)
	s.n--
}

// push appends c to the ring, growing the ring (in claim order) when full
// and the index when it would be more than half full.
func (s *seen) push(c claim) {
	if s.n == len(s.ring) {
		grown := make([]claim, max(16, min(2*s.n, s.max)))
		copy(grown, s.ring[s.head:])
		copy(grown[len(s.ring)-s.head:], s.ring[:s.head])
		s.ring, s.head = grown, 0
		// Every place moved: the index is built anew, for the ring's
		// capacity, so it is not grown again until the ring is.
		s.index = make([]uint32, 1<<bits.Len(uint(2*len(s.ring)-1)))
		for k := range s.n {
			s.insert(k)
		}
	}
	p := (s.head + s.n) % len(s.ring)
	s.ring[p] = c
	s.n++
	s.insert(p)
}

// insert indexes the claim at place p of the ring.
func (s *seen) insert(p int) {
	i, _ := s.find(s.ring[p].hash)
	s.index[i] = uint32(p + 1)
}
