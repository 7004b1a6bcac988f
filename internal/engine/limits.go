package engine

import (
	"context"
	"log/slog"
	"time"

	"github.com/pincerbot/pincer/internal/channel"
	"github.com/pincerbot/pincer/internal/limits"
	"github.com/pincerbot/pincer/internal/msg"
	"github.com/pincerbot/pincer/internal/texts"
	"github.com/pincerbot/pincer/internal/trace"
)

// held reports whether a limit holds mc's turn, which then makes no model
// call: the trace names the limit and when it resets, a group hears
// nothing, and a direct chat is told once per window. A limit that
// cannot be read (the store failed) holds nothing.
func (e *Engine) held(ctx context.Context, log *slog.Logger, mc MsgContext, r channel.Replier) bool {
	m := mc.Message
	v, err := e.opts.Limits.Admit(ctx, m)
	if err != nil {
		log.Warn("limits not checked; the turn runs", "err", err)
		return false
	}
	if !v.Held() {
		return false
	}
	detail := v.Detail(e.opts.Location)
	log.Info("turn held by a limit", "limit", v.Setting(), "value", v.Limit, "resets", v.Resets.Format(time.RFC3339))
	e.opts.Metrics.turns.WithLabelValues("limited").Inc()
	// The notice goes first, so the trace, once it says the turn was
	// held, says whether the chat was told.
	if m.Peer.Kind == msg.Direct && v.Notify && r != nil {
		out := msg.Outbound{ID: mc.Key + "#limit", Account: m.Account, Peer: m.Peer, Text: e.limitNotice(v)}
		if _, err := r.Deliver(context.WithoutCancel(ctx), out); err != nil {
			log.Warn("limit notice not delivered", "err", err)
			detail += "; the notice was not delivered: " + err.Error()
		} else {
			detail += "; the chat was told"
		}
	}
	e.opts.Trace.Step(trace.KeyOf(m), trace.StageLimit, "held", detail)
	return true
}

// limitNotice is what a direct chat is told when a limit held its turn.
func (e *Engine) limitNotice(v limits.Verdict) string {
	loc := e.opts.Location
	if loc == nil {
		loc = time.Local
	}
	at := v.Resets.In(loc)
	if v.Kind == limits.KindTokens {
		return e.opts.Locale.Format(texts.NoticeLimitTokens, v.Limit, at.Format("2006-01-02 15:04 MST"))
	}
	return e.opts.Locale.Format(texts.NoticeLimitMessages, v.Limit, at.Format(time.TimeOnly))
}
