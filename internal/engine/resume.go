package engine

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"

	"github.com/pincerbot/pincer/internal/channel"
	"github.com/pincerbot/pincer/internal/msg"
	"github.com/pincerbot/pincer/internal/reply"
	"github.com/pincerbot/pincer/internal/store"
)

// Resume answers the turns a previous run admitted and did not finish (it
// crashed, was killed, or shutdown cut them before anything went out).
// replier rebuilds a turn's reply path from its Delivery spec; false drops
// the turn. Resume starts the turns and returns how many; they run like
// any other and Close waits for them.
//
// What the turn's reply had stored in the outbox before the restart is
// delivered by the outbox, each payload once; Resume sends only the rest,
// once:
//
//   - A turn whose reply the transcript holds (the model had finished) is
//     not asked again: what of that reply is not among its stored payloads
//     is delivered, numbered after them (usually nothing, or the last
//     block).
//   - A turn whose reply was cut in the middle (block streaming: some
//     blocks stored, the model still writing) is run once more to finish
//     it. The model is shown the stored part as its own reply so far,
//     followed by a note that it was cut off there, that the user has it,
//     and that it is to go on from there without repeating it. A note
//     rather than a trailing assistant message to continue: Anthropic
//     continues one, OpenAI-compatible servers generally answer it as a
//     new turn, and one chain may hold both. The run's payloads are
//     numbered after the stored ones, so none of theirs is taken for one
//     already sent; a run that starts by repeating blocks the user has
//     seen (whitespace aside) has those blocks dropped, and the transcript
//     keeps the reply as the user got it: the stored part and the rest, as
//     one assistant turn.
//   - A turn without stored payloads is run again as it was.
//
// The messages one reply answered together (a batch) are resumed as one
// turn, through the newest of them, which their reply was for. A turn is
// run again once: one that was resumed before and still did not finish is
// given up, with an error in the log.
//
// Resume is ResumeWhere for every turn.
func (e *Engine) Resume(ctx context.Context, replier func(MsgContext) (channel.Replier, bool)) (int, error) {
	return e.ResumeWhere(ctx, replier, nil)
}

// ResumeWhere is Resume for the pending turns whose message keep accepts
// (nil: all), for a process that takes those chats over from another
// (see Release): a turn the other process admitted and did not finish is
// answered here, by the rules above. A turn in flight here already is
// left to run.
func (e *Engine) ResumeWhere(ctx context.Context, replier func(MsgContext) (channel.Replier, bool), keep func(msg.Message) bool) (int, error) {
	pending, err := e.opts.Store.PendingTurns(ctx)
	if err != nil {
		return 0, fmt.Errorf("resume turns: %w", err)
	}
	var sessions []string
	bySession := map[string][]*pendingTurn{}
	for _, p := range pending {
		log := e.log.With("turn", p.Key)
		if e.inFlight(p.Key) {
			continue
		}
		mc, err := decodeTurn(p.Turn)
		if err != nil {
			// Which chat it is of, its key says.
			if m, ok := keyMessage(p.Key); keep != nil && (!ok || !keep(m)) {
				continue
			}
			log.Error("turn given up: its journal record cannot be read", "err", err)
			e.drop(ctx, log, p.Key, "turn given up")
			continue
		}
		if keep != nil && !keep(mc.Message) {
			continue
		}
		mc.Key, mc.Resumed, mc.SessionKey = p.Key, true, e.SessionKey(mc.Message)
		log = log.With("channel", string(mc.Message.Channel), "peer", mc.Message.Peer.String(), "msg_id", string(mc.Message.ID))
		if bySession[mc.SessionKey] == nil {
			sessions = append(sessions, mc.SessionKey)
		}
		bySession[mc.SessionKey] = append(bySession[mc.SessionKey], &pendingTurn{PendingTurn: p, mc: mc, log: log})
	}
	started := 0
	for _, key := range sessions {
		n, err := e.resumeSession(ctx, key, bySession[key], replier)
		started += n
		if err != nil {
			return started, err
		}
	}
	return started, nil
}

// pendingTurn is a journaled turn being resumed.
type pendingTurn struct {
	store.PendingTurn
	mc  MsgContext
	log *slog.Logger
}

// resumeSession resumes the pending turns of one session, oldest first.
func (e *Engine) resumeSession(ctx context.Context, key string, turns []*pendingTurn, replier func(MsgContext) (channel.Replier, bool)) (int, error) {
	tr, err := e.opts.Store.Transcript(ctx, key)
	if err != nil {
		return 0, fmt.Errorf("resume turns of %s: %w", key, err)
	}
	sess, err := e.opts.Store.Session(ctx, key)
	if err != nil {
		sess = store.Session{Key: key} // a session never opened: no options
	}
	// The session's turns are of one chat.
	cs := e.chatOf(turns[0].mc.Message)
	vars := reply.PrefixVars{ThinkingLevel: thinkingLevel(sess, cs), Identity: e.opts.Identity}
	if models := e.chain(sess, cs.Models); len(models) > 0 {
		vars.Provider, vars.Model = models[0].Provider, models[0].Model
	}
	end := tailOf(tr)
	// The unanswered messages at the transcript's end were one batch: the
	// newest of them is resumed for all.
	newestOpen, newestAt := -1, -1
	for i, p := range turns {
		if at := end.find(tr, end.open, p.mc.BodyForAgent); at >= newestAt && at >= 0 {
			newestOpen, newestAt = i, at
		}
	}
	started := 0
	for i, p := range turns {
		stored, err := e.opts.Store.OutboxEntries(ctx, p.Key+"#")
		if err != nil {
			return started, fmt.Errorf("resume turn %s: %w", p.Key, err)
		}
		res, answered := readStored(stored, cs.ResponsePrefix, vars)
		if answered {
			e.drop(ctx, p.log, p.Key, "turn answered before the restart; its reply is delivered from the outbox")
			continue
		}
		if at := end.find(tr, end.asked, p.mc.BodyForAgent); at >= 0 {
			if at != end.owner {
				e.drop(ctx, p.log, p.Key, "turn answered before the restart by the reply to a newer message")
				continue
			}
			r, ok := replier(p.mc)
			if !ok {
				e.drop(ctx, p.log, p.Key, "turn given up: its chat is no longer configured")
				continue
			}
			rest, known := res.unsent(end.text)
			if !known {
				p.log.Warn("the reply's stored part is not where its transcript has it: nothing more is sent, so nothing is sent twice", "stored", len(stored))
			}
			if rest == "" {
				e.drop(ctx, p.log, p.Key, "turn answered before the restart; its reply is delivered from the outbox")
				continue
			}
			p.log.Info("turn answered before the restart; the rest of its reply is delivered", "stored", len(stored))
			if !e.start(p, func(ctx context.Context, _ *flight) {
				e.deliverRest(ctx, p.log, p.mc, r, rest, res.from()+1, vars)
			}) {
				return started, channel.ErrClosed
			}
			started++
			continue
		}
		if end.find(tr, end.open, p.mc.BodyForAgent) >= 0 && i != newestOpen {
			e.drop(ctx, p.log, p.Key, "turn resumed with the newer message it was asked with")
			continue
		}
		attempts, err := e.opts.Store.ResumeTurn(ctx, p.Key)
		if err != nil {
			return started, fmt.Errorf("resume turn %s: %w", p.Key, err)
		}
		if attempts > 1 {
			p.log.Error("turn given up: it did not finish after the last restart either", "admitted", p.At)
			e.drop(ctx, p.log, p.Key, "turn given up")
			continue
		}
		r, ok := replier(p.mc)
		if !ok {
			e.drop(ctx, p.log, p.Key, "turn given up: its chat is no longer configured")
			continue
		}
		mc, log := p.mc, p.log
		mc.resume = res
		if res != nil {
			log.Info("resuming a turn cut in the middle of its reply: the model is asked for the rest", "stored", len(stored))
		} else {
			log.Info("resuming a turn admitted before the restart")
		}
		if !e.start(p, func(ctx context.Context, f *flight) {
			if err := e.dispatch(ctx, log, Finalize(mc, e.opts.Policy), r); err != nil && !f.cut.Load() {
				log.Warn("resumed turn", "err", err)
			}
		}) {
			return started, channel.ErrClosed
		}
		started++
	}
	return started, nil
}

// drop takes a turn out of the journal, saying why.
func (e *Engine) drop(ctx context.Context, log *slog.Logger, key, why string) {
	if err := e.opts.Store.FinishTurn(ctx, key); err != nil {
		log.Warn("turn not taken out of the journal", "err", err)
	}
	log.Info(why)
}

// start runs a resumed turn's work like any other turn's, so that Close
// waits for it and Release finds it, and then takes the turn out of the
// journal unless shutdown or Release cut it. work runs with the turn's
// context. It is false once the engine is closed.
func (e *Engine) start(p *pendingTurn, work func(ctx context.Context, f *flight)) bool {
	e.state.RLock()
	if e.closed {
		e.state.RUnlock()
		return false
	}
	e.inflight.Add(1)
	e.state.RUnlock()
	ctx, cancel := context.WithCancelCause(e.base)
	f := e.track(p.mc.Message, p.Key, cancel)
	go func() {
		defer e.inflight.Done()
		defer e.untrack(f)
		defer cancel(nil)
		work(ctx, f)
		if e.base.Err() == nil && !f.cut.Load() {
			e.finish(p.log, p.Key)
		}
	}()
	return true
}

// deliverRest sends the part of a finished reply that was not stored
// before the restart, as payload n of the turn.
func (e *Engine) deliverRest(turnCtx context.Context, log *slog.Logger, mc MsgContext, r channel.Replier, rest string, n int, vars reply.PrefixVars) {
	ctx := context.WithoutCancel(turnCtx)
	m := mc.Message
	p := msg.Outbound{Account: m.Account, Peer: m.Peer, Text: rest}
	e.attach(ctx, log, m, &p)
	norm := reply.Normalizer{Prefix: e.chatOf(m).ResponsePrefix, Vars: vars, OnSkip: func(reason reply.SkipReason, _ msg.Outbound) {
		log.Info("reply not delivered", "reason", string(reason))
	}}
	p, ok := norm.Normalize(reply.KindFinal, p)
	if !ok {
		return
	}
	p.ID = mc.Key + "#" + strconv.Itoa(n)
	if released(turnCtx) {
		return // the chat's next owner sends it
	}
	if _, err := r.Deliver(ctx, p); err != nil {
		log.Error("deliver reply", "kind", string(reply.KindFinal), "err", err)
	}
}
