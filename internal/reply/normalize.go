// Package reply turns an agent's output into deliveries: it recognises the
// silent and heartbeat tokens, adds the response prefix, drops empty,
// reasoning and repeated payloads, cuts streamed text into blocks, and
// delivers them one at a time with a human rhythm.
package reply

import (
	"strings"
	"unicode"

	"github.com/pincerbot/pincer/internal/msg"
)

// Tokens the agent uses to talk to the engine rather than to the user.
const (
	// SilentToken, as the whole reply, means "say nothing".
	SilentToken = "NO_REPLY"
	// HeartbeatToken acknowledges a heartbeat with nothing to report.
	HeartbeatToken = "HEARTBEAT_OK"
)

// HeartbeatAckMaxChars is how much text may remain beside a heartbeat
// token for the reply still to count as a bare acknowledgement.
const HeartbeatAckMaxChars = 300

// IsSilent reports whether text is exactly the silent token, ignoring case
// and surrounding whitespace. A real reply that merely ends with the token is
// not silent.
func IsSilent(text string) bool {
	return strings.EqualFold(strings.TrimSpace(text), SilentToken)
}

// StripSilentToken removes silent tokens trailing real content ("Sure!
// NO_REPLY" becomes "Sure!").
func StripSilentToken(text string) string {
	for {
		s := stripEdgeToken(text, SilentToken, false)
		if s == text {
			return s
		}
		text = s
	}
}

// stripEdgeToken removes token (case-insensitive) from the end of text and,
// when leading is set, also from the start, with the whitespace around it.
// The token must stand alone: "XNO_REPLY" is left as it is.
func stripEdgeToken(text, token string, leading bool) string {
	t := strings.TrimRightFunc(text, unicode.IsSpace)
	if n := len(t) - len(token); n >= 0 && strings.EqualFold(t[n:], token) && (n == 0 || !isWordByte(t[n-1])) {
		text = strings.TrimRightFunc(t[:n], unicode.IsSpace)
	}
	if leading {
		t = strings.TrimLeftFunc(text, unicode.IsSpace)
		if len(t) >= len(token) && strings.EqualFold(t[:len(token)], token) && (len(t) == len(token) || !isWordByte(t[len(token)])) {
			text = strings.TrimLeftFunc(t[len(token):], unicode.IsSpace)
		}
	}
	return text
}

func isWordByte(b byte) bool {
	return b == '_' || b >= '0' && b <= '9' || b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z'
}

// MaySilence reports whether text, a reply still streaming, could yet turn
// out to be the silent token; streamed blocks hold back until it cannot, so
// "NO" never leaks as a message of its own.
func MaySilence(text string) bool {
	t := strings.TrimSpace(text)
	return len(t) <= len(SilentToken) && strings.EqualFold(t, SilentToken[:len(t)])
}

// SkipReason says why a payload was not delivered.
type SkipReason string

// Skip reasons.
const (
	SkipSilent    SkipReason = "silent"
	SkipHeartbeat SkipReason = "heartbeat-ack"
	SkipEmpty     SkipReason = "empty"
	SkipReasoning SkipReason = "reasoning"
	SkipDuplicate SkipReason = "duplicate"
)

// PrefixVars fill the response prefix template.
type PrefixVars struct {
	Model         string
	Provider      string
	ThinkingLevel string
	Identity      string
}

// ExpandPrefix fills {model}, {provider}, {thinkingLevel} and {identity} in
// tmpl; other braces are left as they are.
func ExpandPrefix(tmpl string, v PrefixVars) string {
	if !strings.Contains(tmpl, "{") {
		return tmpl
	}
	return strings.NewReplacer(
		"{model}", v.Model, "{provider}", v.Provider,
		"{thinkingLevel}", v.ThinkingLevel, "{identity}", v.Identity,
	).Replace(tmpl)
}

// Normalizer prepares the payloads of one turn for delivery. It is not safe
// for concurrent use; the Dispatcher calls it from one goroutine.
type Normalizer struct {
	// Prefix is the response prefix template, prepended to text replies.
	Prefix string
	Vars   PrefixVars
	// Heartbeat marks a heartbeat turn: a reply that is the heartbeat token
	// plus at most HeartbeatAckMaxChars of text is an acknowledgement.
	Heartbeat bool
	// AllowReasoning lets reasoning payloads through, for channels that
	// show them.
	AllowReasoning bool
	// OnSkip, when set, learns of every payload that is not delivered.
	OnSkip func(reason SkipReason, p msg.Outbound)

	// blocks are the texts of the blocks queued so far, finals the keys of
	// the final payloads.
	blocks []string
	finals map[string]bool
}

// Normalize returns the payload of kind to deliver and true, or false when
// it must not be delivered. Blocks are never dropped for repeating an
// earlier block: a reply may say the same thing twice (a song's chorus).
// Only a repeated delivery is dropped: a final payload that says again
// what the blocks of the turn or an earlier final already said.
func (n *Normalizer) Normalize(kind Kind, p msg.Outbound) (msg.Outbound, bool) {
	skip := func(r SkipReason) (msg.Outbound, bool) {
		if n.OnSkip != nil {
			n.OnSkip(r, p)
		}
		return msg.Outbound{}, false
	}
	if p.IsReasoning && !n.AllowReasoning {
		return skip(SkipReasoning)
	}
	// Strip the tokens from the edges until none is left, in any order
	// ("NO_REPLY HEARTBEAT_OK" is as silent as "NO_REPLY").
	text, silent, heartbeat := p.Text, false, false
	for {
		s := StripSilentToken(text)
		silent = silent || s != text
		h := stripEdgeToken(s, HeartbeatToken, true)
		heartbeat = heartbeat || h != s
		if h == text {
			break
		}
		text = h
	}
	empty := strings.TrimSpace(text) == ""
	switch {
	case len(p.Media) > 0:
		// Pending media still goes out whatever the tokens say.
	case heartbeat && n.Heartbeat && len([]rune(strings.TrimSpace(text))) <= HeartbeatAckMaxChars:
		return skip(SkipHeartbeat)
	case empty && silent:
		return skip(SkipSilent)
	case empty:
		return skip(SkipEmpty)
	}
	if text != "" && n.Prefix != "" && !p.IsError {
		text = ExpandPrefix(n.Prefix, n.Vars) + text
	}
	p.Text = text
	switch kind {
	case KindBlock:
		n.blocks = append(n.blocks, strings.TrimSpace(p.Text))
	case KindFinal:
		key := dedupKey(p)
		if n.finals[key] || (len(n.blocks) > 0 && len(p.Media) == 0 && squash(p.Text) == squash(strings.Join(n.blocks, " "))) {
			return skip(SkipDuplicate)
		}
		if n.finals == nil {
			n.finals = map[string]bool{}
		}
		n.finals[key] = true
	}
	return p, true
}

func dedupKey(p msg.Outbound) string {
	var b strings.Builder
	b.WriteString(squash(p.Text))
	for _, m := range p.Media {
		b.WriteString("\x00" + m.URL)
	}
	return b.String()
}

// squash collapses whitespace, so text cut into blocks compares equal to
// the same text whole.
func squash(s string) string { return strings.Join(strings.Fields(s), " ") }
