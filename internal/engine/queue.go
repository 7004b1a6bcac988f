package engine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/pincerbot/pincer/internal/channel"
	"github.com/pincerbot/pincer/internal/msg"
)

// QueueMode says what happens to a message that arrives while its session
// is running a turn.
type QueueMode string

// Queue modes.
const (
	// QueueSteer injects the message into the running turn: once the
	// current model call is answered, the turn goes on with it.
	QueueSteer QueueMode = "steer"
	// QueueFollowup runs each message as its own turn afterwards.
	QueueFollowup QueueMode = "followup"
	// QueueCollect merges the waiting messages into one turn afterwards.
	QueueCollect QueueMode = "collect"
	// QueueInterrupt stops the running turn and runs the newest message.
	QueueInterrupt QueueMode = "interrupt"
)

// QueueModes lists the modes.
var QueueModes = []QueueMode{QueueSteer, QueueFollowup, QueueCollect, QueueInterrupt}

// DropPolicy says what a full queue gives up.
type DropPolicy string

// Drop policies.
const (
	// DropOld drops the oldest waiting message.
	DropOld DropPolicy = "old"
	// DropNew refuses the newest message.
	DropNew DropPolicy = "new"
	// DropSummarize drops the oldest but tells the next turn what it said.
	DropSummarize DropPolicy = "summarize"
)

// QueueSettings are the effective queue settings of a session.
type QueueSettings struct {
	Mode QueueMode
	// Cap bounds the messages waiting per session.
	Cap  int
	Drop DropPolicy
	// Debounce is how long a collect turn waits for the sender to go quiet.
	Debounce time.Duration
}

// Errors of queued messages.
var (
	// ErrDropped: the message was dropped from a full queue.
	ErrDropped = errors.New("dropped from a full queue")
	// ErrBusy: a heartbeat found its session busy and was skipped.
	ErrBusy = errors.New("session busy")
	// errInterrupted is the cause of a turn stopped by a newer message.
	errInterrupted = errors.New("interrupted by a newer message")
)

// waiting is a message waiting for its session.
type waiting struct {
	mc   MsgContext
	r    channel.Replier
	log  *slog.Logger
	at   time.Time
	done chan error
}

// standalone reports a turn that runs on its own: it is never merged with
// other messages, never steered into another turn, and takes no steered
// messages itself (digests, summaries, heartbeats).
func (w *waiting) standalone() bool { return w.mc.Standalone || w.mc.Heartbeat }

// lane schedules the turns of one session: one runs at a time; the rest
// wait in the queue or, in steer mode, for the running turn to take them.
// All fields are guarded by mu, the mutex of the session's shard.
type lane struct {
	mu      *sync.Mutex
	channel msg.ChannelID
	// chat are the settings of the chat the lane's session is in.
	chat    *ChatSettings
	running bool
	// standalone: the running turn takes no steered messages.
	standalone bool
	queue      []*waiting
	steered    []*waiting
	// dropped holds summaries of messages a full queue gave up.
	dropped []string
	// current is the newest message of the turn drain runs, and cancel
	// cuts that turn (see Release); nil when no drained turn runs.
	current msg.Message
	cancel  context.CancelCauseFunc
}

// pending counts the messages waiting in the lane.
func (l *lane) pending() int { return len(l.queue) + len(l.steered) }

// dropOldest removes the longest-waiting message.
func (l *lane) dropOldest() *waiting {
	if len(l.steered) > 0 && (len(l.queue) == 0 || l.steered[0].at.Before(l.queue[0].at)) {
		w := l.steered[0]
		l.steered = l.steered[1:]
		return w
	}
	w := l.queue[0]
	l.queue = l.queue[1:]
	return w
}

// enqueue runs mc now when its session is idle, else queues it per the
// session's queue settings, and waits for its turn to finish.
func (e *Engine) enqueue(ctx context.Context, log *slog.Logger, mc MsgContext, r channel.Replier) error {
	w := &waiting{mc: mc, r: r, log: log, at: time.Now(), done: make(chan error, 1)}
	key := mc.SessionKey
	sh := e.shard(key)
	sh.mu.Lock()
	if released(ctx) {
		// Cut by Release on its way here: neither run nor queued (see
		// Release, which looks at the queues after it cut the turns).
		sh.mu.Unlock()
		return ErrReleased
	}
	l := sh.lanes[key]
	if l == nil {
		l = &lane{mu: &sh.mu, channel: mc.Message.Channel, chat: e.chatOf(mc.Message)}
		sh.lanes[key] = l
	}
	if !l.running {
		l.running, l.standalone = true, w.standalone()
		sh.mu.Unlock()
		err := e.turn(ctx, log, []*waiting{w}, l)
		sh.mu.Lock()
		if l.pending() == 0 {
			// Nothing waited: free the lane here rather than in a goroutine.
			l.running = false
			delete(sh.lanes, key)
			sh.mu.Unlock()
			return err
		}
		sh.mu.Unlock()
		e.inflight.Add(1)
		go e.drain(key, l)
		return err
	}
	if mc.Heartbeat {
		sh.mu.Unlock()
		log.Info("heartbeat skipped: the session is busy")
		return ErrBusy
	}
	// The session is busy: read its queue settings. The lock is released
	// for the read, so the lane is looked at again afterwards.
	sh.mu.Unlock()
	qs := e.queueSettingsFor(ctx, key, mc.Message.Channel, e.chatOf(mc.Message))
	sh.mu.Lock()
	if released(ctx) {
		sh.mu.Unlock()
		return ErrReleased
	}
	if !l.running || sh.lanes[key] != l {
		// The turn ended meanwhile: start over, as the session may be idle.
		sh.mu.Unlock()
		return e.enqueue(ctx, log, mc, r)
	}
	// Steering and interrupting happen between turns that take part in
	// them; a standalone turn waits for its own, and is not cut short.
	joins := !w.standalone() && !l.standalone
	if qs.Mode == QueueInterrupt && joins {
		for _, old := range l.queue {
			if old.standalone() {
				continue
			}
			old.done <- ErrDropped
		}
		l.queue = slices.DeleteFunc(l.queue, func(old *waiting) bool { return !old.standalone() })
		l.queue = append(l.queue, w)
		if cancel := sh.active[key]; cancel != nil {
			cancel(errInterrupted)
		}
		sh.mu.Unlock()
		return <-w.done
	}
	if qs.Cap > 0 && l.pending() >= qs.Cap {
		// Counted under the lock: the running turn, taking what waits,
		// sees the queue as it is after the drop.
		e.opts.Metrics.dropped.WithLabelValues(string(qs.Drop)).Inc()
		if qs.Drop == DropNew {
			sh.mu.Unlock()
			log.Warn("queue full: message refused", "cap", qs.Cap)
			return ErrDropped
		}
		oldest := l.dropOldest()
		if qs.Drop == DropSummarize {
			l.dropped = append(l.dropped, summarizeDropped(oldest.mc.Message))
		}
		oldest.done <- ErrDropped
		oldest.log.Warn("queue full: oldest message dropped", "cap", qs.Cap, "policy", string(qs.Drop))
	}
	if qs.Mode == QueueSteer && joins {
		l.steered = append(l.steered, w)
	} else {
		l.queue = append(l.queue, w)
	}
	sh.mu.Unlock()
	return <-w.done
}

// drain runs the session's waiting turns until none is left, then frees
// the lane. It owns one count of e.inflight.
func (e *Engine) drain(key string, l *lane) {
	defer e.inflight.Done()
	sh := e.shard(key)
	for {
		sh.mu.Lock()
		idle := l.pending() == 0
		if idle {
			l.running = false
			delete(sh.lanes, key)
		}
		sh.mu.Unlock()
		if idle {
			return
		}
		qs := e.queueSettingsFor(e.base, key, l.channel, l.chat)
		if qs.Mode == QueueCollect && qs.Debounce > 0 {
			e.waitQuiet(key, l, qs.Debounce)
		}
		sh.mu.Lock()
		// Steered messages the last turn did not take wait with the queue,
		// in the order they came.
		all := append(l.steered, l.queue...)
		slices.SortStableFunc(all, func(a, b *waiting) int { return a.at.Compare(b.at) })
		l.steered = nil
		if len(all) == 0 {
			l.queue = nil
			l.running = false
			delete(sh.lanes, key)
			sh.mu.Unlock()
			return
		}
		// The next turn: one message, or in steer and collect modes every
		// message up to the next standalone one, each with its own sender.
		n := 1
		if !all[0].standalone() && (qs.Mode == QueueSteer || qs.Mode == QueueCollect) {
			for n < len(all) && !all[n].standalone() {
				n++
			}
		}
		batch := all[:n:n]
		l.queue = all[n:]
		l.standalone = batch[0].standalone()
		ctx, cancel := context.WithCancelCause(e.base)
		l.current, l.cancel = batch[n-1].mc.Message, cancel
		sh.mu.Unlock()
		err := e.turn(ctx, batch[0].log, batch, l)
		sh.mu.Lock()
		l.current, l.cancel = msg.Message{}, nil
		sh.mu.Unlock()
		cancel(nil)
		if released(ctx) {
			err = ErrReleased
		}
		answer(batch, err)
	}
}

// answer tells the messages of a turn its outcome: err for the newest,
// whose replier carried the reply, channel.ErrMerged for the others.
func answer(batch []*waiting, err error) {
	for i, w := range batch {
		if i == len(batch)-1 {
			w.done <- err
		} else {
			w.done <- channel.ErrMerged
		}
	}
}

// waitQuiet waits until no message has joined the queue for d.
func (e *Engine) waitQuiet(key string, l *lane, d time.Duration) {
	for {
		l.mu.Lock()
		var last time.Time
		if n := len(l.queue); n > 0 {
			last = l.queue[n-1].at
		}
		l.mu.Unlock()
		wait := time.Until(last.Add(d))
		if last.IsZero() || wait <= 0 {
			return
		}
		time.Sleep(wait)
	}
}

// takeSteered removes and returns the messages steered into the running
// turn, oldest first; none when the turn is standalone.
func (e *Engine) takeSteered(l *lane) []*waiting {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.standalone || len(l.steered) == 0 {
		return nil
	}
	ws := l.steered
	l.steered = nil
	return ws
}

// takeDropped returns and clears the summaries of dropped messages.
func (e *Engine) takeDropped(l *lane) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	d := l.dropped
	l.dropped = nil
	return d
}

// summarizeDropped is the line a dropped message leaves for the next turn.
func summarizeDropped(m msg.Message) string {
	text := strings.Join(strings.Fields(m.Text), " ")
	if utf8.RuneCountInString(text) > 80 {
		text = string([]rune(text)[:80]) + "…"
	}
	name := m.Sender.Name
	if name == "" {
		name = string(m.Sender.ID)
	}
	return fmt.Sprintf("- %s: %s", name, text)
}

// droppedNotice heads the next turn's body when a full queue dropped
// messages under the summarize policy.
func droppedNotice(lines []string) string {
	return "[Messages dropped while you were busy]\n" + strings.Join(lines, "\n") + "\n[End of dropped messages]\n"
}

// Session options of /queue.
const (
	optQueueMode     = "queue"
	optQueueCap      = "queue.cap"
	optQueueDrop     = "queue.drop"
	optQueueDebounce = "queue.debounceMs"
)

// queueSettingsFor resolves a session's queue settings: its /queue
// options, then the chat's, then the channel's mode, then the defaults.
func (e *Engine) queueSettingsFor(ctx context.Context, key string, ch msg.ChannelID, cs *ChatSettings) QueueSettings {
	qs := e.opts.Queue
	if m, ok := e.opts.QueueByChannel[ch]; ok {
		qs.Mode = m
	}
	if cs != nil && cs.QueueMode != "" {
		qs.Mode = cs.QueueMode
	}
	if cs != nil && cs.QueueCap > 0 {
		qs.Cap = cs.QueueCap
	}
	sess, err := e.opts.Store.Session(ctx, key)
	if err != nil {
		return qs // a new session has no options
	}
	o := sess.Options
	if m := QueueMode(o[optQueueMode]); slices.Contains(QueueModes, m) {
		qs.Mode = m
	}
	if n, err := strconv.Atoi(o[optQueueCap]); err == nil && n > 0 {
		qs.Cap = n
	}
	if d := DropPolicy(o[optQueueDrop]); d == DropOld || d == DropNew || d == DropSummarize {
		qs.Drop = d
	}
	if n, err := strconv.Atoi(o[optQueueDebounce]); err == nil && n >= 0 {
		qs.Debounce = time.Duration(n) * time.Millisecond
	}
	return qs
}
