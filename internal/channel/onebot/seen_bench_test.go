package onebot

import (
	"runtime"
	"strconv"
	"testing"
	"time"
)

// BenchmarkSeen claims a new key each time, past the set's bound, as a
// long burst does. It reports the heap the set holds once full and
// churned through several times over (what a burst leaves behind), in
// bytes a remembered key.
func BenchmarkSeen(b *testing.B) {
	const max = seenMax
	keys := make([]string, 4*max)
	for i := range keys {
		keys[i] = "1/group:" + strconv.Itoa(700000000+i%100) + "/" + strconv.Itoa(1000000+i)
	}
	heap := func() uint64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	before := heap()
	s := newSeen(time.Hour, max)
	for _, k := range keys {
		s.claim(k)
	}
	held := heap() - before
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		s.claim(keys[i%len(keys)] + "x")
	}
	b.StopTimer()
	runtime.KeepAlive(s)
	b.ReportMetric(float64(held)/max, "heap-B/key")
}
