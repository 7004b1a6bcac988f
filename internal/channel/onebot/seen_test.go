package onebot

import (
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
			if i == 40 && len(s.set) != 1 {
				t.Fatalf("expired keys kept: %d", len(s.set))
			}
		}
		if len(s.set) > max {
			t.Fatalf("%d keys kept, at most %d", len(s.set), max)
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
