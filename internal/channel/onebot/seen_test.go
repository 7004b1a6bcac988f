package onebot

import (
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"
	"testing/synctest"
	"time"
)

func TestSeenClaimsEachKeyOnceForItsTTL(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newSeen(10*time.Minute, 1000)
		if !s.claim("1/group:1/a") || s.claim("1/group:1/a") {
			t.Fatal("a key is new once")
		}
		if !s.claim("1/group:2/a") {
			t.Fatal("the same id in another chat is another key")
		}
		time.Sleep(9 * time.Minute)
		if s.claim("1/group:1/a") {
			t.Fatal("forgotten before its ttl")
		}
		time.Sleep(time.Minute)
		if !s.claim("1/group:1/a") {
			t.Fatal("remembered after its ttl")
		}
	})
}

// TestSeenIsBoundedAndKeepsOrderWhileGrowing: past max keys the oldest is
// forgotten first, also after the ring grew around its end.
func TestSeenIsBoundedAndKeepsOrderWhileGrowing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const max = 100
		s := newSeen(time.Hour, max)
		key := func(i int) string { return "k" + strconv.Itoa(i) }
		for i := range 40 {
			s.claim(key(i))
		}
		// Let the first 30 expire, so the ring's head moves before it grows.
		time.Sleep(time.Hour)
		for i := 40; i < 250; i++ {
			if !s.claim(key(i)) {
				t.Fatalf("key %d is new", i)
			}
			if i == 40 && s.len() != 1 {
				t.Fatalf("expired keys kept: %d", s.len())
			}
		}
		if s.len() > max {
			t.Fatalf("%d keys kept, at most %d", s.len(), max)
		}
		for i := 150; i < 250; i++ {
			if s.claim(key(i)) {
				t.Errorf("key %d, among the last %d, was forgotten", i, max)
			}
		}
		for i := 40; i < 150; i++ {
			if !s.claim(key(i)) {
				t.Errorf("key %d, older than the last %d, was kept", i, max)
				break
			}
		}
	})
}

// TestSeenAgreesWithAPlainModel drives the set with random claims, some
// repeated, and random pauses, against a model that keeps every claim in
// a list and looks through it: both must answer every claim alike, and
// the set's index must find each claim it holds, including after keys
// were forgotten from the middle of a probe sequence.
func TestSeenAgreesWithAPlainModel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const max, ttl = 300, time.Minute
		s := newSeen(ttl, max)
		type kept struct {
			key string
			at  time.Time
		}
		var model []kept
		rng := rand.New(rand.NewPCG(1, 2))
		for step := range 20000 {
			key := "k" + strconv.Itoa(rng.IntN(1500))
			if rng.IntN(50) == 0 {
				time.Sleep(time.Duration(rng.IntN(20)) * time.Second)
			}
			now := time.Now()
			for len(model) > 0 && now.Sub(model[0].at) >= ttl {
				model = model[1:]
			}
			want := !slices.ContainsFunc(model, func(k kept) bool { return k.key == key })
			if want {
				if len(model) >= max {
					model = model[1:]
				}
				model = append(model, kept{key, now})
			}
			if got := s.claim(key); got != want {
				t.Fatalf("step %d: claim(%q) = %v, the model says %v", step, key, got, want)
			}
			if s.len() != len(model) {
				t.Fatalf("step %d: %d keys kept, the model keeps %d", step, s.len(), len(model))
			}
		}
		for _, k := range model {
			if !s.has(k.key) {
				t.Fatalf("%q kept by the model is not found", k.key)
			}
		}
	})
}
