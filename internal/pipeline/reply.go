package pipeline

import (
	"context"
	"errors"
	"slices"
	"strings"

	"github.com/pincerbot/pincer/internal/channel"
	"github.com/pincerbot/pincer/internal/msg"
	"github.com/pincerbot/pincer/internal/reply"
)

// emptyInputNotice is the canned answer some agent runtimes give to an
// empty turn. It is never worth sending to a chat.
const emptyInputNotice = "I didn't receive any text in your message"

// shape applies the delivery rules of a batch kind to a payload and
// reports whether anything is left to send.
func shape(out *msg.Outbound, flatten, noMentions, skip bool) bool {
	if strings.Contains(out.Text, emptyInputNotice) {
		return false
	}
	if skip && reply.IsSkip(out.Text) {
		return false
	}
	if flatten {
		out.Text = reply.FlattenMarkdown(out.Text)
	}
	if noMentions {
		out.NoMentions = true
	}
	return !out.Empty()
}

// filtered wraps the replier of the message a batch answers.
type filtered struct {
	channel.Wrapper
	flatten, noMentions bool
	// mentionable are the people a realtime reply may mention by name.
	mentionable []msg.Sender
}

func (f *filtered) Deliver(ctx context.Context, out msg.Outbound) (msg.MessageID, error) {
	if !shape(&out, f.flatten, f.noMentions, false) {
		return "", nil
	}
	if len(f.mentionable) > 0 {
		// Everyone the batch showed, and whoever the engine adds (messages
		// steered into the turn); the latest appearance of a name wins.
		out.Mentionable = append(slices.Clone(f.mentionable), out.Mentionable...)
	}
	return f.Replier.Deliver(ctx, out)
}

// errNoSender: digests need the channel's send function.
var errNoSender = errors.New("pipeline: no send function for digests")

// peerReplier delivers a digest to its chat, quoting nothing.
type peerReplier struct {
	send          func(ctx context.Context, out msg.Outbound) (msg.MessageID, error)
	account       msg.AccountID
	peer          msg.Peer
	flatten, skip bool
}

func (r *peerReplier) Partial(string) {}

func (r *peerReplier) Deliver(ctx context.Context, out msg.Outbound) (msg.MessageID, error) {
	out.Account, out.Peer, out.ReplyTo = r.account, r.peer, ""
	if !shape(&out, r.flatten, true, r.skip) {
		return "", nil
	}
	if r.send == nil {
		return "", errNoSender
	}
	return r.send(ctx, out)
}
