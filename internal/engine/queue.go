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

// lane schedules the turns of one session: one runs at a time; the rest
// wait in the queue or, in steer mode, for the running turn to take them.
// All fields are guarded by mu, the mutex of the session's shard.
type lane struct {
	mu      *sync.Mutex
	channel msg.ChannelID
	running bool
	queue   []*waiting
	steered []*waiting
	// dropped holds summaries of messages a full queue gave up.
	dropped []string
}

// enqueue runs mc now when its session is idle, else queues it per the
// session's queue settings, and waits for its turn to finish.
func (e *Engine) enqueue(ctx context.Context, log *slog.Logger, mc MsgContext, r channel.Replier) error {
	w := &waiting{mc: mc, r: r, log: log, at: time.Now(), done: make(chan error, 1)}
	key := mc.SessionKey
	sh := e.shard(key)
	sh.mu.Lock()
	l := sh.lanes[key]
	if l == nil {
		l = &lane{mu: &sh.mu, channel: mc.Message.Channel}
		sh.lanes[key] = l
	}
	if !l.running {
		l.running = true
		sh.mu.Unlock()
		err := e.turn(ctx, log, w, l)
		sh.mu.Lock()
		if len(l.queue) == 0 && len(l.steered) == 0 {
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
	qs := e.queueSettingsFor(ctx, key, mc.Message.Channel)
	sh.mu.Lock()
	if !l.running || sh.lanes[key] != l {
		// The turn ended meanwhile: start over, as the session may be idle.
		sh.mu.Unlock()
		return e.enqueue(ctx, log, mc, r)
	}
	switch qs.Mode {
	case QueueSteer:
		l.steered = append(l.steered, w)
	case QueueInterrupt:
		for _, old := range l.queue {
			old.done <- ErrDropped
		}
		l.queue = []*waiting{w}
		if cancel := sh.active[key]; cancel != nil {
			cancel(errInterrupted)
		}
	default:
		if qs.Cap > 0 && len(l.queue) >= qs.Cap {
			if qs.Drop == DropNew {
				sh.mu.Unlock()
				log.Warn("queue full: message refused", "cap", qs.Cap)
				return ErrDropped
			}
			oldest := l.queue[0]
			l.queue = l.queue[1:]
			if qs.Drop == DropSummarize {
				l.dropped = append(l.dropped, summarizeDropped(oldest.mc.Message))
			}
			oldest.done <- ErrDropped
			log.Warn("queue full: oldest message dropped", "cap", qs.Cap, "policy", string(qs.Drop))
		}
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
		idle := len(l.queue) == 0 && len(l.steered) == 0
		if idle {
			l.running = false
			delete(sh.lanes, key)
		}
		sh.mu.Unlock()
		if idle {
			return
		}
		qs := e.queueSettingsFor(e.base, key, l.channel)
		if qs.Mode == QueueCollect && qs.Debounce > 0 {
			e.waitQuiet(key, l, qs.Debounce)
		}
		sh.mu.Lock()
		// Steered messages the last turn did not take become followups.
		l.queue = append(l.steered, l.queue...)
		l.steered = nil
		if len(l.queue) == 0 {
			l.running = false
			delete(sh.lanes, key)
			sh.mu.Unlock()
			return
		}
		var next *waiting
		var merged []*waiting
		if qs.Mode == QueueCollect {
			next, merged = mergeWaiting(l.queue), l.queue[:len(l.queue)-1]
			l.queue = nil
		} else {
			next, l.queue = l.queue[0], l.queue[1:]
		}
		sh.mu.Unlock()
		ctx, cancel := context.WithCancel(e.base)
		err := e.turn(ctx, next.log, next, l)
		cancel()
		for _, w := range merged {
			w.done <- channel.ErrMerged
		}
		next.done <- err
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

// mergeWaiting merges queued messages into one, answered through the
// newest message's replier.
func mergeWaiting(ws []*waiting) *waiting {
	if len(ws) == 1 {
		return ws[0]
	}
	msgs := make([]msg.Message, len(ws))
	bodies := make([]string, len(ws))
	for i, w := range ws {
		msgs[i] = w.mc.Message
		bodies[i] = w.mc.BodyForAgent
	}
	// A copy of the newest waiter: same replier and done channel, merged
	// message.
	last := *ws[len(ws)-1]
	last.mc.Message = Merge(msgs)
	last.mc.BodyForAgent = strings.Join(bodies, "\n")
	return &last
}

// takeSteered removes the messages steered into a running turn and merges
// them; nil when there are none.
func (e *Engine) takeSteered(l *lane) (*waiting, []*waiting) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.steered) == 0 {
		return nil, nil
	}
	ws := l.steered
	l.steered = nil
	return mergeWaiting(ws), ws[:len(ws)-1]
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
// options, then the channel's mode, then the defaults.
func (e *Engine) queueSettingsFor(ctx context.Context, key string, ch msg.ChannelID) QueueSettings {
	qs := e.opts.Queue
	if m, ok := e.opts.QueueByChannel[ch]; ok {
		qs.Mode = m
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
