// Package prompt renders what an agent reads: the envelope that heads each
// inbound message and the sanitizing that keeps user-controlled names from
// forging structure.
package prompt

import (
	"fmt"
	"strings"
	"time"
)

// Sanitize makes a user-controlled header part (a display name, a channel
// label) safe to embed: newlines become spaces, '[' and ']' become '(' and
// ')', runs of whitespace fold into one space, and the ends are trimmed.
func Sanitize(s string) string {
	s = strings.Map(func(r rune) rune {
		switch r {
		case '[':
			return '('
		case ']':
			return ')'
		}
		return r
	}, s)
	return strings.Join(strings.Fields(s), " ")
}

// Envelope is the header an agent sees before each inbound message:
// "[Channel Sender +elapsed Weekday 2006-01-02 15:04 MST] body".
type Envelope struct {
	Channel string
	Sender  string
	// At is when the message was sent.
	At time.Time
	// Previous is when the previous message of the session was sent; zero
	// leaves the elapsed part out.
	Previous time.Time
	// Location is the timezone the timestamp is shown in; nil means local.
	Location *time.Location
}

// Format returns body headed by the envelope.
func (e Envelope) Format(body string) string {
	loc := e.Location
	if loc == nil {
		loc = time.Local
	}
	parts := make([]string, 0, 5)
	for _, p := range []string{Sanitize(e.Channel), Sanitize(e.Sender)} {
		if p != "" {
			parts = append(parts, p)
		}
	}
	if !e.Previous.IsZero() {
		parts = append(parts, "+"+Elapsed(e.At.Sub(e.Previous)))
	}
	t := e.At.In(loc)
	parts = append(parts, t.Format("Mon"), t.Format("2006-01-02 15:04 MST"))
	return "[" + strings.Join(parts, " ") + "] " + body
}

// Elapsed renders a duration as the envelope shows it: 45s, 2min, 3h, 2d.
func Elapsed(d time.Duration) string {
	switch {
	case d < 0:
		return "0s"
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d/time.Second))
	case d < time.Hour:
		return fmt.Sprintf("%dmin", int(d/time.Minute))
	case d < 24*time.Hour:
		return fmt.Sprintf("%dh", int(d/time.Hour))
	}
	return fmt.Sprintf("%dd", int(d/(24*time.Hour)))
}
