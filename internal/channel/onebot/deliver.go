package onebot

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/pincerbot/pincer/internal/channel"
	"github.com/pincerbot/pincer/internal/channel/onebot/wire"
	"github.com/pincerbot/pincer/internal/msg"
	"github.com/pincerbot/pincer/internal/outbox"
	"github.com/pincerbot/pincer/internal/trace"
)

var _ outbox.Sender = (*Account)(nil)

// Send delivers out (operator sends, heartbeats, digests, and the replies
// of repliers): through the outbox when the account has one, so a reply
// outlives a disconnect or a restart, else at once on the live connection.
// Mentions are rewritten only for payloads that list people who may be
// mentioned (Mentionable not nil).
func (a *Account) Send(ctx context.Context, out msg.Outbound) (msg.MessageID, error) {
	if a.opts.Outbox != nil {
		return a.opts.Outbox.Deliver(ctx, ChannelID, out.ID, out)
	}
	var first msg.MessageID
	err := a.SendParts(ctx, out, 0, func(part int, id msg.MessageID, _ bool) {
		if part == 0 {
			first = id
		}
	})
	return first, err
}

// SendParts implements outbox.Sender: the parts of out from part from on
// (its text's chunks, then its media; see chunkSender.SendFrom), paced
// per chat and paused while QQ's risk control holds the chat. A refusal
// by the implementation (other than risk control) is permanent, and so is
// a media file that does not exist; no connection, a lost one, a timeout
// or a pause are worth retrying.
func (a *Account) SendParts(ctx context.Context, out msg.Outbound, from int, confirmed outbox.Confirmed) error {
	if err := a.opts.backoff.check(out.Peer); err != nil {
		return err
	}
	waited, held, err := a.opts.Pace.wait(ctx, out.Peer)
	if err != nil {
		return err
	}
	attempted := false // a message may have gone out: the next waits the gap
	if held {
		defer func() { a.opts.Pace.done(out.Peer, attempted) }()
	}
	c, err := a.liveCaller()
	if err != nil {
		return err
	}
	a.traceGap(out, from, waited)
	attempted = true
	if a.opts.Debug {
		a.log.Info("outbound", "peer", out.Peer.String(), "reply_to", string(out.ReplyTo), "text", out.Text, "media", len(out.Media), "from_chunk", from)
	}
	ob := &chunkSender{Caller: c, ChunkLimit: a.opts.ChunkLimit, OnSent: a.recordSent, ChunkGap: a.chunkGap(out.Peer), Media: a.mediaOptions()}
	err = ob.SendFrom(ctx, out, optionsFor(out), from, confirmed)
	var ae *wire.ActionError
	switch {
	case errors.Is(err, wire.ErrRiskControl):
		wait := a.opts.backoff.fail(out.Peer)
		a.log.Error("QQ probably blocked this send (risk control); sends to this chat are paused", "peer", out.Peer.String(), "pause", wait.Round(time.Second).String(), "err", err)
		return retryAfter{err, wait}
	case err == nil:
		a.opts.backoff.ok(out.Peer)
	case errors.As(err, &ae) || errors.Is(err, errNoTarget) || errors.Is(err, errBadMedia):
		return outbox.Permanent(err)
	}
	return err
}

// traceGap adds to the trace of the message out answers how long its
// send waited for the chat's send gap before its first message (from is
// the first part this attempt sends), and the gap before each later part
// of a long reply. Nothing is added when nothing waits, or for a payload
// that answers no message.
func (a *Account) traceGap(out msg.Outbound, from int, waited time.Duration) {
	gap, setting := a.opts.Pace.gapOf(out.Peer)
	if a.opts.Trace == nil || out.Answers == "" || gap <= 0 {
		return
	}
	chunkGap := a.chunkGap(out.Peer)
	parts := len(chunkText(out.Text, a.opts.ChunkLimit)) + len(out.Media) - max(from, 0)
	if parts <= 0 || waited <= 0 && (parts == 1 || chunkGap <= 0) {
		return // nothing waited
	}
	detail := fmt.Sprintf("waited %d ms for %s", waited.Round(time.Millisecond).Milliseconds(), cmp.Or(setting, "the send gap"))
	if parts > 1 && chunkGap > 0 {
		detail += fmt.Sprintf(", then %d ms before each of its %d other messages", chunkGap.Milliseconds(), parts-1)
	}
	key := trace.Key{Channel: ChannelID, Account: a.opts.ID, Peer: out.Peer, ID: out.Answers}
	a.opts.Trace.Step(key, trace.StageDeliver, "", detail)
}

// chunkGap is the wait between the parts of one payload to peer: the
// chat's own send gap when it has one, else the account's ChunkGap.
func (a *Account) chunkGap(peer msg.Peer) time.Duration {
	if p := a.opts.Pace; p != nil && p.For != nil {
		if gap, _, ok := p.For(peer); ok {
			return gap
		}
	}
	return a.opts.ChunkGap
}

// mediaOptions are the account's rules for sending local media files.
func (a *Account) mediaOptions() mediaOptions {
	return mediaOptions{Inline: a.opts.InlineLocalMedia, InlineLimit: a.opts.InlineMediaLimit, Log: a.log}
}

// retryAfter is an error that says when a retry makes sense.
type retryAfter struct {
	error
	wait time.Duration
}

func (r retryAfter) Unwrap() error             { return r.error }
func (r retryAfter) RetryAfter() time.Duration { return r.wait }

// optionsFor returns the mention rules of a payload: rewritten for the
// people it lists (none listed: no rewriting).
func optionsFor(out msg.Outbound) outboundOptions {
	opts := outboundOptions{Mentions: out.Mentionable != nil}
	for _, p := range out.Mentionable {
		if qq, err := parseID(string(p.ID)); err == nil {
			opts.Participants = append(opts.Participants, participant{QQ: qq, Name: p.Name})
		}
	}
	return opts
}

// ReplierFor returns the replier of m, as its arrival would have made it:
// for messages restored after a restart.
func (a *Account) ReplierFor(m msg.Message) channel.Replier { return newReplier(a, m) }

// replier answers one inbound message: the reply quotes it in groups when
// ReplyToTrigger is set, and may mention its sender. It keeps only what it
// needs of the message: one is made for every message taken in, most of
// which are never answered.
type replier struct {
	a       *Account
	trigger msg.MessageID
	group   bool
	sender  msg.Sender
}

func newReplier(a *Account, m msg.Message) *replier {
	return &replier{a: a, trigger: m.ID, group: m.Peer.Kind == msg.Group, sender: m.Sender}
}

func (r *replier) Partial(string) {}

func (r *replier) Deliver(ctx context.Context, out msg.Outbound) (msg.MessageID, error) {
	if r.a.opts.ReplyToTrigger && r.group && out.ReplyTo == "" {
		out.ReplyTo = r.trigger
	}
	if out.Mentionable == nil {
		out.Mentionable = []msg.Sender{r.sender}
	}
	if out.Answers == "" {
		out.Answers = r.trigger
	}
	return r.a.Send(ctx, out)
}

func parseID(s string) (wire.ID, error) {
	var id wire.ID
	err := id.UnmarshalJSON([]byte(s))
	return id, err
}
