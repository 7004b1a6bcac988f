package aggregate

import (
	"sync"
	"time"

	"github.com/pincerbot/pincer/internal/msg"
)

// History keeps a rolling buffer of recent messages per key (the peer),
// trimmed from the oldest end to MaxMessages and MaxChars, and hands it to
// the next reply, which drains it.
type History struct {
	maxMessages, maxChars int
	maxAge                time.Duration

	mu      sync.Mutex
	buffers map[string][]msg.Message
}

// NewHistory returns empty buffers. maxAge 0 keeps messages of any age.
func NewHistory(maxMessages, maxChars int, maxAge time.Duration) *History {
	return &History{maxMessages: maxMessages, maxChars: maxChars, maxAge: maxAge, buffers: map[string][]msg.Message{}}
}

// Add appends m to key's buffer and trims it.
func (h *History) Add(key string, m msg.Message) {
	h.mu.Lock()
	defer h.mu.Unlock()
	buf := append(h.buffers[key], m)
	if len(buf) > h.maxMessages {
		buf = buf[len(buf)-h.maxMessages:]
	}
	total := 0
	for _, x := range buf {
		total += chars(x)
	}
	for total > h.maxChars && len(buf) > 0 {
		total -= chars(buf[0])
		buf = buf[1:]
	}
	h.buffers[key] = buf
}

// Take drains key's buffer and returns it without the messages of the
// batch at hand (exclude) and, with a maximum age, without messages sent
// before now minus that age.
func (h *History) Take(key string, exclude []msg.Message, now time.Time) []msg.Message {
	h.mu.Lock()
	buf := h.buffers[key]
	delete(h.buffers, key)
	h.mu.Unlock()
	skip := make(map[msg.MessageID]bool, len(exclude))
	for _, m := range exclude {
		skip[m.ID] = true
	}
	out := make([]msg.Message, 0, len(buf))
	for _, m := range buf {
		if skip[m.ID] {
			continue
		}
		if h.maxAge > 0 && now.Sub(m.Time) > h.maxAge {
			continue
		}
		out = append(out, m)
	}
	return out
}

// Len reports how many messages key's buffer holds.
func (h *History) Len(key string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.buffers[key])
}
