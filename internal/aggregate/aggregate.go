// Package aggregate holds the three buffers of the receive pipeline, each
// keyed and timed on its own: realtime windows that merge a sender's burst
// into one batch, digest windows that collect a chat for a timed digest,
// and history buffers of recent chat carried into the next reply. Time is
// package time throughout, so tests run in synctest bubbles.
package aggregate

import (
	"unicode/utf8"

	"github.com/pincerbot/pincer/internal/msg"
)

// Entry is one buffered message with whatever the caller attaches to it
// (the replier of its chat, for instance).
type Entry[T any] struct {
	Message msg.Message
	Tag     T
}

// Flushed is a window handed back for dispatch.
type Flushed[T any] struct {
	Key     string
	Entries []Entry[T]
	// Trigger is why the window opened (realtime only).
	Trigger msg.TriggerReason
	Reason  msg.FlushReason
}

// Messages returns the flushed messages, oldest first.
func (f Flushed[T]) Messages() []msg.Message {
	out := make([]msg.Message, len(f.Entries))
	for i, e := range f.Entries {
		out[i] = e.Message
	}
	return out
}

// chars is a message's size in characters, as windows count it.
func chars(m msg.Message) int { return utf8.RuneCountInString(m.Text) }
