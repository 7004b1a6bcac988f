package engine

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"sync/atomic"

	"github.com/pincerbot/pincer/internal/command"
	"github.com/pincerbot/pincer/internal/jsonstr"
	"github.com/pincerbot/pincer/internal/msg"
	"github.com/pincerbot/pincer/internal/store"
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
	// Consume is what this turn takes out of the receive buffers; it is
	// taken when the turn is admitted, in the same step.
	Consume store.Consumed
	// Delivery, when set, describes the reply path so it can be rebuilt
	// after a restart (see Engine.Resume): the turn is then journaled from
	// its admission until it is over, and a crash cannot lose it. Its
	// content belongs to whoever dispatched the turn.
	Delivery json.RawMessage
	// Key is the turn's dedup key, set by the engine; its replies are
	// delivered under "<Key>#<n>".
	Key string
	// Resumed marks a turn run again after a restart.
	Resumed bool
	// resume is what a resumed turn's reply had stored before the restart.
	resume *resumption
	// finished, when set, learns that the turn took this message out of
	// the journal, so its dispatcher need not.
	finished *atomic.Bool
	// Media are the pictures, voice notes and files the turn shows: its
	// messages', its quoted message's and its merged forwards' (see
	// MediaReader).
	Media []msg.Attachment
}

// journaled is what the journal keeps of a turn.
type journaled struct {
	Message      msg.Message      `json:"message"`
	Body         string           `json:"body,omitempty"`
	BodyForAgent string           `json:"bodyForAgent,omitempty"`
	RawBody      string           `json:"rawBody,omitempty"`
	CommandBody  string           `json:"commandBody,omitempty"`
	NoCommands   bool             `json:"noCommands,omitempty"`
	Standalone   bool             `json:"standalone,omitempty"`
	Delivery     json.RawMessage  `json:"delivery,omitempty"`
	Media        []msg.Attachment `json:"media,omitempty"`
}

// encodeTurn is the journal's record of mc: the JSON json.Marshal writes
// for it as a journaled (TestJournalRecordIsWhatMarshalWrote and
// FuzzJournalRecord hold the two to the same value), written by hand, as
// every turn journals its message and bodies (the agent's with its
// history) and the reflective encoder was most of what that cost.
func encodeTurn(mc MsgContext) ([]byte, error) {
	b := make([]byte, 0, 512+2*len(mc.Message.Text)+len(mc.Body)+len(mc.BodyForAgent)+len(mc.RawBody)+len(mc.CommandBody)+len(mc.Delivery))
	b, err := mc.Message.AppendJSON(append(b, `{"message":`...))
	if err != nil {
		return nil, err
	}
	for _, f := range [...]struct{ key, v string }{
		{`,"body":`, mc.Body}, {`,"bodyForAgent":`, mc.BodyForAgent}, {`,"rawBody":`, mc.RawBody}, {`,"commandBody":`, mc.CommandBody},
	} {
		if f.v != "" {
			b = jsonstr.Append(append(b, f.key...), f.v, true)
		}
	}
	if mc.NoCommands {
		b = append(b, `,"noCommands":true`...)
	}
	if mc.Standalone {
		b = append(b, `,"standalone":true`...)
	}
	if len(mc.Delivery) > 0 {
		// Compacted, as json.Marshal writes a RawMessage; invalid JSON
		// fails here as it failed there.
		buf := bytes.NewBuffer(append(b, `,"delivery":`...))
		if err := json.Compact(buf, mc.Delivery); err != nil {
			return nil, fmt.Errorf("journal the turn's delivery: %w", err)
		}
		b = buf.Bytes()
	}
	if len(mc.Media) > 0 {
		media, err := json.Marshal(mc.Media)
		if err != nil {
			return nil, err
		}
		b = append(append(b, `,"media":`...), media...)
	}
	return append(b, '}'), nil
}

// decodeTurn reads a journal record back.
func decodeTurn(b []byte) (MsgContext, error) {
	var j journaled
	if err := json.Unmarshal(b, &j); err != nil {
		return MsgContext{}, err
	}
	return MsgContext{
		Message: j.Message, Body: j.Body, BodyForAgent: j.BodyForAgent, RawBody: j.RawBody, CommandBody: j.CommandBody,
		NoCommands: j.NoCommands, Standalone: j.Standalone, Delivery: j.Delivery, Media: j.Media,
	}, nil
}

// NewMsgContext builds the context of a plain message: every body is its
// text, and its media are its own.
func NewMsgContext(m msg.Message) MsgContext {
	return MsgContext{Message: m, Body: m.Text, BodyForAgent: m.Text, RawBody: m.Text, CommandBody: m.Text, Media: m.Attachments(msg.AttachedHere)}
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
