package aggregate

import (
	"slices"
	"sync"
	"time"

	"github.com/pincerbot/pincer/internal/msg"
)

// History keeps a rolling buffer of recent messages per key (the peer),
// trimmed from the oldest end to MaxMessages and MaxChars, and hands it to
// the next reply, which drains it. It keeps only what a transcript line
// needs (id, sender, time, text), so a busy gateway with many chats stays
// small.
type History struct {
	maxMessages, maxChars int
	maxAge                time.Duration

	mu      sync.Mutex
	buffers map[string]*histBuffer
}

type histBuffer struct {
	lines []histLine
	chars int
	// buf is the whole array lines is a window of: trimming the oldest
	// line slides the window's start, and once the window reaches the
	// array's end, add moves it back to buf's start rather than growing a
	// new array (a full buffer would otherwise reallocate every few
	// messages).
	buf []histLine
}

type histLine struct {
	ref    int64 // the caller's reference (a stored entry), 0 for none
	id     msg.MessageID
	sender msg.Sender
	at     int64 // unix nanoseconds
	text   string
	chars  int
	// pending is what the message's channel completes before a turn
	// reads it (merged forwards, deferred content); nil mostly, so a line
	// pays one pointer for it.
	pending *histPending
	// waiting: the channel completes the message off the chat's order
	// (see AddPending); until then no turn reads it or what came after.
	waiting bool
}

// histPending is what a channel completes in a message before a turn
// reads it.
type histPending struct {
	forwards []msg.ForwardID
	deferred []string
}

// pendingOf is what m's channel is still to complete in it, nil for
// nothing.
func pendingOf(m msg.Message) *histPending {
	if !m.Incomplete() {
		return nil
	}
	return &histPending{forwards: m.ForwardIDs, deferred: m.Deferred}
}

// NewHistory returns empty buffers. maxAge 0 keeps messages of any age.
func NewHistory(maxMessages, maxChars int, maxAge time.Duration) *History {
	return &History{maxMessages: maxMessages, maxChars: maxChars, maxAge: maxAge, buffers: map[string]*histBuffer{}}
}

// Add appends m to key's buffer under the caller's reference ref and trims
// the buffer; it returns the references of the messages trimmed away.
func (h *History) Add(key string, m msg.Message, ref int64) (dropped []int64) {
	return h.add(key, m, ref, false)
}

// AddPending is Add for a message its channel completes off the chat's
// order (Complete says when): it is the buffer's watermark until then —
// Take hands out what came before it and keeps it and what came after.
func (h *History) AddPending(key string, m msg.Message, ref int64) (dropped []int64) {
	return h.add(key, m, ref, true)
}

func (h *History) add(key string, m msg.Message, ref int64, waiting bool) (dropped []int64) {
	l := histLine{ref: ref, id: m.ID, sender: m.Sender, at: m.Time.UnixNano(), text: m.Text, chars: chars(m), pending: pendingOf(m), waiting: waiting}
	h.mu.Lock()
	defer h.mu.Unlock()
	b := h.buffers[key]
	if b == nil {
		b = &histBuffer{}
		h.buffers[key] = b
	}
	if n := len(b.lines); n == cap(b.lines) && n < cap(b.buf) {
		copy(b.buf[:n], b.lines)
		clear(b.buf[n:cap(b.buf)])
		b.lines = b.buf[:n]
	}
	grown := cap(b.lines)
	b.lines = append(b.lines, l)
	if cap(b.lines) != grown {
		b.buf = b.lines[:0]
	}
	b.chars += l.chars
	for len(b.lines) > 0 && (len(b.lines) > h.maxMessages || b.chars > h.maxChars) {
		b.chars -= b.lines[0].chars
		if b.lines[0].ref != 0 {
			dropped = append(dropped, b.lines[0].ref)
		}
		b.lines[0] = histLine{}
		b.lines = b.lines[1:]
	}
	if len(b.lines) == 0 {
		delete(h.buffers, key)
	}
	return dropped
}

// Complete replaces the message under ref in key's buffer, one added
// pending, with m as its channel completed it (or as it came, when that
// failed), and lifts the watermark it was. It reports whether the buffer
// still held it.
func (h *History) Complete(key string, ref int64, m msg.Message) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	b := h.buffers[key]
	if b == nil {
		return false
	}
	for i := len(b.lines) - 1; i >= 0; i-- {
		l := &b.lines[i]
		if l.ref != ref || !l.waiting {
			continue
		}
		n := chars(m)
		b.chars += n - l.chars
		l.text, l.chars, l.waiting, l.pending = m.Text, n, false, pendingOf(m)
		return true
	}
	return false
}

// Take drains key's buffer up to its watermark (the first message still
// pending, see AddPending) and returns what it drained without the
// messages of the batch at hand (exclude) and, with a maximum age, without
// messages sent before now minus that age. The messages carry id, sender,
// time, text, the merged forwards they hold and what their channel defers.
// refs holds the references of everything drained, returned or not. From
// the watermark on the buffer keeps its messages for a later turn, but
// for the batch's own.
func (h *History) Take(key string, exclude []msg.Message, now time.Time) (taken []msg.Message, refs []int64) {
	skip := make(map[msg.MessageID]bool, len(exclude))
	for _, m := range exclude {
		skip[m.ID] = true
	}
	h.mu.Lock()
	b := h.buffers[key]
	delete(h.buffers, key)
	if b != nil {
		if w := slices.IndexFunc(b.lines, func(l histLine) bool { return l.waiting }); w >= 0 {
			rest := &histBuffer{}
			for _, l := range b.lines[w:] {
				if !skip[l.id] {
					rest.lines = append(rest.lines, l)
					rest.chars += l.chars
				}
			}
			if len(rest.lines) > 0 {
				h.buffers[key] = rest
			}
			b.lines = b.lines[:w]
		}
	}
	h.mu.Unlock()
	if b == nil {
		return nil, nil
	}
	out := make([]msg.Message, 0, len(b.lines))
	for _, l := range b.lines {
		if l.ref != 0 {
			refs = append(refs, l.ref)
		}
		at := time.Unix(0, l.at)
		if skip[l.id] || (h.maxAge > 0 && now.Sub(at) > h.maxAge) {
			continue
		}
		m := msg.Message{ID: l.id, Sender: l.sender, Time: at, Text: l.text}
		if l.pending != nil {
			m.ForwardIDs, m.Deferred = l.pending.forwards, l.pending.deferred
		}
		out = append(out, m)
	}
	return out, refs
}

// Peek returns what key's buffer holds, oldest first, without draining
// it: id, sender, time and text of each message.
func (h *History) Peek(key string) []msg.Message {
	h.mu.Lock()
	defer h.mu.Unlock()
	b := h.buffers[key]
	if b == nil {
		return nil
	}
	out := make([]msg.Message, len(b.lines))
	for i, l := range b.lines {
		out[i] = msg.Message{ID: l.id, Sender: l.sender, Time: time.Unix(0, l.at), Text: l.text}
	}
	return out
}

// Len reports how many messages key's buffer holds.
func (h *History) Len(key string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	if b := h.buffers[key]; b != nil {
		return len(b.lines)
	}
	return 0
}
