package engine

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"github.com/pincerbot/pincer/internal/trace"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pincerbot/pincer/internal/agent"
	"github.com/pincerbot/pincer/internal/channel"
	"github.com/pincerbot/pincer/internal/llm"
	"github.com/pincerbot/pincer/internal/msg"
	"github.com/pincerbot/pincer/internal/prompt"
	"github.com/pincerbot/pincer/internal/reply"
	"github.com/pincerbot/pincer/internal/store"
)

// turn runs batch as one agent turn on its session (the messages it
// answers, oldest first, each with its own sender) and, while messages are
// steered into it, goes on with them in the same turn. It returns the
// batch's result; steered messages get theirs through their done channels.
// When a call fails or is stopped, the messages steered meanwhile stay in
// the lane and wait for a turn of their own.
func (e *Engine) turn(ctx context.Context, log *slog.Logger, batch []*waiting, l *lane) error {
	key := batch[0].mc.SessionKey
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
	cur := batch
	for {
		ok, err := e.call(ctx, cur, l)
		if &cur[0] != &batch[0] {
			answer(cur, err)
		}
		if err != nil || !ok {
			return err
		}
		next := e.takeSteered(l)
		if len(next) == 0 {
			return nil
		}
		log.Info("steering the running turn", "messages", len(next))
		cur = next
	}
}

// call appends the batch's messages to the transcript, each as its own
// user turn, runs one agent call and delivers the reply through the newest
// message's replier. ok is false when the call failed or was stopped.
func (e *Engine) call(ctx context.Context, batch []*waiting, l *lane) (ok bool, err error) {
	newest := batch[len(batch)-1]
	mc, log := newest.mc, newest.log
	key := mc.SessionKey
	start := time.Now()
	st := e.opts.Store
	sess, created, prior, err := st.OpenWithTranscript(ctx, key, e.opts.AgentID)
	if err != nil {
		return false, fmt.Errorf("turn %s: %w", key, err)
	}
	if idle := e.opts.IdleReset; idle > 0 && !created && time.Since(sess.UpdatedAt) > idle {
		log.Info("session idle: starting a new one", "idle", time.Since(sess.UpdatedAt).Round(time.Second).String())
		if sess, err = st.ResetSession(ctx, key, "idle"); err != nil {
			return false, fmt.Errorf("turn %s: %w", key, err)
		}
		prior = nil // the new generation starts empty
	}
	cs := e.chatOf(mc.Message)
	system := systemFor(cs, mc.Message)
	if e.opts.AutoCompact && e.opts.Runner.NeedsCompaction(system, prior) {
		if compacted, err := e.compact(ctx, log, sess, cs.Models, prior); err != nil {
			log.Warn("automatic compaction failed; older turns are dropped from the context instead", "err", err)
		} else {
			prior = compacted
		}
	}
	dropped := e.takeDropped(l)
	models := e.chain(sess, cs.Models)
	if mc.Heartbeat && e.opts.Heartbeat.Model != (llm.Ref{}) {
		models = append([]llm.Ref{e.opts.Heartbeat.Model}, models...)
	}
	transcript := prior
	answered := len(transcript) // where the turns this call answers start
	var fresh []int             // the batch's messages not in the transcript yet
	for i, w := range batch {
		if w.mc.Resumed && inTranscript(transcript, w.mc.BodyForAgent) {
			log.Info("resumed turn: its message is in the transcript already")
			continue
		}
		fresh = append(fresh, i)
	}
	mcs := make([]MsgContext, len(fresh))
	for j, i := range fresh {
		mcs[j] = batch[i].mc
	}
	var primary llm.Ref
	if len(models) > 0 {
		primary = models[0]
	}
	reads := e.readMedia(ctx, mcs, primary)
	for j, i := range fresh {
		w := batch[i]
		body := withNotes(w.mc.BodyForAgent, reads[j])
		if i == 0 && len(dropped) > 0 {
			body = droppedNotice(dropped) + body
		}
		ut := e.userTurn(w.mc, body, transcript)
		ut.Images = reads[j].Images
		userTurn, err := e.appendTurn(ctx, key, ut)
		if err != nil {
			return false, fmt.Errorf("turn %s: %w", key, err)
		}
		log.Debug("agent turn", "session", key, "body", userTurn.Text)
		transcript = append(transcript, userTurn)
	}
	// A reply cut by a restart: the model is shown what it had sent.
	res := resumeOf(batch)
	transcript = append(transcript, res.told(mc.Message.Time)...)

	// The reply goes to the newest message and may mention everyone the
	// turn answers.
	r := &batchReplier{Wrapper: channel.Wrapper{Replier: newest.r}}
	for _, w := range batch {
		r.add(w.mc.Message.Sender)
	}
	// The reply is persisted before its final delivery, so a crash while
	// delivering cannot lose it. The turn's context may be cut by shutdown,
	// so persistence uses one of its own.
	persist := func(turns []store.Turn) {
		pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		for _, t := range res.kept(turns) {
			if t.Role == store.RoleAssistant {
				t.Text = storedReply(t.Text)
				if t.Text == "" && len(t.ToolCalls) == 0 {
					continue
				}
			}
			if _, err := e.appendTurn(pctx, key, t); err != nil {
				log.Error("persist reply", "err", err)
				return
			}
		}
	}
	// Messages steered into the turn between model calls join it, each
	// as its own user turn; they learn the outcome once the turn is over.
	var absorbed []*waiting
	defer func() {
		for _, w := range absorbed {
			w.done <- channel.ErrMerged
		}
	}()
	steer := func() []store.Turn {
		next := e.takeSteered(l)
		if len(next) == 0 {
			return nil
		}
		absorbed = append(absorbed, next...)
		log.Info("steering the running turn between model calls", "messages", len(next))
		mcs := make([]MsgContext, len(next))
		for i, w := range next {
			mcs[i] = w.mc
		}
		reads := e.readMedia(ctx, mcs, primary)
		// What a full queue dropped meanwhile heads the first of them, as
		// it heads a turn's first message: the lane forgets it after the
		// turn.
		dropped := e.takeDropped(l)
		var turns []store.Turn
		for i, w := range next {
			body := withNotes(w.mc.BodyForAgent, reads[i])
			if i == 0 && len(dropped) > 0 {
				body = droppedNotice(dropped) + body
			}
			ut := e.userTurn(w.mc, body, append(transcript, turns...))
			ut.Images = reads[i].Images
			turns = append(turns, ut)
			r.add(w.mc.Message.Sender)
		}
		return turns
	}
	// A slot of the global limit is held for the model run only, and lent
	// out while the call waits for its provider's first word.
	slot, err := e.acquire(ctx)
	if err != nil {
		return false, nil
	}
	defer slot.release()
	// The whole turn has a deadline, whatever its calls and tools do.
	runCtx, cancelRun := context.WithTimeoutCause(ctx, e.opts.TurnTimeout, errTurnTimeout)
	defer cancelRun()
	runErr, delivered := e.run(runCtx, log, mc, r, slot, start, res, agent.Input{
		Models:      models,
		System:      system,
		Transcript:  transcript,
		Fresh:       answered,
		Thinking:    requestLevel(thinkingLevel(sess, cs)),
		Elevated:    sess.Options[optElevated] != "",
		ToolAllowed: cs.ToolAllowed,
		Describe:    cs.Describe,
		Steer:       steer,
	}, persist)
	e.opts.Metrics.turnSeconds.Observe(time.Since(start).Seconds())
	// The turn concluded unless shutdown cut it before anything went out:
	// then its messages stay journaled, to be answered after the restart.
	// A turn Release cut stays journaled whatever went out, for the
	// chat's next owner to finish.
	if (e.base.Err() == nil || delivered) && !released(ctx) {
		keys := make([]string, 0, len(batch)+len(absorbed))
		var finished []*atomic.Bool
		for _, w := range append(slices.Clone(batch), absorbed...) {
			if w.mc.Delivery != nil {
				keys = append(keys, w.mc.Key)
				if w.mc.finished != nil {
					finished = append(finished, w.mc.finished)
				}
			}
		}
		if len(keys) > 0 {
			e.finish(log, keys...)
			for _, f := range finished {
				f.Store(true)
			}
		}
	}
	return runErr == nil, nil
}

// inTranscript reports whether a user turn with body was appended since
// the last reply: a resumed turn's message may be there already, after
// its envelope and before the notes of its media.
func inTranscript(tr []store.Turn, body string) bool {
	for i := len(tr) - 1; i >= 0 && tr[i].Role == store.RoleUser; i-- {
		if holdsBody(tr[i].Text, body) {
			return true
		}
	}
	return false
}

// storedReply is an assistant text as the transcript keeps it: the silent
// token beside real content is dropped (it was never said); a reply that is
// only tokens keeps one, so the model knows it stayed silent or
// acknowledged a heartbeat, and a heartbeat token beside a note stays, as
// the acknowledgement it was.
func storedReply(text string) string {
	rest, found := reply.StripTokens(text)
	switch {
	case rest == "" && found.Silent:
		return reply.SilentToken
	case rest == "" && found.Heartbeat:
		return reply.HeartbeatToken
	case found.Heartbeat:
		return strings.TrimSpace(text)
	}
	return rest
}

// batchReplier answers the messages of a turn through the newest one's
// replier and lets the reply mention every sender it answers.
type batchReplier struct {
	channel.Wrapper
	mu     sync.Mutex
	people []msg.Sender
}

// add makes one more sender mentionable (a message steered in).
func (b *batchReplier) add(s msg.Sender) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.people = append(b.people, s)
}

func (b *batchReplier) Deliver(ctx context.Context, out msg.Outbound) (msg.MessageID, error) {
	b.mu.Lock()
	out.Mentionable = append(slices.Clone(out.Mentionable), b.people...)
	b.mu.Unlock()
	return b.Replier.Deliver(ctx, out)
}

// run runs the agent and delivers its reply through a dispatcher: as blocks
// while it streams, when configured and the channel does not show live
// text, else whole at the end. The silent token never reaches the user:
// streamed text is filtered call by call, and a call that says only the
// token adds nothing. A failure is never delivered as if it were the
// answer: direct chats are told what failed, groups stay silent (the
// failure is logged and counted). Only a turn cut by shutdown delivers what
// it had produced.
func (e *Engine) run(ctx context.Context, log *slog.Logger, mc MsgContext, r channel.Replier, slot *slot, start time.Time, res *resumption, in agent.Input, persist func([]store.Turn)) (error, bool) {
	m := mc.Message
	cs := e.chatOf(m)
	var delivered, failed atomic.Int32
	var sent deliveries // what went out, and what was held back, for the trace
	base := msg.Outbound{Account: m.Account, Peer: m.Peer}
	// Delivery outlives a turn cut by shutdown: what was produced still goes out.
	deliverCtx := context.WithoutCancel(ctx)
	seq := res.from()
	disp := reply.NewDispatcher(deliverCtx, reply.DispatcherOptions{
		Deliver: func(dctx context.Context, _ reply.Kind, p msg.Outbound) error {
			if released(ctx) {
				return nil // the chat's next owner sends the rest
			}
			// Payloads are numbered in delivery order: a resumed turn's
			// replies carry the same ids and are never sent twice, and a
			// run resumed in the middle of its reply numbers on after the
			// payloads stored before the restart.
			seq++
			if mc.Key != "" {
				p.ID = mc.Key + "#" + strconv.Itoa(seq)
			}
			id, err := r.Deliver(dctx, p)
			if err == nil {
				delivered.Add(1)
			}
			sent.add(id, err)
			return err
		},
		Normalizer: &reply.Normalizer{
			Heartbeat: mc.Heartbeat,
			Prefix:    cs.ResponsePrefix,
			Vars:      reply.PrefixVars{Provider: in.Models[0].Provider, Model: in.Models[0].Model, ThinkingLevel: cmp.Or(in.Thinking, "off"), Identity: e.opts.Identity},
			OnSkip: func(reason reply.SkipReason, _ msg.Outbound) {
				log.Info("reply not delivered", "reason", string(reason))
				sent.skip(string(reason))
			},
		},
		HumanDelay: cs.HumanDelay,
		OnError: func(err error, kind reply.Kind) {
			failed.Add(1)
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
	stream := &replyStream{r: r, log: log, slot: slot}
	// A heartbeat's reply may turn out to be an acknowledgement, which is
	// known only at its end: it is neither shown live nor sent in blocks.
	if pv, ok := r.(channel.PartialViewer); ok && pv.ShowsPartial() && !mc.Heartbeat {
		stream.live = true
	} else if cs.Blocks != nil && !mc.Heartbeat {
		stream.chunker = reply.NewChunker(*cs.Blocks, func(block string) {
			stream.blocks.Add(1)
			p := base
			p.Text = block
			e.attach(deliverCtx, log, m, &p)
			disp.SendBlock(p)
		})
	}
	stream.onFirst = func() {
		e.opts.Metrics.firstText.Observe(time.Since(start).Seconds())
		typing.TextStarted()
	}
	in.Stream = res.stream(stream)

	typing.RunStarted()
	// Tools act for this chat (what they fetch and send is kept to it).
	out, runErr := e.runAgent(agent.WithChat(ctx, agent.Chat{Channel: m.Channel, Account: m.Account, Peer: m.Peer}), log, in)
	// What the calls used counts against the sender's and the chat's
	// budgets of the day, whatever became of the reply.
	e.opts.Limits.Spend(ctx, m, out.Usage.InputTokens+out.Usage.OutputTokens)
	shutdown := e.base.Err() != nil
	// Cut by Release, the turn ends as a crash would end it: nothing more
	// of it is sent or stored.
	cut := released(ctx)
	stream.finish(runErr, shutdown && !cut)
	text := stream.text()
	turns := out.Turns
	if runErr != nil && text != "" {
		turns = append(turns, store.Turn{Role: store.RoleAssistant, Text: text, Partial: true})
	}
	if !cut {
		persist(turns)
	}
	cause := context.Cause(ctx)
	outcome := "empty"
	switch {
	case cut:
		log.Info("turn released: the chat's next owner answers it", "partial", text != "")
		outcome = "released"
	case errors.Is(cause, errAborted), errors.Is(cause, errInterrupted):
		// The user said stop and was told so, or a newer message took
		// over: nothing more goes out.
		log.Info("turn stopped", "why", cause.Error(), "partial", text != "")
		outcome = "stopped"
	case runErr != nil && !shutdown:
		outcome = "failed"
		err := runErr
		if errors.Is(cause, errTurnTimeout) {
			err = fmt.Errorf("%w (%s): %w", errTurnTimeout, e.opts.TurnTimeout, runErr)
		}
		e.failure(log, m, err, stream, base, disp)
	case stream.chunker != nil:
		stream.chunker.Flush()
	case text != "" || stream.acked && !stream.silent:
		p := base
		p.Text = text
		if mc.Heartbeat && stream.acked {
			// The stream took the heartbeat token out; the normalizer
			// tells an acknowledgement by it.
			p.Text = strings.TrimSpace(text + "\n\n" + reply.HeartbeatToken)
		}
		e.attach(deliverCtx, log, m, &p)
		disp.SendFinal(p)
	case stream.silent:
		log.Info("reply not delivered", "reason", string(reply.SkipSilent))
		outcome = "silent"
	}
	disp.Finish()
	if l, ok := r.(channel.LiveEnder); ok && stream.live && !cut {
		l.EndLive(deliverCtx)
	}
	typing.Stop()

	switch {
	case outcome == "failed" || outcome == "stopped" || outcome == "silent" || outcome == "released":
	case runErr != nil:
		outcome = "cut"
		log.Warn("in-flight reply cut by shutdown", "err", runErr, "partial", text != "")
	case failed.Load() > 0:
		outcome = "undelivered"
	case delivered.Load() > 0:
		outcome = "replied"
	default:
		log.Info("turn ended without a reply")
	}
	e.opts.Metrics.turns.WithLabelValues(outcome).Inc()
	latency := time.Since(start)
	log.Info("turn", "model", out.Model.String(), "ms", latency.Milliseconds(), "outcome", outcome, "sent", delivered.Load())
	if e.opts.Trace != nil {
		key := trace.KeyOf(m)
		e.opts.Trace.Step(key, trace.StageAgent, "", agentStep(in.Models, out, runErr, latency))
		verdict, detail := sent.step(outcome, runErr)
		e.opts.Trace.Step(key, trace.StageDeliver, verdict, detail)
	}
	return runErr, delivered.Load() > 0
}

// failure handles a turn whose model run failed. Nothing cut off is sent
// as if it were the answer. A direct chat is told which model failed and
// how, after whatever it already saw; a group hears nothing, as a stray
// error message there helps no one: the failure is logged for the operator
// and counted in the turns metric.
func (e *Engine) failure(log *slog.Logger, m msg.Message, err error, stream *replyStream, base msg.Outbound, disp *reply.Dispatcher) {
	if m.Peer.Kind == msg.Group {
		log.Error("agent turn failed; nothing was sent to the group", "err", err, "shown", stream.shownAny())
		return
	}
	log.Warn("agent turn failed", "err", err, "shown", stream.shownAny())
	p := base
	p.Text, p.IsError = ErrorNotice(e.opts.Locale, err), true
	if stream.live && stream.shownAny() {
		// The live view shows the cut text: the notice follows it in the
		// same bubble, marked as an error.
		p.Text = stream.text() + "\n\n" + p.Text
	}
	disp.SendFinal(p)
}

// replyStream is the agent.Stream of one turn: it filters the control
// tokens out of each model call's text (the runner has taken the
// reasoning out already) and passes the rest to a live view or the block
// chunker, and keeps what was said for the final delivery.
type replyStream struct {
	r       channel.Replier
	log     *slog.Logger
	slot    *slot
	live    bool
	chunker *reply.Chunker
	onFirst func()
	// blocks counts blocks the chunker emitted (from its idle timer too).
	blocks atomic.Int32

	filter  reply.SilenceFilter
	inCall  bool
	call    strings.Builder // visible text of the current call
	calls   []string        // visible text of the finished calls
	shown   bool            // live text of the current call was shown
	shownAt int32           // blocks emitted when the current call began
	anyText bool
	// silent: the last call said only the silent token.
	silent bool
	// acked: a call had the heartbeat token.
	acked bool
}

var _ agent.Stream = (*replyStream)(nil)

// Begin implements agent.Stream.
func (s *replyStream) Begin() {
	s.endCall()
	s.slot.lend()
	s.inCall, s.shown, s.shownAt = true, false, s.blocks.Load()
	s.filter = reply.SilenceFilter{}
	s.call.Reset()
	if s.chunker != nil {
		s.chunker.Mark()
	}
}

// Text implements agent.Stream.
func (s *replyStream) Text(delta string) {
	s.slot.busy()
	s.emit(s.filter.Push(delta))
}

// Reasoning implements agent.Stream: nothing of it is shown, but the
// call is at work and keeps its slot.
func (s *replyStream) Reasoning(string) { s.slot.busy() }

// Shown implements agent.Stream.
func (s *replyStream) Shown() bool { return s.shown || s.blocks.Load() > s.shownAt }

// Discard implements agent.Stream: the call's text never reached anyone
// and another attempt follows.
func (s *replyStream) Discard() {
	s.inCall = false
	s.call.Reset()
	s.filter = reply.SilenceFilter{}
	if s.chunker != nil {
		s.chunker.Rollback()
	}
}

// TakeBack implements agent.Stream: the call's text so far is dropped,
// from the reply and from what the chunker has not cut into a block yet.
// A live view (a Feishu card) showed it for a moment; the delivery writes
// the reply over it. Blocks already sent cannot be taken back.
func (s *replyStream) TakeBack() {
	s.call.Reset()
	s.filter = reply.SilenceFilter{}
	if s.chunker != nil && !s.chunker.Rollback() {
		s.log.Warn("reasoning that the model's prompt opened was sent as a block before its closing tag came")
	}
}

// emit passes visible text on, separating it from an earlier call's.
func (s *replyStream) emit(text string) {
	if text == "" {
		return
	}
	if s.call.Len() == 0 && len(s.calls) > 0 {
		text = "\n\n" + text
	}
	if !s.anyText {
		s.anyText = true
		if s.onFirst != nil {
			s.onFirst()
		}
	}
	s.call.WriteString(text)
	if s.live {
		s.r.Partial(text)
		s.shown = true
	}
	if s.chunker != nil {
		s.chunker.Push(text)
	}
}

// endCall closes the current call: what the filter held back goes out
// unless it is the silent token.
func (s *replyStream) endCall() {
	if !s.inCall {
		return
	}
	s.inCall = false
	rest, silent := s.filter.End()
	s.emit(rest)
	s.silent = silent
	s.acked = s.acked || s.filter.Found().Heartbeat
	if s.call.Len() > 0 {
		s.calls = append(s.calls, s.call.String())
		s.call.Reset()
	}
}

// finish closes the stream after the run. A call that failed before any
// of it was shown is dropped, and held-back text of a failed call is not
// released, unless keep says the turn was cut by shutdown: then what was
// produced is kept to be delivered.
func (s *replyStream) finish(err error, keep bool) {
	if err == nil || keep {
		s.endCall()
		return
	}
	if s.inCall && !s.Shown() {
		s.Discard()
		return
	}
	if s.inCall {
		s.inCall = false
		if s.call.Len() > 0 {
			s.calls = append(s.calls, s.call.String())
		}
	}
}

// text is the visible reply: the calls' texts, separated by blank lines.
func (s *replyStream) text() string { return strings.Join(s.calls, "") }

// shownAny reports whether anything of the turn reached the user.
func (s *replyStream) shownAny() bool {
	return s.live && len(s.calls) > 0 || s.blocks.Load() > 0
}

// userTurn is the transcript turn of a user message: body headed by its
// envelope, with the time since the session's previous user turn.
// appendTurn adds a turn to the transcript: posted when the store can
// take it without a round trip (what the model is sent does not depend on
// the stored copy, a later read of the transcript finds it, and the
// outbox's commit before a reply goes out commits it too), appended and
// waited for otherwise.
func (e *Engine) appendTurn(ctx context.Context, key string, t store.Turn) (store.Turn, error) {
	if p, ok := e.opts.Store.(store.TurnPoster); ok {
		return t, p.PostTurn(ctx, key, t)
	}
	return e.opts.Store.AppendTurn(ctx, key, t)
}

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
