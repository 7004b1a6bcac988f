package engine

import (
	"context"
	"fmt"

	"github.com/pincerbot/pincer/internal/channel"
)

// Resume answers the turns a previous run admitted and did not finish (it
// crashed, was killed, or shutdown cut them before anything went out).
// Each is run again once: a turn whose reply is already in the outbox is
// not asked again (the outbox delivers that reply), and a turn that was
// resumed before and still did not finish is given up, with an error in
// the log. replier rebuilds a turn's reply path from its Delivery spec;
// false drops the turn. Resume starts the turns and returns how many; they
// run like any other and Close waits for them.
func (e *Engine) Resume(ctx context.Context, replier func(MsgContext) (channel.Replier, bool)) (int, error) {
	pending, err := e.opts.Store.PendingTurns(ctx)
	if err != nil {
		return 0, fmt.Errorf("resume turns: %w", err)
	}
	started := 0
	for _, p := range pending {
		log := e.log.With("turn", p.Key)
		drop := func(why string) {
			if err := e.opts.Store.FinishTurn(ctx, p.Key); err != nil {
				log.Warn("turn not taken out of the journal", "err", err)
			}
			log.Info(why)
		}
		answered, err := e.opts.Store.HasOutbox(ctx, p.Key+"#")
		if err != nil {
			return started, fmt.Errorf("resume turn %s: %w", p.Key, err)
		}
		if answered {
			drop("turn answered before the restart; its reply is delivered from the outbox")
			continue
		}
		attempts, err := e.opts.Store.ResumeTurn(ctx, p.Key)
		if err != nil {
			return started, fmt.Errorf("resume turn %s: %w", p.Key, err)
		}
		if attempts > 1 {
			log.Error("turn given up: it did not finish after the last restart either", "admitted", p.At)
			drop("turn given up")
			continue
		}
		mc, err := decodeTurn(p.Turn)
		if err != nil {
			log.Error("turn given up: its journal record cannot be read", "err", err)
			drop("turn given up")
			continue
		}
		r, ok := replier(mc)
		if !ok {
			drop("turn given up: its chat is no longer configured")
			continue
		}
		mc.Key, mc.Resumed, mc.SessionKey = p.Key, true, e.SessionKey(mc.Message)
		e.state.RLock()
		if e.closed {
			e.state.RUnlock()
			return started, channel.ErrClosed
		}
		e.inflight.Add(1)
		e.state.RUnlock()
		started++
		log = log.With("channel", string(mc.Message.Channel), "peer", mc.Message.Peer.String(), "msg_id", string(mc.Message.ID))
		log.Info("resuming a turn admitted before the restart")
		go func() {
			defer e.inflight.Done()
			turnCtx, cancel := context.WithCancel(e.base)
			defer cancel()
			if err := e.dispatch(turnCtx, log, Finalize(mc, e.opts.Policy), r); err != nil {
				log.Warn("resumed turn", "err", err)
			}
			if e.base.Err() == nil {
				e.finish(log, mc.Key)
			}
		}()
	}
	return started, nil
}
