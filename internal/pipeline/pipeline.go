// Package pipeline is the channel-neutral inbound path between a chat
// account and the engine: it intercepts /summary, evaluates the trigger,
// and feeds every message to the history, realtime and digest buffers,
// each isolated from the others; flushed batches become agent turns with
// the body the agent should read.
package pipeline

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/pincerbot/pincer/internal/trace"
	"log/slog"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"github.com/pincerbot/pincer/internal/aggregate"
	"github.com/pincerbot/pincer/internal/channel"
	"github.com/pincerbot/pincer/internal/gopool"
	"github.com/pincerbot/pincer/internal/msg"
	"github.com/pincerbot/pincer/internal/store"
	"github.com/pincerbot/pincer/internal/trigger"
)

// Bot is what the pipeline knows of the bot in its account.
type Bot interface {
	// Self is the bot's user id, empty while unknown.
	Self() msg.UserID
	// SentByBot reports whether id, quoted in peer's chat, is one of the
	// bot's messages, as far as that is known without asking the
	// platform: known is false when only the platform can tell. It never
	// waits for the platform (it runs on the chat's lane).
	SentByBot(ctx context.Context, peer msg.Peer, id msg.MessageID) (mine, known bool)
}

// Asker is a Bot that can ask the platform what SentByBot does not know.
// AskSentByBot returns at once and calls then with the answer once, later,
// from another goroutine; then must not block. err, when not nil, says
// why there is no answer (mine is false then).
type Asker interface {
	AskSentByBot(ctx context.Context, id msg.MessageID, then func(mine bool, err error))
}

// Turn is one agent turn the pipeline asks for.
type Turn struct {
	// Message is the message the turn answers (the batch's first, the
	// /summary command) or, for a digest, a message standing for the chat.
	Message msg.Message
	// Body is the users' text; BodyForAgent is what the agent reads, with
	// history, quotes or the digest prompt around it.
	Body, BodyForAgent string
	// RawBody and CommandBody hold only the users' own input, for command
	// detection; empty for digests and summaries.
	RawBody, CommandBody string
	// NoCommands: the turn must never run a command, whatever its sender
	// may do (digests, summaries).
	NoCommands bool
	// Standalone: the turn is never merged with another or steered into
	// one (digests, summaries): each flush is its own turn.
	Standalone bool
	// Consume is what the turn takes out of the stored buffers; the engine
	// takes it when it admits the turn.
	Consume store.Consumed
	// Delivery describes the reply path, so a turn resumed after a
	// restart answers the same way (see ReplierFrom).
	Delivery json.RawMessage
	// Media are the pictures, voice notes and files the turn shows: its
	// messages' own, then its quote's and forwards'.
	Media []msg.Attachment
}

// Engine runs turns; the gateway adapts the engine to it.
type Engine interface {
	Turn(ctx context.Context, t Turn, r channel.Replier) error
}

// Quoter resolves the quote and forwards of a realtime batch into a block
// put before the user's text; empty when there is nothing to show. trace
// says, for the decision trace, what it resolved and spent; media are the
// attachments the block shows (the quoted message's, the forwards').
type Quoter func(ctx context.Context, b msg.Batch) (block, trace string, media []msg.Attachment)

// Options configure one account's pipeline.
type Options struct {
	Receive Settings
	// Chat, when set, gives the settings of a chat that has its own, nil
	// for the account's (Receive). It is called for every message and
	// must be cheap: a lookup of a Chat built beforehand.
	Chat   func(peer msg.Peer) *ChatRules
	Bot    Bot
	Engine Engine
	// Send delivers digests, which answer no message.
	Send func(ctx context.Context, out msg.Outbound) (msg.MessageID, error)
	// History fetches a chat's recent messages for /summary. LocalHistory
	// reads what pincer logged itself: /summary uses it when History is
	// nil or the platform has no history (channel.ErrHistoryUnsupported).
	// With neither, /summary answers that history is unavailable.
	History      channel.HistoryFetcher
	LocalHistory channel.HistoryFetcher
	// Ack acknowledges triggering group messages and /summary commands;
	// nil for none.
	Ack channel.Acker
	// Quote resolves quotes and forwards of realtime batches; nil for none.
	Quote Quoter
	// Enrich, when set, completes messages before a turn reads them
	// (realtime batches and their history, digests, summaries), off the
	// chat's lane: Feishu replaces a merged forward's fixed text with the
	// excerpt of its messages. It returns msgs, changed in place or not,
	// and must bound its own time.
	Enrich func(ctx context.Context, msgs []msg.Message) []msg.Message
	// IsCommand reports whether a message is a control command: it is
	// never merged into a realtime batch but acts on its own, at once; the
	// window open before it is answered without it. IsAbort reports the
	// stop words among them, which drop the open window instead.
	IsCommand func(text string) bool
	IsAbort   func(text string) bool
	// PlainText flattens the markdown of digest and summary replies, for
	// chats that do not render it.
	PlainText bool
	// Location is the timezone of transcript times.
	Location *time.Location
	// Store logs every message the pipeline takes (so /summary can fall
	// back to what pincer saw itself) and keeps what the buffers hold, so
	// a restart loses nothing that was accepted; nil keeps it in memory
	// only. Channel and Account are those of the messages the pipeline
	// takes: they name its chats in the store.
	Store   BufferStore
	Channel msg.ChannelID
	Account msg.AccountID
	// AckTimeout bounds an acknowledgement; 10s when zero.
	AckTimeout time.Duration
	// ReplierFor rebuilds the replier of a message restored into a
	// realtime window after a restart.
	ReplierFor func(msg.Message) channel.Replier
	// Trace, when set, learns every decision about every message taken.
	Trace  *trace.Recorder
	Logger *slog.Logger
}

// held is what a buffered entry carries: the replier of its message and
// its stored entry (0 when not stored).
type held struct {
	r   channel.Replier
	ref int64
	// seq is a realtime entry's log entry, 0 when unknown.
	seq int64
	// done, when set, learns the outcome of the entry's batch.
	done func(error)
	// epoch is the chat's epoch when the entry was taken (see Release).
	epoch uint64
}

// Pipeline is one account's inbound path. It implements channel.Sink.
type Pipeline struct {
	opts Options
	log  *slog.Logger
	// account is how the chats without settings of their own are received.
	account  *ChatRules
	bots     botChains
	history  *aggregate.History
	realtime *aggregate.Realtime[held]
	digest   *digests

	digestScope, summaryScope scope

	// turns runs flushed batches' turns, on goroutines kept for the next
	// turn (see gopool).
	turns *gopool.Pool
	acks  sync.WaitGroup
	// enriching are the completions of logged messages in flight (see
	// enrichLater); stopEnriching ends them at Close.
	enriching     sync.WaitGroup
	enrichCtx     context.Context
	stopEnriching context.CancelFunc
	// asks are the questions to the platform in flight (whose message a
	// reply quotes); Close waits for them before it answers the windows.
	asks   sync.WaitGroup
	mu     sync.Mutex
	closed bool
	// flushed: Close answered the open windows; a late trigger no longer
	// opens one.
	flushed bool
	// epochs count the releases of each chat released once (see
	// Release): what was taken in before a release is not acted on
	// after it.
	epochs map[msg.Peer]uint64
	// restored are the chats RestoreWhere restored and no Release has
	// released since.
	restored map[msg.Peer]struct{}
	// completing are the log entries of each chat being completed off
	// its order (see enrichLater).
	completing map[msg.Peer][]int64
	// chats, once RestoreWhere was called with a filter, are the chats
	// taken in since, for Release to find; nil before.
	chats map[msg.Peer]struct{}
}

var _ channel.Sink = (*Pipeline)(nil)

// New builds a pipeline. Its warnings name settings that were skipped
// (keywords that are not valid regular expressions).
func New(o Options) (*Pipeline, []string) {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Location == nil {
		o.Location = time.Local
	}
	if o.IsCommand == nil {
		o.IsCommand = func(string) bool { return false }
	}
	if o.IsAbort == nil {
		o.IsAbort = func(string) bool { return false }
	}
	if o.AckTimeout <= 0 {
		o.AckTimeout = 10 * time.Second
	}
	r := o.Receive
	account, warnings := NewChatRules(ChatRules{Receive: r})
	p := &Pipeline{
		opts: o, log: o.Logger.With("component", "pipeline"), account: account,
		digestScope:  newScope(r.Digest.Scope, r.Digest.Peers),
		summaryScope: newScope(r.Summary.Scope, r.Summary.Peers),
		turns:        gopool.New(turnIdle),
	}
	p.enrichCtx, p.stopEnriching = context.WithCancel(context.Background())
	p.history = aggregate.NewHistory(r.History.MaxMessages, r.History.MaxChars, r.History.MaxAge)
	p.realtime = aggregate.NewRealtime(aggregate.RealtimeOptions[held]{
		Disabled: !r.Realtime.Enabled, Window: r.Realtime.Window, MaxWindow: r.Realtime.MaxWindow,
		MaxMessages: r.Realtime.MaxMessages, MaxChars: r.Realtime.MaxChars,
		Flush: func(f aggregate.Flushed[held]) {
			p.spawn(func(ctx context.Context) { p.runRealtime(ctx, f) })
		},
	})
	p.digest = newDigests(aggregate.DigestOptions[held]{
		Interval:    r.Digest.Interval,
		MinMessages: r.Digest.MinMessages, MaxMessages: r.Digest.MaxMessages,
		MaxChars: r.Digest.MaxTranscriptChars,
	}, func(f aggregate.Flushed[held], forget func()) {
		p.spawn(func(ctx context.Context) { forget(); p.runDigest(ctx, f) })
	})
	return p, warnings
}

// Dispatch takes one inbound message (already normalized, not the bot's
// own, and allowed by the account's peer filter) and returns once it has
// been answered: a /summary command when its summary is out; a message
// taken into a realtime window when its batch has been answered (nil for
// the batch's first message, channel.ErrMerged for the rest); any other
// message once buffered. It is Take followed by waiting.
func (p *Pipeline) Dispatch(ctx context.Context, m msg.Message, r channel.Replier) error {
	answered := make(chan error, 1)
	p.Take(ctx, m, r, func(err error) {
		select {
		case answered <- err:
		default: // told once already
		}
	})
	select {
	case err := <-answered:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Take takes m in: it is buffered (and its /summary or batch started)
// before Take returns, so a caller that calls Take for the messages of a
// chat one after the other keeps their order. done (when not nil) learns
// the outcome (see Dispatch): at once for a message that waits for
// nothing, when its batch or summary is answered otherwise.
func (p *Pipeline) Take(ctx context.Context, m msg.Message, r channel.Replier, done func(error)) {
	if done == nil {
		done = func(error) {}
	}
	p.mu.Lock()
	closed, epoch := p.closed, p.epochs[m.Peer]
	if p.chats != nil && !closed {
		p.chats[m.Peer] = struct{}{}
	}
	p.mu.Unlock()
	if closed {
		done(channel.ErrClosed)
		return
	}
	bot := trigger.Bot{Self: p.opts.Bot.Self(), SentByBot: func(id msg.MessageID) (bool, bool) { return p.opts.Bot.SentByBot(ctx, m.Peer, id) }}
	// What the user typed, without the leading mention of the bot: the
	// text /summary and commands are matched against.
	typed := trigger.StripLeadingMention(m, bot.Self)
	tr, key := p.opts.Trace, trace.KeyOf(m)
	tr.Begin(m)
	c := p.chat(m.Peer)
	if count, ok := p.summaryCount(c, m, typed); ok {
		tr.Step(key, trace.StageCommand, "summary", fmt.Sprintf("/summary of the last %d messages", count))
		p.debugDecision(ctx, m, "summary", "")
		p.takeSummary(ctx, m, count, r, epoch, done)
		return
	}
	d := p.bots.apply(m, c.gate(m, c.eval.Evaluate(m, bot)), p.opts.Receive.MaxBotReplyChain)
	verdict := "not triggered"
	if d.Triggered {
		verdict = "triggered"
	}
	tr.Step(key, trace.StageTrigger, verdict, d.Why)
	p.debugDecision(ctx, m, verdict, d.Why)
	if d.Triggered && m.Peer.Kind == msg.Group {
		p.ack(m)
	}
	peer := m.Peer.String()
	rtKey := peer + "::" + string(m.Sender.ID)
	dg := c.Receive.Digest
	want := struct{ history, realtime, digest bool }{
		realtime: p.realtime.TakesIn(rtKey, d.Triggered, c.shape),
		digest:   !c.Silent && dg.Enabled && (c.DigestAnyChat || p.digestScope.covers(m.Peer)),
	}
	// A reply whose author only the platform knows is taken in now as
	// chatter and asked about off the lane; an open window of its sender
	// takes it anyway.
	ask := d.Pending && !want.realtime
	// A command that acts (triggered, or in its sender's open window) is
	// said to the bot, not to the chat: it is no context for later replies.
	command := want.realtime && p.isCommand(typed)
	want.history = c.Receive.History.Enabled && !command
	// The message is logged, into the views of the buffers that take it,
	// before any of them holds it; its realtime entry is stored too.
	var views store.Views
	if want.history {
		views |= store.ViewHistory
	}
	if want.digest {
		views |= store.ViewDigest
	}
	var seq, rtRef, askRef int64
	// The question stays stored until its answer is handled, where the
	// channel can be asked at all.
	stored := ask && p.canAsk()
	// A message its channel completes (a merged forward) that no turn
	// takes now is logged as it came, pending, and completed off the
	// chat's order: the history later turns read stops before it until
	// then (the watermark).
	later := want.history && !want.realtime && p.completesLater(m)
	switch {
	case want.realtime:
		seq, rtRef = p.logBuffered(ctx, m, views, rtKey, d)
	case later:
		if seq = p.logMessage(ctx, m, views, true); seq == 0 {
			later = false // not logged: completed when a turn reads it
		}
		if stored {
			askRef = p.bufferAsk(ctx, m)
		}
	case stored:
		// Stored with its question until the answer is handled: a restart
		// or a handover before then asks again (see askOwner).
		seq, askRef = p.logAsk(ctx, m, views)
	default:
		seq = p.logMessage(ctx, m, views, false)
	}
	// History first: a batch that flushes at once must find its own
	// messages in the buffer to leave them out of its history. What the
	// buffer drops from its old end leaves its view with no write.
	p.isolate("history", func() {
		switch {
		case later:
			p.history.AddPending(peer, m, seq)
		case want.history:
			p.history.Add(peer, m, seq)
		}
	})
	if later {
		p.enrichLater(m, seq)
	}
	waiting := false // for its batch to be answered
	if want.realtime {
		p.isolate("realtime", func() {
			e := aggregate.Entry[held]{Message: m, Tag: held{r: r, ref: rtRef, seq: seq, done: done, epoch: epoch}}
			if command {
				// A command acts on its own, now: the burst before it is
				// answered without it, or dropped when the user says stop.
				p.endWindowFor(rtKey, p.opts.IsAbort(typed))
				waiting = p.realtime.AcceptIn(rtKey, e, true, d.Reason, c.shape)
				p.realtime.FlushNow(rtKey, msg.FlushImmediate)
				return
			}
			// Accepted, it learns its outcome when its batch is answered.
			if waiting = p.realtime.AcceptIn(rtKey, e, d.Triggered, d.Reason, c.shape); !waiting {
				p.unbuffer(rtRef) // the window it was to join had just ended
			}
		})
	}
	p.isolate("digest", func() {
		if want.digest {
			p.digest.AcceptEvery(peer, aggregate.Entry[held]{Message: m, Tag: held{r: r, ref: seq, epoch: epoch}}, dg.Interval)
		}
	})
	if tr != nil {
		tr.Step(key, trace.StageBuffer, "", buffersTaken(want.history, want.realtime, want.digest, command, waiting))
	}
	if ask {
		p.askOwner(ctx, m, r, typed, epoch, askRef)
	}
	// Like a message sent to a person, a message in a window is done when
	// its batch is answered; any other once it is buffered.
	if !waiting {
		done(nil)
	}
}

// Chat is what the pipeline holds of one chat now.
type Chat struct {
	// History is the history buffer, oldest first: the lines the next
	// reply in the chat gets as context.
	History []msg.Message
	// Windows are the open realtime windows, one per sender.
	Windows []aggregate.WindowInfo
}

// Serves reports whether the pipeline takes the messages of account acct
// of channel ch.
func (p *Pipeline) Serves(ch msg.ChannelID, acct msg.AccountID) bool {
	return p.opts.Channel == ch && p.opts.Account == acct
}

// Holds returns what the pipeline holds of peer's chat.
func (p *Pipeline) Holds(peer msg.Peer) Chat {
	key := peer.String()
	return Chat{History: p.history.Peek(key), Windows: p.realtime.Windows(key + "::")}
}

// debugDecision logs, at debug level, one line per message with what was
// decided about it.
func (p *Pipeline) debugDecision(ctx context.Context, m msg.Message, decision, why string) {
	if p.log.Enabled(ctx, slog.LevelDebug) {
		p.log.Debug("message", "peer", m.Peer.String(), "msg_id", string(m.ID), "sender", string(m.Sender.ID), "decision", decision, "why", why)
	}
}

// buffersTaken says which buffers took a message, for its trace; the
// few combinations are worded once.
func buffersTaken(history, realtime, digest, command, waiting bool) string {
	i := 0
	for bit, on := range []bool{history, realtime, digest, command, waiting} {
		if on {
			i |= 1 << bit
		}
	}
	return buffersWording[i]
}

var buffersWording = func() (w [32]string) {
	for i := range w {
		w[i] = wordBuffers(i&1 != 0, i&2 != 0, i&4 != 0, i&8 != 0, i&16 != 0)
	}
	return w
}()

func wordBuffers(history, realtime, digest, command, waiting bool) string {
	var took []string
	if history {
		took = append(took, "the history buffer (context for the next reply)")
	}
	switch {
	case command && realtime:
		took = append(took, "nothing else: a command acts on its own, at once")
	case realtime && waiting:
		took = append(took, "a realtime window (it is answered with its batch)")
	case realtime:
		took = append(took, "no realtime window: the one it was to join had just ended")
	}
	if digest {
		took = append(took, "the digest buffer")
	}
	if len(took) == 0 {
		return "no buffer took it"
	}
	return "taken by " + strings.Join(took, ", ")
}

// takeSummary starts the summary a /summary command asks for; epoch is
// its chat's when Take read it. The command enters no buffer; its summary
// runs on its own.
func (p *Pipeline) takeSummary(ctx context.Context, m msg.Message, count int, r channel.Replier, epoch uint64, done func(error)) {
	ref := p.logSummary(ctx, m)
	if m.Peer.Kind == msg.Group {
		p.ack(m)
	}
	p.runSummary(m, count, r, ref, epoch, done)
}

// runSummary answers a /summary command on a goroutine of its own; ref
// is its stored entry (0: none), which its turn's admission consumes
// (see summary).
func (p *Pipeline) runSummary(m msg.Message, count int, r channel.Replier, ref int64, epoch uint64, done func(error)) {
	p.spawn(func(ctx context.Context) {
		err := errPanicked // until the summary returns
		defer func() { done(err) }()
		err = p.summary(ctx, m, count, r, ref, epoch)
	})
}

// errPanicked is the outcome of a turn whose dispatch panicked.
var errPanicked = errors.New("pipeline: the turn panicked")

// endWindowFor ends the realtime window a command arrives in: flushed as a
// batch of its own, or, for a stop word, dropped (its messages stay in the
// history buffer, so nothing the user said is lost as context).
func (p *Pipeline) endWindowFor(key string, stop bool) {
	if !stop {
		p.realtime.FlushNow(key, msg.FlushImmediate)
		return
	}
	dropped := p.realtime.Discard(key)
	for _, e := range dropped {
		p.unbuffer(e.Tag.ref)
		if e.Tag.done != nil {
			e.Tag.done(channel.ErrStopped)
		}
	}
	if len(dropped) > 0 {
		p.log.Info("burst dropped: the sender said stop", "key", key, "messages", len(dropped))
	}
}

// isCommand is IsCommand with its failure contained: a broken check
// makes no message a command.
func (p *Pipeline) isCommand(text string) (yes bool) {
	defer func() {
		if v := recover(); v != nil {
			p.log.Error("command check panicked", "panic", fmt.Sprint(v))
			yes = false
		}
	}()
	return p.opts.IsCommand(text)
}

// ack acknowledges a message without holding it up: the reaction goes out
// in the background, bounded by AckTimeout.
func (p *Pipeline) ack(m msg.Message) {
	if p.opts.Ack == nil {
		return
	}
	p.acks.Go(func() {
		ctx, cancel := context.WithTimeout(context.Background(), p.opts.AckTimeout)
		defer cancel()
		p.opts.Ack.Ack(ctx, m.Peer, m.ID)
	})
}

// isolate runs one buffer's step so that its failure, even a panic, never
// affects the others.
func (p *Pipeline) isolate(name string, f func()) {
	defer func() {
		if v := recover(); v != nil {
			p.log.Error("receive step panicked; the other steps went on", "step", name, "panic", fmt.Sprint(v), "stack", string(debug.Stack()))
		}
	}()
	f()
}

// turnIdle is how long a goroutine that ran a turn waits for the next.
const turnIdle = 30 * time.Second

// spawn runs a flushed batch's turn on a goroutine of its own while it
// runs, tracked for Close.
func (p *Pipeline) spawn(f func(ctx context.Context)) {
	p.turns.Go(func() {
		defer func() {
			if v := recover(); v != nil {
				p.log.Error("batch dispatch panicked", "panic", fmt.Sprint(v), "stack", string(debug.Stack()))
			}
		}()
		f(context.Background())
	})
}

// closeAsksWithin is how long Close waits for the answers to the
// questions about quoted messages still in flight.
const closeAsksWithin = 5 * time.Second

// Close flushes open realtime windows (reason shutdown), drops pending
// digests, and waits for dispatched batches until ctx ends.
func (p *Pipeline) Close(ctx context.Context) error {
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
	// A reply that waits to learn whether it quotes the bot is a burst
	// about to open: it is answered with the others, when the answer
	// comes within closeAsksWithin (an implementation answers in at most
	// 3 s; one with no connection to ask over does not answer at all, and
	// a stored question is asked again at the next start).
	asked := make(chan struct{})
	go func() { p.asks.Wait(); close(asked) }()
	bound := time.NewTimer(closeAsksWithin)
	select {
	case <-asked:
	case <-ctx.Done():
	case <-bound.C:
	}
	bound.Stop()
	p.mu.Lock()
	p.flushed = true
	p.mu.Unlock()
	p.realtime.FlushAll(msg.FlushShutdown)
	p.digest.Stop()
	// Completions still running are cut: their entries stay pending in
	// the log, and the next start completes them.
	p.stopEnriching()
	done := make(chan struct{})
	go func() {
		p.turns.Wait()
		p.turns.Close()
		p.acks.Wait()
		p.enriching.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("pipeline: batches still running: %w", ctx.Err())
	}
}

// scope is a digest or summary scope: a kind of chat (group, direct,
// all) and, when not empty, the chats it is limited to.
type scope struct {
	kind  string
	peers map[msg.Peer]bool
}

func newScope(kind string, peers []string) scope {
	s := scope{kind: kind}
	for _, p := range peers {
		if peer, err := msg.ParsePeer(p); err == nil {
			if s.peers == nil {
				s.peers = map[msg.Peer]bool{}
			}
			s.peers[peer] = true
		}
	}
	return s
}

// covers reports whether peer is in the scope.
func (s scope) covers(peer msg.Peer) bool {
	switch s.kind {
	case "group":
		if peer.Kind != msg.Group {
			return false
		}
	case "direct":
		if peer.Kind != msg.Direct {
			return false
		}
	}
	return s.peers == nil || s.peers[peer]
}
