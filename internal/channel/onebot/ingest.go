package onebot

import (
	"context"
	"errors"
	"github.com/pincerbot/pincer/internal/trace"
	"strconv"
	"sync"

	"github.com/pincerbot/pincer/internal/channel"
	"github.com/pincerbot/pincer/internal/channel/onebot/wire"
	"github.com/pincerbot/pincer/internal/msg"
)

// Every transport hands its events here: decoded, normalized into
// messages, deduplicated (seen), filtered and handed to the sink.

// onFrame decodes and handles one event frame (an HTTP POST).
func (a *Account) onFrame(ctx context.Context, header string, frame []byte, sink channel.Sink, wg *sync.WaitGroup) {
	ev, err := wire.DecodeEvent(frame)
	if err != nil {
		a.log.Warn("undecodable event", "err", err)
		return
	}
	a.onEvent(ctx, nil, header, frame, &ev, sink, wg)
}

// onEvent handles one event from any transport: ev is decoded from frame,
// nil when that failed. c is the connection it came on (nil for HTTP
// POST).
func (a *Account) onEvent(ctx context.Context, c *Conn, header string, frame []byte, ev *wire.Event, sink channel.Sink, wg *sync.WaitGroup) {
	if ev == nil {
		_, err := wire.DecodeEvent(frame)
		a.log.Warn("undecodable event", "err", err)
		return
	}
	if ev.PostType == "meta_event" {
		return // a connection learns heartbeat intervals itself (Conn.Run)
	}
	self := a.Self()
	if self == 0 {
		// Every event names the bot; learning it here, before the message
		// is dispatched, means a mention in the very first message counts.
		if n, err := strconv.ParseInt(header, 10, 64); err == nil && n > 0 {
			self = wire.ID(n)
		} else {
			self = ev.SelfID
		}
		if self > 0 {
			a.mu.Lock()
			if a.self == 0 {
				a.self = self
			}
			a.mu.Unlock()
		}
	}
	if ev.PostType == "notice" && (ev.NoticeType == "group_recall" || ev.NoticeType == "friend_recall") {
		if ev.MessageID != 0 {
			a.recalled(msg.MessageID(ev.MessageID.String()))
		}
		return
	}
	m, err := ev.Normalize(a.opts.ID, self, a.opts.Inbound.MaxChars)
	if err != nil {
		switch {
		case errors.Is(err, wire.ErrSelf):
			if a.opts.Trace != nil {
				a.opts.Trace.Step(a.eventKey(ev), trace.StageReceive, "dropped", "the bot's own message")
			}
		case !errors.Is(err, wire.ErrNotMessage):
			a.log.Debug("event dropped", "reason", err)
			if a.opts.Trace != nil && ev.MessageID != 0 {
				a.opts.Trace.Step(a.eventKey(ev), trace.StageReceive, "dropped", "not a message pincer can read: "+err.Error())
			}
		}
		return
	}
	a.admit(ctx, self, m, sink, wg)
}

// eventKey names the message of an event that did not normalize.
func (a *Account) eventKey(ev *wire.Event) trace.Key {
	peer := msg.Peer{Kind: msg.Direct, ID: ev.UserID.String()}
	if ev.MessageType == "group" {
		peer = msg.Peer{Kind: msg.Group, ID: ev.GroupID.String()}
	}
	return trace.Key{Channel: ChannelID, Account: a.opts.ID, Peer: peer, ID: msg.MessageID(ev.MessageID.String())}
}

// admit hands m to the sink unless it was seen already (two transports,
// two reverse connections, a POST retry or a backfill deliver the same
// message more than once) or its peer is not allowed.
func (a *Account) admit(ctx context.Context, self wire.ID, m msg.Message, sink channel.Sink, wg *sync.WaitGroup) {
	if !a.seen.claim(seenKey(self, m.Peer, m.ID)) {
		a.log.Debug("duplicate event dropped", "msg_id", string(m.ID), "peer", m.Peer.String())
		a.opts.Trace.Step(trace.KeyOf(m), trace.StageReceive, "dropped", "a duplicate: the same message arrived again (another transport or connection, a POST retry, or a backfill)")
		return
	}
	if why := a.opts.Filter.denial(m.Peer); why != "" {
		a.log.Debug("peer not allowed", "peer", m.Peer.String())
		a.opts.Trace.Step(trace.KeyOf(m), trace.StageReceive, "dropped", why)
		return
	}
	a.noteSeen(m)
	r := newReplier(a, m)
	report := a.reporter(m.ID)
	taker, ordered := sink.(channel.Taker)
	if !ordered {
		dispatch(ctx, sink, m, r, report, wg)
		return
	}
	// Taken in here, on the reading goroutine, in arrival order: the sink
	// queues it on its chat's lane (blocking, which stops the reading,
	// while the lanes are full) and reports the outcome when there is one.
	// Nothing on a lane waits for the implementation (a quoted message's
	// author is asked off the lane, see AskSentByBot), so the lanes drain
	// while the reading waits, and action answers behind the waiting
	// events are read soon after.
	taker.Take(ctx, m, r, report)
}

// seenKey is the dedup key of message id in peer's chat of the bot self.
func seenKey(self wire.ID, peer msg.Peer, id msg.MessageID) string {
	return self.String() + "/" + peer.String() + "/" + string(id)
}

// reporter logs the outcome of message id, when it is a failure.
func (a *Account) reporter(id msg.MessageID) func(error) {
	return func(err error) {
		if err != nil && !errors.Is(err, channel.ErrDuplicate) && !errors.Is(err, channel.ErrMerged) && !errors.Is(err, channel.ErrStopped) {
			a.log.Warn("dispatch", "err", err, "msg_id", string(id))
		}
	}
}

// dispatch hands m to a sink that takes messages one at a time.
func dispatch(ctx context.Context, sink channel.Sink, m msg.Message, r channel.Replier, report func(error), wg *sync.WaitGroup) {
	wg.Go(func() { report(sink.Dispatch(ctx, m, r)) })
}
