package onebot

import (
	"context"
	"errors"
	"time"

	"github.com/pincerbot/pincer/internal/channel"
	"github.com/pincerbot/pincer/internal/msg"
)

// Send delivers out on the live connection.
func (a *Account) Send(ctx context.Context, out msg.Outbound) (msg.MessageID, error) {
	return a.send(ctx, out, OutboundOptions{})
}

func (a *Account) send(ctx context.Context, out msg.Outbound, opts OutboundOptions) (msg.MessageID, error) {
	if err := a.opts.Backoff.check(out.Peer); err != nil {
		return "", err
	}
	if err := a.opts.Pace.wait(ctx, out.Peer); err != nil {
		return "", err
	}
	defer a.opts.Pace.done(out.Peer)
	c, err := a.caller()
	if err != nil {
		return "", err
	}
	if a.opts.Debug {
		a.log.Info("outbound", "peer", out.Peer.String(), "reply_to", string(out.ReplyTo), "text", out.Text, "media", len(out.Media))
	}
	ob := &Outbox{Caller: c, ChunkLimit: a.opts.ChunkLimit, OnSent: a.recordSent, ChunkGap: a.opts.ChunkGap}
	id, err := ob.Send(ctx, out, opts)
	switch {
	case errors.Is(err, ErrRiskControl):
		wait := a.opts.Backoff.fail(out.Peer)
		a.log.Error("QQ probably blocked this send (risk control); sends to this chat are paused", "peer", out.Peer.String(), "pause", wait.Round(time.Second).String(), "err", err)
	case err == nil:
		a.opts.Backoff.ok(out.Peer)
	}
	return id, err
}

// ReplierFor returns the replier of m, as its arrival would have made it:
// for messages restored after a restart.
func (a *Account) ReplierFor(m msg.Message) channel.Replier { return &replier{a: a, trigger: m} }

// replier answers one inbound message: the reply quotes it in groups when
// ReplyToTrigger is set, and may mention its sender.
type replier struct {
	a       *Account
	trigger msg.Message
}

func (r *replier) Partial(string) {}

func (r *replier) Deliver(ctx context.Context, out msg.Outbound) (msg.MessageID, error) {
	if r.a.opts.ReplyToTrigger && r.trigger.Peer.Kind == msg.Group && out.ReplyTo == "" {
		out.ReplyTo = r.trigger.ID
	}
	opts := OutboundOptions{Mentions: true}
	people := out.Mentionable
	if people == nil {
		people = []msg.Sender{r.trigger.Sender}
	}
	for _, p := range people {
		if qq, err := parseID(string(p.ID)); err == nil {
			opts.Participants = append(opts.Participants, Participant{QQ: qq, Name: p.Name})
		}
	}
	return r.a.send(ctx, out, opts)
}

func parseID(s string) (ID, error) {
	var id ID
	err := id.UnmarshalJSON([]byte(s))
	return id, err
}
