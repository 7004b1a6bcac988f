// Package reply turns an agent's output into deliveries: it recognises the
// silent and heartbeat tokens, adds the response prefix, drops empty,
// reasoning and repeated payloads, cuts streamed text into blocks, and
// delivers them one at a time with a human rhythm.
package reply

import (
	"strings"
	"unicode/utf8"

	"github.com/pincerbot/pincer/internal/msg"
)

// HeartbeatAckMaxChars is how much text may remain beside a heartbeat
// token for the reply still to count as a bare acknowledgement.
const HeartbeatAckMaxChars = 300

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
	text, found := StripTokens(p.Text)
	empty := text == ""
	switch {
	case len(p.Media) > 0:
		// Pending media still goes out whatever the tokens say.
	case found.Heartbeat && n.Heartbeat && utf8.RuneCountInString(strings.TrimSpace(text)) <= HeartbeatAckMaxChars:
		return skip(SkipHeartbeat)
	case empty && found.Silent:
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
