package engine

import (
	"cmp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/pincerbot/pincer/internal/agent"
	"github.com/pincerbot/pincer/internal/reply"
	"github.com/pincerbot/pincer/internal/store"
)

// resumption is what a resumed turn's reply had stored before the
// restart.
type resumption struct {
	// said are the stored payloads' texts, in order, without the response
	// prefix.
	said []string
	// last is the highest payload number stored; the resumed run numbers
	// its payloads after it.
	last int
}

// readStored reads a turn's stored payloads: nil when there are none;
// answered when they hold a command's answer or the notice of a failed
// turn, which conclude it.
func readStored(entries []store.OutboxEntry, prefix string, vars reply.PrefixVars) (res *resumption, answered bool) {
	if len(entries) == 0 {
		return nil, false
	}
	res = &resumption{}
	expanded := reply.ExpandPrefix(prefix, vars)
	type numbered struct {
		n    int
		text string
	}
	var parts []numbered
	for _, e := range entries {
		_, suffix, _ := strings.Cut(e.ID, "#")
		n, err := strconv.Atoi(suffix)
		if err != nil || n < 1 || e.Out.IsError {
			return nil, true
		}
		res.last = max(res.last, n)
		if text := strings.TrimSpace(strings.TrimPrefix(e.Out.Text, expanded)); text != "" {
			parts = append(parts, numbered{n, text})
		}
	}
	// Payloads are numbered in delivery order.
	slices.SortStableFunc(parts, func(a, b numbered) int { return cmp.Compare(a.n, b.n) })
	for _, p := range parts {
		res.said = append(res.said, p.text)
	}
	return res, false
}

// resumeOf is what the batch's resumed message had stored of its reply.
// The payloads are numbered on under the newest message's key: another's
// stored ones do not count there.
func resumeOf(batch []*waiting) *resumption {
	for i, w := range batch {
		if r := w.mc.resume; r != nil {
			if i < len(batch)-1 {
				return &resumption{said: r.said}
			}
			return r
		}
	}
	return nil
}

// from is the payload number the run counts on from.
func (r *resumption) from() int {
	if r == nil {
		return 0
	}
	return r.last
}

// resumeNote follows, for the model, the part of its reply that was sent
// before a restart, when it is asked for the rest.
const resumeNote = "[Your reply above was cut off at this point by a restart, and the user has already received it. " +
	"Continue it from exactly where it stops: do not repeat any of it, and do not mention the interruption.]"

// told is what the model is shown after the turn's messages: its reply so
// far and the note asking for the rest; nothing when nothing was stored.
func (r *resumption) told(at time.Time) []store.Turn {
	if r == nil || len(r.said) == 0 {
		return nil
	}
	return []store.Turn{
		{Role: store.RoleAssistant, Text: strings.Join(r.said, "\n\n"), At: at},
		{Role: store.RoleUser, Text: resumeNote, At: at},
	}
}

// kept is what the transcript keeps of the resumed run's turns: the reply
// as the user got it, the stored part and the rest in the run's first
// assistant turn, without the blocks the run repeated.
func (r *resumption) kept(turns []store.Turn) []store.Turn {
	if r == nil || len(r.said) == 0 {
		return turns
	}
	turns = append([]store.Turn(nil), turns...)
	first := -1
	for i, t := range turns {
		if t.Role != store.RoleAssistant {
			continue
		}
		if first < 0 {
			first = i
		}
		if t.Text != "" {
			turns[i].Text = r.rest(t.Text)
			break
		}
	}
	said := strings.Join(r.said, "\n\n")
	if first < 0 {
		// The run said nothing: the transcript still has what the user got.
		return append([]store.Turn{{Role: store.RoleAssistant, Text: said, Partial: true}}, turns...)
	}
	turns[first].Text = strings.TrimSpace(said + "\n\n" + turns[first].Text)
	return turns
}

// rest is what of a whole text is not a repeat of blocks already sent.
func (r *resumption) rest(text string) string {
	if r == nil {
		return text
	}
	cut, open := r.repeated(text)
	if open {
		return "" // all of it repeats what was sent
	}
	return strings.TrimLeftFunc(text[cut:], unicode.IsSpace)
}

// unsent is what of a finished reply follows the payloads stored of it.
// known is false when the stored part is not the reply's start (the chat
// was sent another form of it): then nothing is taken for unsent.
func (r *resumption) unsent(reply string) (rest string, known bool) {
	if r == nil {
		return reply, true
	}
	cut, whole, open := repeatFrom(r.said, reply)
	switch {
	case open:
		return "", true // the stored payloads hold all of it
	case whole < len(r.said):
		return "", false
	}
	return strings.TrimLeftFunc(reply[cut:], unicode.IsSpace), true
}

// repeated measures how much of text, from its start, repeats whole
// blocks the user has seen: asked to go on, a model may start over from
// one of them. Whitespace does not count. cut is the byte offset in text
// after the repeated blocks; open reports that all of text so far repeats
// sent text and may go on doing so.
func (r *resumption) repeated(text string) (cut int, open bool) {
	for j := range r.said {
		c, _, o := repeatFrom(r.said[j:], text)
		cut, open = max(cut, c), open || o
	}
	return cut, open
}

// repeatFrom matches text against blocks, in order, whitespace aside: cut
// is the byte offset in text after the whole blocks it repeats, whole how
// many they are, open that text ended inside the repeat.
func repeatFrom(blocks []string, text string) (cut, whole int, open bool) {
	at := 0
	for i, b := range blocks {
		for _, want := range b {
			if unicode.IsSpace(want) {
				continue
			}
			for at < len(text) {
				got, n := utf8.DecodeRuneInString(text[at:])
				if !unicode.IsSpace(got) {
					break
				}
				at += n
			}
			if at == len(text) {
				return cut, i, true
			}
			got, n := utf8.DecodeRuneInString(text[at:])
			if got != want {
				return cut, i, false
			}
			at += n
		}
		cut = at
	}
	return cut, len(blocks), false
}

// stream wraps the run's stream so that blocks it repeats are not sent
// again; s itself when nothing was stored.
func (r *resumption) stream(s agent.Stream) agent.Stream {
	if r == nil || len(r.said) == 0 {
		return s
	}
	return &resumedStream{Stream: s, r: r}
}

// resumedStream holds the start of a resumed run's text back while it
// repeats what was sent before the restart, and passes on the rest.
type resumedStream struct {
	agent.Stream
	r    *resumption
	held strings.Builder
	// decided: the run's text has gone past any repeat; atBegin is its
	// value when the current call began.
	decided, atBegin bool
}

// Begin implements agent.Stream.
func (s *resumedStream) Begin() {
	if !s.decided && s.held.Len() > 0 {
		s.decided = true // the last call only repeated what was sent
	}
	s.held.Reset()
	s.atBegin = s.decided
	s.Stream.Begin()
}

// Text implements agent.Stream.
func (s *resumedStream) Text(delta string) {
	if s.decided {
		s.Stream.Text(delta)
		return
	}
	s.held.WriteString(delta)
	text := s.held.String()
	cut, open := s.r.repeated(text)
	if open {
		s.Stream.Text("") // the model is writing: its slot is busy
		return
	}
	s.decided = true
	s.Stream.Text(strings.TrimLeftFunc(text[cut:], unicode.IsSpace))
}

// TakeBack implements agent.Stream.
func (s *resumedStream) TakeBack() {
	s.held.Reset()
	s.decided = s.atBegin
	s.Stream.TakeBack()
}

// Discard implements agent.Stream.
func (s *resumedStream) Discard() {
	s.held.Reset()
	s.decided = s.atBegin
	s.Stream.Discard()
}
