// Package engine is pincer's channel-neutral reply engine: it takes an
// inbound message, finds its session, runs the agent over the session
// transcript and hands the streamed reply back to the channel.
package engine

import (
	"context"
	"errors"
	"fmt"
	"github.com/pincerbot/pincer/internal/trace"
	"hash/fnv"
	"log/slog"
	"runtime"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pincerbot/pincer/internal/agent"
	"github.com/pincerbot/pincer/internal/channel"
	"github.com/pincerbot/pincer/internal/command"
	"github.com/pincerbot/pincer/internal/lazylog"
	"github.com/pincerbot/pincer/internal/limits"
	"github.com/pincerbot/pincer/internal/llm"
	"github.com/pincerbot/pincer/internal/msg"
	"github.com/pincerbot/pincer/internal/reply"
	"github.com/pincerbot/pincer/internal/store"
	"github.com/pincerbot/pincer/internal/texts"
)

// Options configure an Engine.
type Options struct {
	Store  store.Store
	Runner *agent.Runner
	// Trace, when set, learns each turn's agent run and delivery, as
	// steps of the message the turn answers.
	Trace *trace.Recorder
	// AgentID names the agent sessions belong to; "main" when empty.
	AgentID string
	// Models is the model chain, primary first.
	Models []llm.Ref
	// System returns the system prompt for a turn; it may read workspace
	// files, so it is called per turn.
	System func() string
	// DedupTTL is how long an inbound message id is remembered; 20 min
	// when zero.
	DedupTTL time.Duration
	// Location is the timezone envelopes show; nil means local.
	Location *time.Location
	// ResponsePrefix is the template prepended to replies.
	ResponsePrefix string
	// HumanDelay paces streamed blocks.
	HumanDelay reply.DelayRange
	// Blocks, when set, streams replies as blocks to channels that do not
	// show live text.
	Blocks *reply.ChunkOptions
	// Policy decides who may run commands; the zero policy grants none.
	Policy command.Policy
	// Aliases map short model names to provider/model refs for /model.
	Aliases map[string]string
	// ContextTokens is the context budget /status and /context report.
	ContextTokens int
	// Queue is the default queue behaviour; QueueByChannel overrides the
	// mode per channel, and a session's /queue setting overrides both.
	Queue          QueueSettings
	QueueByChannel map[msg.ChannelID]QueueMode
	// MaxConcurrent bounds the agent runs across all sessions; 0 means
	// min(16, max(8, CPUs)). A run waiting for its provider's first word
	// lends its slot after SlotPatience.
	MaxConcurrent int
	// TurnTimeout bounds one turn's model run, retries, fallbacks and
	// tools included; 10 min when zero.
	TurnTimeout time.Duration
	// Heartbeat schedules check-in turns; see RunHeartbeat.
	Heartbeat Heartbeat
	// IdleReset starts a new session when one was idle this long; 0 never.
	IdleReset time.Duration
	// AutoCompact summarizes older turns when a transcript nears the
	// context budget.
	AutoCompact bool
	// Identity is the agent's name, for the {identity} prefix variable.
	Identity string
	// DMScope and GroupScope choose session keys (see SessionKey); empty
	// means one session per peer.
	DMScope, GroupScope string
	// ElevatedAllowFrom admits senders to /elevate, in the form of
	// command.Policy entries.
	ElevatedAllowFrom []string
	// Media, when set, reads a turn's pictures, voice notes and links
	// before the agent runs; SeesImages says which models are shown the
	// pictures themselves rather than notes about them.
	Media      MediaReader
	SeesImages func(llm.Ref) bool
	// A reply may send local files (its "MEDIA: <path>" lines) from its
	// chat's folder (ChatDir), from the Workspace outside the folders that
	// hold chats (ChatsDirs: one chat's files never reach another), and
	// from MediaRoots; relative paths are taken from Workspace. None of
	// them: replies send URLs only.
	ChatDir    func(msg.Message) string
	ChatsDirs  []string
	Workspace  string
	MediaRoots []string
	// MediaURL, when set, vets the http(s) URLs a reply sends (the
	// platform fetches them, so they must not point into pincer's own
	// network); an error keeps the URL from being sent.
	MediaURL func(ctx context.Context, rawURL string) error
	// Limits, when set, holds the turns over a person's or a chat's caps
	// before any model call and counts the tokens turns spend.
	Limits *limits.Limiter
	// Chat, when set, gives the settings of a message's chat, nil for the
	// engine's own (the fields above). It is called for every turn and
	// must be cheap: a lookup of settings computed beforehand.
	Chat func(m msg.Message) *ChatSettings
	// Locale is the language of what the engine tells a person: command
	// answers and failure notices. The zero Locale is texts.Default.
	Locale  texts.Locale
	Metrics *Metrics
	Logger  *slog.Logger
}

// ChatSettings are the settings of one chat's turns, in place of the
// engine's Options. A chat's settings are shared by its turns: never
// change them.
type ChatSettings struct {
	// System returns the chat's system prompt; it is called per turn.
	System func() string
	// Models is the chat's model chain, primary first; empty keeps
	// Options.Models. A session's /model still goes first.
	Models []llm.Ref
	// Thinking is the reasoning level of a session that chose none with
	// /think.
	Thinking string
	// QueueMode, when set, and QueueCap, when positive, replace the
	// queue's mode and cap; a session's /queue still wins.
	QueueMode QueueMode
	QueueCap  int
	// HumanDelay, Blocks and ResponsePrefix replace the engine's.
	HumanDelay     reply.DelayRange
	Blocks         *reply.ChunkOptions
	ResponsePrefix string
	// ToolAllowed, when set, says which tools the chat's turns may use.
	ToolAllowed func(name string) bool
	// Describe, when set, describes pictures for a model of the chat that
	// cannot see them, in place of the runner's (the chat's image model).
	Describe func(ctx context.Context, img llm.Image) (string, error)
}

// chatOf returns the settings of m's chat.
func (e *Engine) chatOf(m msg.Message) *ChatSettings {
	if e.opts.Chat != nil {
		if cs := e.opts.Chat(m); cs != nil {
			return cs
		}
	}
	return &e.defaults
}

// Engine dispatches inbound messages to agent turns. It is a channel.Sink.
type Engine struct {
	opts Options
	log  *slog.Logger
	// defaults are the settings of chats Options.Chat says nothing of.
	defaults ChatSettings

	// base parents every turn's context; cancelling it cuts in-flight
	// turns at the end of a shutdown grace period.
	base   context.Context
	cancel context.CancelFunc

	// state guards closed; dispatches hold it shared while they join
	// inflight, so Close never races an Add.
	state    sync.RWMutex
	closed   bool
	inflight sync.WaitGroup
	// flights are the turns in flight, by message (see Release).
	flights flights
	// shards hold the per-session state, spread by session key so that
	// sessions never contend on one lock.
	shards [64]shard

	// last is the conversation last heard from, for heartbeats.
	last atomic.Pointer[target]
	// slots bounds concurrent agent runs across sessions.
	slots chan struct{}

	registry *command.Registry
	handlers map[string]handler
}

// shard holds the per-session state of the sessions whose keys hash to it.
type shard struct {
	mu sync.Mutex
	// locks serialize transcript changes per session.
	locks map[string]*sessionLock
	// active holds the cancel function of each session's running turn.
	active map[string]context.CancelCauseFunc
	// lanes schedule each busy session's turns.
	lanes map[string]*lane
}

// shard returns the shard of a session key.
func (e *Engine) shard(key string) *shard {
	h := fnv.New32a()
	_, _ = h.Write([]byte(key)) // hash writes never fail
	return &e.shards[h.Sum32()%uint32(len(e.shards))]
}

type sessionLock struct {
	mu   sync.Mutex
	refs int
}

var _ channel.Sink = (*Engine)(nil)

// Dispatch returns channel.ErrClosed after Close has begun and
// channel.ErrDuplicate for a message already dispatched.

// New returns an Engine.
func New(o Options) *Engine {
	if o.AgentID == "" {
		o.AgentID = "main"
	}
	if o.DedupTTL == 0 {
		o.DedupTTL = 20 * time.Minute
	}
	if o.Queue.Mode == "" {
		o.Queue = QueueSettings{Mode: QueueSteer, Cap: 20, Drop: DropSummarize, Debounce: 500 * time.Millisecond}
	}
	if o.MaxConcurrent <= 0 {
		o.MaxConcurrent = min(16, max(8, runtime.NumCPU()))
	}
	if o.TurnTimeout <= 0 {
		o.TurnTimeout = 10 * time.Minute
	}
	if o.System == nil {
		o.System = func() string { return "" }
	}
	if o.Metrics == nil {
		o.Metrics, _ = NewMetrics(nil) // nothing to register, so no error
	}
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	base, cancel := context.WithCancel(context.Background())
	e := &Engine{
		opts: o, log: log.With("component", "engine"), base: base, cancel: cancel,
		registry: command.NewRegistry(), handlers: map[string]handler{},
		slots: make(chan struct{}, o.MaxConcurrent),
	}
	e.defaults = ChatSettings{System: o.System, Models: o.Models, HumanDelay: o.HumanDelay, Blocks: o.Blocks, ResponsePrefix: o.ResponsePrefix}
	for i := range e.shards {
		sh := &e.shards[i]
		sh.locks, sh.active, sh.lanes = map[string]*sessionLock{}, map[string]context.CancelCauseFunc{}, map[string]*lane{}
	}
	for _, b := range e.builtins() {
		if err := e.registry.Register(b.spec); err != nil {
			e.log.Error("built-in command not registered", "err", err)
			continue
		}
		e.handlers[b.spec.Name] = b.run
	}
	return e
}

// Commands lists the registered commands.
func (e *Engine) Commands() *command.Registry { return e.registry }

// Session scopes.
const (
	// ScopePerPeer gives each direct chat, or each group, a session.
	ScopePerPeer = "per-peer"
	// ScopePerGroup is ScopePerPeer for groups.
	ScopePerGroup = "per-group"
	// ScopeMain puts all direct chats (or all groups) in the agent's main
	// session.
	ScopeMain = "main"
)

// Tracer returns the decision trace recorder the engine writes to; nil
// when there is none.
func (e *Engine) Tracer() *trace.Recorder { return e.opts.Trace }

// SessionKey returns the session a message belongs to:
// "agent:<agent>:<channel>:group:<id>" per group and
// "agent:<agent>:<channel>:direct:<id>" per direct peer by default, so two
// people never share a transcript; "agent:<agent>:main" where a scope is
// main.
func (e *Engine) SessionKey(m msg.Message) string {
	scope := e.opts.DMScope
	if m.Peer.Kind == msg.Group {
		scope = e.opts.GroupScope
	}
	if scope == ScopeMain {
		return "agent:" + e.opts.AgentID + ":main"
	}
	return fmt.Sprintf("agent:%s:%s:%s:%s", e.opts.AgentID, m.Channel, m.Peer.Kind, m.Peer.ID)
}

// Dispatch handles m as a plain message (every body is its text); see
// DispatchContext.
func (e *Engine) Dispatch(ctx context.Context, m msg.Message, r channel.Replier) error {
	return e.DispatchContext(ctx, NewMsgContext(m), r)
}

// DispatchContext handles one inbound turn whose bodies the caller prepared
// (the pipeline adds history and quotes to BodyForAgent). A message already
// seen is refused with channel.ErrDuplicate. A command the sender may run is
// answered at once; anything else becomes an agent turn, queued behind the
// session's running turn per its queue mode. The turn is detached from
// ctx's cancellation: a client that goes away does not cut a reply, which is
// persisted in the transcript either way. DispatchContext returns when the
// reply has been delivered.
func (e *Engine) DispatchContext(ctx context.Context, mc MsgContext, r channel.Replier) error {
	m := mc.Message
	e.state.RLock()
	if e.closed {
		e.state.RUnlock()
		return channel.ErrClosed
	}
	e.inflight.Add(1)
	e.state.RUnlock()
	defer e.inflight.Done()

	turnCtx, cancel := context.WithCancelCause(e.base)
	defer cancel(nil)
	log := lazylog.With(e.log, "channel", string(m.Channel), "peer", m.Peer.String(), "msg_id", string(m.ID))
	key := TurnKey(m)
	f := e.track(m, key, cancel)
	defer e.untrack(f)
	var journal []byte
	if mc.Delivery != nil {
		var err error
		if journal, err = encodeTurn(mc); err != nil {
			return fmt.Errorf("dispatch %s: %w", m.ID, err)
		}
	}
	// The admission is not cut halfway by a shutdown or a Release: once
	// it is in the journal, the turn is resumed (here after a restart, or
	// by the chat's next owner) rather than lost between the two.
	admitted, err := e.opts.Store.AdmitTurn(context.WithoutCancel(turnCtx), key, e.opts.DedupTTL, journal, mc.Consume)
	if err != nil && released(turnCtx) {
		return ErrReleased
	}
	if err != nil {
		e.storageFailed(ctx, log, m, r, err)
		return fmt.Errorf("dispatch %s: %w", m.ID, err)
	}
	if !admitted {
		e.opts.Metrics.inbound.WithLabelValues(string(m.Channel), "duplicate").Inc()
		log.Info("duplicate message dropped")
		return channel.ErrDuplicate
	}
	e.opts.Metrics.inbound.WithLabelValues(string(m.Channel), "accepted").Inc()
	e.noteActive(m)
	mc.SessionKey, mc.Key = e.SessionKey(m), key
	mc.finished = new(atomic.Bool)
	defer func() {
		// A turn cut by shutdown before it concluded stays in the journal,
		// to be resumed, and so does one cut by Release; the turns that
		// concluded finished themselves, and what was dropped or refused
		// is finished here.
		if journal != nil && e.base.Err() == nil && !f.cut.Load() && !mc.finished.Load() {
			e.finish(log, key)
		}
	}()
	err = e.dispatch(turnCtx, log, Finalize(mc, e.opts.Policy), r)
	if f.cut.Load() && !mc.finished.Load() {
		return ErrReleased
	}
	return err
}

// TurnKey is the dedup key of an inbound message, which also names its
// turn in the journal and its replies in the outbox.
func TurnKey(m msg.Message) string {
	return fmt.Sprintf("in:%s:%s:%s:%s", m.Channel, m.Account, m.Peer, m.ID)
}

// finish takes concluded turns out of the journal.
func (e *Engine) finish(log *slog.Logger, keys ...string) {
	if err := e.opts.Store.FinishTurn(context.Background(), keys...); err != nil {
		log.Warn("finished turn stays in the journal; a restart would run it again", "err", err)
	}
}

// storageFailed tells a direct chat that its message could not be handled
// because the store failed; groups are not told (the operator sees the
// error and /healthz).
func (e *Engine) storageFailed(ctx context.Context, log *slog.Logger, m msg.Message, r channel.Replier, err error) {
	log.Error("message not handled: the store failed", "err", err)
	if m.Peer.Kind != msg.Direct || r == nil {
		return
	}
	out := msg.Outbound{Account: m.Account, Peer: m.Peer, IsError: true,
		Text: e.opts.Locale.Text(texts.StorageFailed)}
	if _, derr := r.Deliver(context.WithoutCancel(ctx), out); derr != nil {
		log.Warn("storage failure notice not delivered", "err", derr)
	}
}

// dispatch runs a finalized context: as a command when it is one the
// sender may run, else as an agent turn.
func (e *Engine) dispatch(ctx context.Context, log *slog.Logger, mc MsgContext, r channel.Replier) error {
	text, handled, err := e.command(ctx, &mc)
	if !handled {
		if !mc.Resumed && e.held(ctx, log, mc, r) {
			return nil
		}
		return e.enqueue(ctx, log, mc, r)
	}
	if released(ctx) {
		return ErrReleased // the chat's next owner answers it
	}
	if err != nil {
		log.Error("command failed", "err", err)
		text = e.opts.Locale.Format(texts.CommandFailed, err)
	}
	e.opts.Metrics.turns.WithLabelValues("command").Inc()
	out := msg.Outbound{ID: mc.Key + "#cmd", Account: mc.Message.Account, Peer: mc.Message.Peer, Text: text, IsError: err != nil}
	if _, err := r.Deliver(context.WithoutCancel(ctx), out); err != nil {
		log.Error("deliver command reply", "err", err)
	}
	return nil
}

// errAborted is the cause of a turn stopped by the user.
var errAborted = errors.New("stopped by the user")

// abort stops the session's running turn and says what happened.
func (e *Engine) abort(key string) string {
	sh := e.shard(key)
	sh.mu.Lock()
	cancel := sh.active[key]
	sh.mu.Unlock()
	if cancel == nil {
		return e.opts.Locale.Text(texts.StopNothing)
	}
	cancel(errAborted)
	return e.opts.Locale.Text(texts.Stopped)
}

func (e *Engine) isActive(key string) bool {
	sh := e.shard(key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	return sh.active[key] != nil
}

func (e *Engine) lock(key string) func() {
	sh := e.shard(key)
	sh.mu.Lock()
	l := sh.locks[key]
	if l == nil {
		l = &sessionLock{}
		sh.locks[key] = l
	}
	l.refs++
	sh.mu.Unlock()
	l.mu.Lock()
	return func() {
		l.mu.Unlock()
		sh.mu.Lock()
		if l.refs--; l.refs == 0 {
			delete(sh.locks, key)
		}
		sh.mu.Unlock()
	}
}

// History returns the current transcript of the session m's peer belongs
// to, for channels that show past conversation (the web chat).
func (e *Engine) History(ctx context.Context, ch msg.ChannelID, peer msg.Peer) ([]store.Turn, error) {
	tr, err := e.opts.Store.Transcript(ctx, e.SessionKey(msg.Message{Channel: ch, Peer: peer}))
	if err != nil {
		return nil, fmt.Errorf("history of %s: %w", peer, err)
	}
	return tr, nil
}

// errPanic reports a panic inside an agent run.
var errPanic = errors.New("internal error")

// runAgent runs the agent and turns a panic anywhere below it into an
// error, so the dispatcher is always completed and drained and typing always
// stops: a bug in a provider or tool can cost a reply, never hang a chat.
func (e *Engine) runAgent(ctx context.Context, log *slog.Logger, in agent.Input) (out agent.Output, err error) {
	defer func() {
		if p := recover(); p != nil {
			log.Error("agent run panicked", "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
			err = fmt.Errorf("%w: %v", errPanic, p)
		}
	}()
	return e.opts.Runner.Run(ctx, in)
}

// ErrorNotice is what a direct chat is told, in locale t, when its turn
// failed: which model failed and how (refused, timed out, rejected the
// key), and what the user can do.
func ErrorNotice(t texts.Locale, err error) string {
	var le *llm.Error
	if errors.Is(err, errTurnTimeout) {
		return t.Text(texts.NoticeTurnTimeout)
	}
	if !errors.As(err, &le) {
		switch {
		case errors.Is(err, context.Canceled):
			return t.Text(texts.NoticeInterrupted)
		case errors.Is(err, agent.ErrNoModel):
			return t.Text(texts.NoticeNoModel)
		}
		return t.Text(texts.NoticeInternal)
	}
	model := t.Text(texts.NoticeTheModel)
	if le.Provider != "" {
		model = le.Provider
		if le.Model != "" {
			model += "/" + le.Model
		}
	}
	status := ""
	if le.Status != 0 {
		status = t.Format(texts.NoticeHTTPStatus, le.Status)
	}
	var notice texts.Key
	switch le.Reason {
	case llm.ReasonCanceled:
		return t.Text(texts.NoticeInterrupted)
	case llm.ReasonNetwork:
		return t.Format(texts.NoticeNetwork, model)
	case llm.ReasonTruncated:
		return t.Format(texts.NoticeTruncated, model)
	case llm.ReasonRateLimit:
		notice = texts.NoticeRateLimit
	case llm.ReasonOverloaded:
		notice = texts.NoticeOverloaded
	case llm.ReasonTimeout:
		notice = texts.NoticeTimeout
	case llm.ReasonServer:
		notice = texts.NoticeServer
	case llm.ReasonAuth:
		notice = texts.NoticeAuth
	case llm.ReasonNotFound:
		notice = texts.NoticeNotFound
	case llm.ReasonQuota:
		notice = texts.NoticeQuota
	case llm.ReasonInvalid:
		notice = texts.NoticeInvalid
	default:
		notice = texts.NoticeFailed
	}
	return t.Format(notice, model, status)
}

// Close stops accepting messages and waits for in-flight turns. When ctx
// ends first, running turns are cut; their partial replies are persisted and
// delivered, and Close waits for that before returning ctx's error.
func (e *Engine) Close(ctx context.Context) error {
	e.state.Lock()
	e.closed = true
	e.state.Unlock()
	done := make(chan struct{})
	go func() {
		e.inflight.Wait()
		close(done)
	}()
	select {
	case <-done:
		e.cancel()
		return nil
	case <-ctx.Done():
		e.cancel()
		<-done
		return ctx.Err()
	}
}
