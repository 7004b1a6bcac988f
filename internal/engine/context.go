package engine

import (
	"strings"

	"github.com/pincerbot/pincer/internal/command"
	"github.com/pincerbot/pincer/internal/msg"
)

// MsgContext is everything the engine knows about one inbound turn.
type MsgContext struct {
	Message    msg.Message
	SessionKey string
	// Body is the message text as received.
	Body string
	// BodyForAgent is what the agent reads for this turn: the body with
	// whatever context the pipeline adds (history, quotes). The envelope is
	// added by the engine.
	BodyForAgent string
	// RawBody is the sender's own text only, without added context, for
	// command detection; CommandBody is the same text as commands see it.
	RawBody     string
	CommandBody string
	// BodyForCommands is the cleanest form: trimmed CommandBody.
	BodyForCommands string
	// CommandAuthorized grants commands; false unless Finalize granted it.
	CommandAuthorized bool
	// Owner grants owner-only commands as well.
	Owner bool
	// NoCommands marks turns that must never run commands (digests,
	// summaries): Finalize keeps them unauthorized whatever the policy says.
	NoCommands bool
	// Heartbeat marks a turn started by the heartbeat runner; it is
	// skipped, not queued, when the session is busy.
	Heartbeat bool
	// Standalone marks a turn that runs on its own (digests, summaries):
	// it is never merged with other messages or steered into another
	// turn, and takes no steered messages itself. Heartbeats are
	// standalone too.
	Standalone bool
	// Consume lists the receive-buffer entries this turn hands on; they
	// are removed when the turn is admitted, in the same step.
	Consume []int64
}

// NewMsgContext builds the context of a plain message: every body is its
// text.
func NewMsgContext(m msg.Message) MsgContext {
	return MsgContext{Message: m, Body: m.Text, BodyForAgent: m.Text, RawBody: m.Text, CommandBody: m.Text}
}

// Finalize fills the derived fields and decides authorization: commands are
// denied unless the policy admits the sender, and never granted to a turn
// marked NoCommands or one with no command body.
func Finalize(c MsgContext, p command.Policy) MsgContext {
	c.BodyForCommands = strings.TrimSpace(c.CommandBody)
	ch, sender := string(c.Message.Channel), string(c.Message.Sender.ID)
	c.CommandAuthorized, c.Owner = false, false
	if !c.NoCommands && c.BodyForCommands != "" {
		c.CommandAuthorized = p.Authorized(ch, sender)
		c.Owner = c.CommandAuthorized && p.Owner(ch, sender)
	}
	return c
}

// allowed reports whether the turn may run s.
func (c MsgContext) allowed(s *command.Spec) bool {
	return c.CommandAuthorized && (!s.OwnerOnly || c.Owner)
}
