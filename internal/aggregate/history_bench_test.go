package aggregate

import (
	"strconv"
	"testing"
	"time"

	"github.com/pincerbot/pincer/internal/msg"
)

// BenchmarkHistoryFull adds messages to chats whose history buffers are
// full, as in a busy group: each add trims the oldest line. It reports
// the allocations per message, which a buffer that grew a new array every
// few messages paid for.
func BenchmarkHistoryFull(b *testing.B) {
	h := NewHistory(20, 4000, 0)
	const chats = 100
	keys := make([]string, chats)
	for i := range keys {
		keys[i] = "group:" + strconv.Itoa(700_000+i)
	}
	m := msg.Message{ID: "1", Sender: msg.Sender{ID: "10001", Name: "群友"}, Text: "今晚几点集合？", Time: time.Unix(1_780_000_000, 0)}
	for i := range 40 * chats {
		h.Add(keys[i%chats], m, int64(i+1))
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		i++
		h.Add(keys[i%chats], m, int64(i))
	}
}
