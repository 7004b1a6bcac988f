package engine

import (
	"strings"

	"github.com/pincerbot/pincer/internal/store"
)

// tail is how a transcript ends: with messages not answered yet, or with
// a reply and the messages it answered.
type tail struct {
	// open is the first of the user turns at the end, len(tr) when the
	// transcript does not end with one.
	open int
	// When the transcript ends with a finished reply: asked is the first
	// of the user turns it answers (they are followed by messages steered
	// into it), owner the newest of those first ones, whose key the
	// reply's payloads carry, and text what the reply said. Otherwise
	// asked and owner are -1.
	asked, owner int
	text         string
}

// tailOf reads how tr ends.
func tailOf(tr []store.Turn) tail {
	t := tail{open: len(tr), asked: -1, owner: -1}
	for t.open > 0 && tr[t.open-1].Role == store.RoleUser {
		t.open--
	}
	ends := func(u store.Turn) bool {
		return u.Role == store.RoleAssistant && len(u.ToolCalls) == 0 || u.Role == store.RoleSummary
	}
	n := len(tr)
	if t.open < n || n == 0 || !ends(tr[n-1]) || tr[n-1].Partial || tr[n-1].Role != store.RoleAssistant {
		return t
	}
	// The exchange starts after the reply before it.
	from := n - 1
	for from > 0 && !ends(tr[from-1]) {
		from--
	}
	for from < n && tr[from].Role != store.RoleUser {
		from++
	}
	to := from
	for to < n && tr[to].Role == store.RoleUser {
		to++
	}
	if from == to {
		return t
	}
	var said []string
	for _, u := range tr[to:] {
		if u.Role == store.RoleAssistant && u.Text != "" {
			said = append(said, u.Text)
		}
	}
	t.asked, t.owner, t.text = from, to-1, strings.Join(said, "\n\n")
	return t
}

// find returns the index of the last user turn of tr[from:] that holds
// body as a message, or -1.
func (tail) find(tr []store.Turn, from int, body string) int {
	if from < 0 {
		return -1
	}
	for i := len(tr) - 1; i >= from; i-- {
		if tr[i].Role == store.RoleUser && holdsBody(tr[i].Text, body) {
			return i
		}
	}
	return -1
}

// holdsBody reports whether a user turn's text is the message body: after
// its envelope (or a notice line), and followed by nothing but the notes
// of its media.
func holdsBody(text, body string) bool {
	for at := strings.Index(text, body); at >= 0; {
		before, rest := text[:at], text[at+len(body):]
		starts := before == "" || strings.HasSuffix(before, "] ") || strings.HasSuffix(before, "\n")
		if starts && (rest == "" || strings.HasPrefix(rest, "\n[")) {
			return true
		}
		next := strings.Index(text[at+1:], body)
		if next < 0 {
			break
		}
		at += 1 + next
	}
	return false
}
