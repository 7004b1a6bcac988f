package pipeline

import (
	"time"

	"github.com/pincerbot/pincer/internal/aggregate"
	"github.com/pincerbot/pincer/internal/msg"
	"github.com/pincerbot/pincer/internal/trigger"
)

// ChatRules are how one chat is received, in place of its account's settings
// (see Options.Chat). Build them with NewChatRules; chats share them, so
// never change them.
type ChatRules struct {
	// Silent: the chat is switched off. Its messages are logged and
	// traced (Why says which setting keeps it silent), never answered,
	// summarized or digested.
	Silent bool
	Why    string
	// Receive are the chat's receive settings. Of them the chat reads
	// Mention, Realtime, History.Enabled and MaxChars, Digest.Enabled,
	// Interval and Prompt, and Summary.Enabled and Prompt; the rest (the
	// buffers' bounds, summary commands) stay the account's.
	Receive Settings
	// DigestAnyChat: the chat's own settings switch its digest on, so the
	// account's digest scope and peers do not apply to it.
	DigestAnyChat bool
	// NoQuote: the messages its realtime batches quote are not resolved.
	NoQuote bool
	// Allow, when set, says which senders the bot answers in the chat;
	// DenyWhy says why one is not, for the trace.
	Allow   func(msg.UserID) bool
	DenyWhy string

	eval  *trigger.Evaluator
	shape *aggregate.Shape
}

// NewChatRules readies c; its warnings name skipped keywords (not valid
// regular expressions).
func NewChatRules(c ChatRules) (*ChatRules, []string) {
	eval, warnings := trigger.New(c.Receive.Mention)
	c.eval = eval
	rt := c.Receive.Realtime
	c.shape = &aggregate.Shape{Disabled: !rt.Enabled, Window: rt.Window, MaxWindow: rt.MaxWindow, MaxMessages: rt.MaxMessages, MaxChars: rt.MaxChars}
	return &c, warnings
}

// chat returns the settings of peer's chat.
func (p *Pipeline) chat(peer msg.Peer) *ChatRules {
	if p.opts.Chat != nil {
		if c := p.opts.Chat(peer); c != nil {
			return c
		}
	}
	return p.account
}

// RescheduleDigests gives each chat's open digest window the interval
// its settings say now: a configuration reloaded while pincer runs.
func (p *Pipeline) RescheduleDigests() {
	p.digest.Reschedule(func(key string) time.Duration {
		peer, err := msg.ParsePeer(key)
		if err != nil {
			return 0
		}
		return p.chat(peer).Receive.Digest.Interval
	})
}

// gate applies what the chat says of who it answers to the trigger
// decision d about m.
func (c *ChatRules) gate(m msg.Message, d trigger.Decision) trigger.Decision {
	switch {
	case c.Silent:
		return trigger.Decision{Why: c.Why}
	case d.Triggered && c.Allow != nil && !c.Allow(m.Sender.ID):
		return trigger.Decision{Why: c.DenyWhy}
	}
	return d
}
