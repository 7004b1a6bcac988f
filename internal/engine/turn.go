package engine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/pincerbot/pincer/internal/agent"
	"github.com/pincerbot/pincer/internal/channel"
	"github.com/pincerbot/pincer/internal/llm"
	"github.com/pincerbot/pincer/internal/msg"
	"github.com/pincerbot/pincer/internal/prompt"
	"github.com/pincerbot/pincer/internal/reply"
	"github.com/pincerbot/pincer/internal/store"
)

// turn runs w as an agent turn on its session and, while messages are
// steered into it, goes on with them in the same turn. It returns w's
// result; steered messages get theirs through their done channels.
func (e *Engine) turn(ctx context.Context, log *slog.Logger, w *waiting, l *lane) error {
	key := w.mc.SessionKey
	unlock := e.lock(key)
	defer unlock()
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	sh := e.shard(key)
	sh.mu.Lock()
	sh.active[key] = cancel
	sh.mu.Unlock()
	defer func() {
		sh.mu.Lock()
		delete(sh.active, key)
		sh.mu.Unlock()
	}()
	first, cur := w, w
	for {
		ok, err := e.call(ctx, cur.log, cur.mc, cur.r, l)
		if cur != first {
			cur.done <- err
		}
		if err != nil {
			return err
		}
		next, merged := e.takeSteered(l)
		if next == nil {
			return nil
		}
		if !ok {
			// The call failed or was stopped: steered messages wait for a
			// turn of their own.
			sh.mu.Lock()
			l.steered = append(append(merged, next), l.steered...)
			sh.mu.Unlock()
			return nil
		}
		for _, m := range merged {
			m.done <- channel.ErrMerged
		}
		log.Info("steering the running turn", "messages", len(merged)+1)
		cur = next
	}
}

// call appends mc to the transcript, runs one agent call and delivers the
// reply. ok is false when the call failed or was stopped.
func (e *Engine) call(ctx context.Context, log *slog.Logger, mc MsgContext, r channel.Replier, l *lane) (ok bool, err error) {
	key := mc.SessionKey
	start := time.Now()
	st := e.opts.Store
	sess, created, err := st.OpenSession(ctx, key, e.opts.AgentID)
	if err != nil {
		return false, fmt.Errorf("turn %s: %w", key, err)
	}
	if idle := e.opts.IdleReset; idle > 0 && !created && time.Since(sess.UpdatedAt) > idle {
		log.Info("session idle: starting a new one", "idle", time.Since(sess.UpdatedAt).Round(time.Second).String())
		if sess, err = st.ResetSession(ctx, key, "idle"); err != nil {
			return false, fmt.Errorf("turn %s: %w", key, err)
		}
	}
	prior, err := st.Transcript(ctx, key)
	if err != nil {
		return false, fmt.Errorf("turn %s: %w", key, err)
	}
	system := e.opts.System()
	if e.opts.AutoCompact && e.opts.Runner.NeedsCompaction(system, prior) {
		if compacted, err := e.compact(ctx, log, sess, prior); err != nil {
			log.Warn("automatic compaction failed; older turns are dropped from the context instead", "err", err)
		} else {
			prior = compacted
		}
	}
	body := mc.BodyForAgent
	if dropped := e.takeDropped(l); len(dropped) > 0 {
		body = droppedNotice(dropped) + body
	}
	userTurn, err := st.AppendTurn(ctx, key, e.userTurn(mc, body, prior))
	if err != nil {
		return false, fmt.Errorf("turn %s: %w", key, err)
	}
	log.Debug("agent turn", "session", key, "body", userTurn.Text)

	// The reply is persisted before its final delivery, so a crash while
	// delivering cannot lose it. The turn's context may be cut by shutdown,
	// so persistence uses one of its own.
	persist := func(out agent.Output, runErr error) {
		turns := out.Turns
		if runErr != nil && out.Text != "" {
			turns = append(turns, store.Turn{Role: store.RoleAssistant, Text: out.Text, Partial: true})
		}
		pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		for _, t := range turns {
			if t.Role == store.RoleAssistant && t.Text == "" && len(t.ToolCalls) == 0 {
				continue
			}
			if _, err := st.AppendTurn(pctx, key, t); err != nil {
				log.Error("persist reply", "err", err)
				return
			}
		}
	}
	// Messages steered into the turn between model calls join it; they
	// learn the outcome once the turn is over.
	var absorbed []*waiting
	defer func() {
		for _, w := range absorbed {
			w.done <- channel.ErrMerged
		}
	}()
	steer := func() []store.Turn {
		next, merged := e.takeSteered(l)
		if next == nil {
			return nil
		}
		absorbed = append(append(absorbed, merged...), next)
		log.Info("steering the running turn between model calls")
		return []store.Turn{e.userTurn(next.mc, next.mc.BodyForAgent, prior)}
	}
	// A slot of the global limit is held for the model run only.
	select {
	case e.slots <- struct{}{}:
	case <-ctx.Done():
		return false, nil
	}
	defer func() { <-e.slots }()
	models := e.chain(sess)
	if mc.Heartbeat && e.opts.Heartbeat.Model != (llm.Ref{}) {
		models = append([]llm.Ref{e.opts.Heartbeat.Model}, models...)
	}
	runErr := e.run(ctx, log, mc, r, start, agent.Input{
		Models:     models,
		System:     system,
		Transcript: append(prior, userTurn),
		Thinking:   sess.Options[optThink],
		Elevated:   sess.Options[optElevated] != "",
		Steer:      steer,
	}, persist)
	e.opts.Metrics.turnSeconds.Observe(time.Since(start).Seconds())
	return runErr == nil, nil
}

// run runs the agent and delivers its reply through a dispatcher: as blocks
// while it streams, when configured and the channel does not show live text,
// else whole at the end.
func (e *Engine) run(ctx context.Context, log *slog.Logger, mc MsgContext, r channel.Replier, start time.Time, in agent.Input, persist func(agent.Output, error)) error {
	m := mc.Message
	outcome := "empty"
	var delivered, failed int
	base := msg.Outbound{Account: m.Account, Peer: m.Peer}
	// Delivery outlives a turn cut by shutdown: what was produced still goes out.
	deliverCtx := context.WithoutCancel(ctx)
	disp := reply.NewDispatcher(deliverCtx, reply.DispatcherOptions{
		Deliver: func(ctx context.Context, _ reply.Kind, p msg.Outbound) error {
			_, err := r.Deliver(ctx, p)
			if err == nil {
				delivered++
			}
			return err
		},
		Normalizer: &reply.Normalizer{
			Heartbeat: mc.Heartbeat,
			Prefix:    e.opts.ResponsePrefix,
			Vars:      reply.PrefixVars{Provider: in.Models[0].Provider, Model: in.Models[0].Model, ThinkingLevel: in.Thinking, Identity: e.opts.Identity},
			OnSkip: func(reason reply.SkipReason, _ msg.Outbound) {
				log.Info("reply not delivered", "reason", string(reason))
			},
		},
		HumanDelay: e.opts.HumanDelay,
		OnError: func(err error, kind reply.Kind) {
			failed++
			log.Error("deliver reply", "kind", string(kind), "err", err)
		},
	})
	var setTyping func(context.Context, bool) error
	if t, ok := r.(channel.Typer); ok {
		setTyping = t.Typing
	}
	policy := reply.TypingUser
	if mc.Heartbeat {
		policy = reply.TypingHeartbeat
	}
	typing := reply.NewTyping(ctx, reply.TypingOptions{Set: setTyping, Policy: policy, Logger: log})
	var chunker *reply.Chunker
	if pv, live := r.(channel.PartialViewer); e.opts.Blocks != nil && !(live && pv.ShowsPartial()) {
		chunker = reply.NewChunker(*e.opts.Blocks, func(block string) {
			p := base
			p.Text = block
			disp.SendBlock(p)
		})
	}

	typing.RunStarted()
	first := true
	in.OnText = func(d string) {
		if first {
			first = false
			e.opts.Metrics.firstText.Observe(time.Since(start).Seconds())
			typing.TextStarted()
		}
		r.Partial(d)
		if chunker != nil {
			chunker.Push(d)
		}
	}
	out, runErr := e.runAgent(ctx, log, in)
	persist(out, runErr)
	cause := context.Cause(ctx)
	switch {
	case errors.Is(cause, errAborted), errors.Is(cause, errInterrupted):
		// The user said stop and was told so, or a newer message took
		// over: nothing more goes out.
		log.Info("turn stopped", "why", cause.Error(), "partial", out.Text != "")
	case chunker != nil && out.Text != "":
		chunker.Flush()
	case out.Text != "":
		p := base
		p.Text = out.Text
		disp.SendFinal(p)
	case runErr != nil:
		p := base
		p.Text, p.IsError = ErrorNotice(runErr), true
		disp.SendFinal(p)
	}
	disp.MarkComplete()
	<-disp.Idle()
	typing.Stop()

	switch {
	case runErr != nil:
		outcome = "failed"
		log.Warn("agent turn failed", "err", runErr, "partial", out.Text != "")
	case failed > 0:
		outcome = "undelivered"
	case delivered > 0:
		outcome = "replied"
	default:
		log.Info("turn ended without a reply")
	}
	e.opts.Metrics.turns.WithLabelValues(outcome).Inc()
	return runErr
}

// userTurn is the transcript turn of a user message: body headed by its
// envelope, with the time since the session's previous user turn.
func (e *Engine) userTurn(mc MsgContext, body string, prior []store.Turn) store.Turn {
	m := mc.Message
	env := prompt.Envelope{Channel: string(m.Channel), Sender: m.Sender.Name, At: m.Time, Location: e.opts.Location}
	for i := len(prior) - 1; i >= 0; i-- {
		if prior[i].Role == store.RoleUser {
			env.Previous = prior[i].At
			break
		}
	}
	return store.Turn{Role: store.RoleUser, Text: env.Format(body), At: m.Time}
}
