// Package outbox delivers replies so that none is lost and none is sent
// twice: each payload is stored before it is sent, sent part by part
// (chunks) in order per chat, retried with backoff across disconnects and
// restarts until the platform confirms every part or the reply is too old
// to make sense, and remembered after it is sent, so the same payload id is
// never sent again. It is channel-neutral: each channel account registers
// a Sender.
package outbox

import (
	"context"
	crand "crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pincerbot/pincer/internal/msg"
	"github.com/pincerbot/pincer/internal/store"
)

// Sender sends the parts of a payload (the chunks of its text, in order)
// from part from on, calling confirmed after each part the platform
// confirmed, before it sends the next; more says whether another part
// follows. An error wrapped with Permanent is not retried; one that
// implements RetryAfter says when to try again; any other is retried with
// backoff.
type Sender interface {
	SendParts(ctx context.Context, out msg.Outbound, from int, confirmed Confirmed) error
}

// Finder is a Sender that can look on the platform for a part an earlier
// attempt may have sent without learning so: its connection dropped before
// the answer came, or the process making it (or, in a cluster, holding the
// connection) died. FindSent reports the message part became when the chat
// shows one sent since that is not recorded as sent for anything else;
// found is false when it shows none, or when there is no such part. Before
// it sends the rest of a payload that an earlier attempt may have sent
// (one restored from the store, or retried after a failure), the outbox
// asks, part after part, and records what it finds as sent rather than
// send it again. An error says the platform cannot be asked now (no
// connection, or in a cluster no process holding one): the attempt ends
// there, failed, and the parts are looked for again before the next one,
// rather than sent blindly the moment a connection comes back. A platform
// that cannot tell (no history to read) reports found false and no error,
// and the part is sent.
type Finder interface {
	FindSent(ctx context.Context, out msg.Outbound, part int, since time.Time) (id msg.MessageID, found bool, err error)
}

// Confirmed learns that the platform took part of a payload (id is the
// message it became; empty when a part was passed over), and whether
// another part follows. When it returns, the store knows the part went
// (the last part's outcome included), so a sender records the message as
// the bot's (store.SentLog) only after it: a message recorded as sent then
// always belongs to a part the store knows was sent, which is what a
// Finder relies on after a crash.
type Confirmed func(part int, id msg.MessageID, more bool)

// permanent marks an error that retrying cannot cure.
type permanent struct{ err error }

func (p permanent) Error() string { return p.err.Error() }
func (p permanent) Unwrap() error { return p.err }

// Permanent wraps err so the outbox gives the payload up at once: the
// platform refused it for good (an unknown chat, a malformed message).
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return permanent{err}
}

// IsPermanent reports whether err was wrapped with Permanent.
func IsPermanent(err error) bool {
	var p permanent
	return errors.As(err, &p)
}

// RetryAfter is an error that knows when a retry makes sense (a chat whose
// sends are paused).
type RetryAfter interface {
	RetryAfter() time.Duration
}

// Errors Deliver returns.
var (
	// ErrNoSender: no sender is registered for the payload's channel account.
	ErrNoSender = errors.New("outbox: no sender for this channel account")
	// ErrExpired: the reply was not confirmed before it was too old.
	ErrExpired = errors.New("outbox: the reply was too old to send")
	// ErrReleased: the reply's chat was released (see Release and
	// Options.MaySend); the reply stays pending in the store for the
	// process that sends the chat's replies now.
	ErrReleased = errors.New("outbox: the chat's replies are no longer sent here")
)

// Options configure an Outbox.
type Options struct {
	Store store.Outbox
	// MaxAge is how long a reply keeps being retried; 5 min when zero.
	MaxAge time.Duration
	// MinBackoff and MaxBackoff bound the wait between retries; 500 ms and
	// 10 s when zero. A Wake retries at once.
	MinBackoff, MaxBackoff time.Duration
	// Keep is how long delivered and given-up replies are remembered (so a
	// resumed turn does not send them again); 24 h when zero. Older ones
	// are forgotten at Start and every PruneEvery while the outbox runs.
	Keep time.Duration
	// MaySend, when set, is asked right before each part of a reply is
	// sent (the first attempt's first part included): false means the
	// chat's replies are not this process's to send any more, and the
	// chat is released as by Release (its replies are neither failed nor
	// retried here; they stay pending in the store). nil: always.
	MaySend func(ch msg.ChannelID, acct msg.AccountID, peer msg.Peer) bool
	Metrics *Metrics
	Logger  *slog.Logger
}

// Outbox delivers replies. It is safe for concurrent use.
type Outbox struct {
	opts Options
	log  *slog.Logger
	ctx  context.Context
	stop context.CancelFunc
	wg   sync.WaitGroup

	mu      sync.Mutex
	senders map[route]Sender
	queues  map[queueKey]*queue
	// ids are the replies queued here, by id.
	ids     map[string]*item
	pending int
	changed chan struct{}
	// restoring counts the StartWhere calls in progress; while there are
	// any, recent holds the ids of the replies finished meanwhile, which
	// they must not queue again.
	restoring int
	recent    map[string]bool
	// pruning: the hourly forgetting of old replies has started.
	pruning bool
}

// PruneEvery is how often a running outbox forgets the replies finished
// longer than Options.Keep ago. Pruned only at Start, a process that runs
// for weeks would keep every reply of those weeks, its text included,
// until its next start deleted them all in one statement.
const PruneEvery = time.Hour

// route is a channel account.
type route struct {
	channel msg.ChannelID
	account msg.AccountID
}

type queueKey struct {
	route
	peer msg.Peer
}

// queue holds one chat's replies in order; one worker sends them.
type queue struct {
	items      []*item
	backingOff bool
	wake       chan struct{}
	// released: the chat was released (see Release); no attempt starts,
	// and the next part of the one on the wire is not sent.
	released bool
	// sending is the reply whose attempt is on the wire, if any.
	sending *item
}

// item is one reply in a queue. done is closed once its first attempt is
// over (or the queue is backing off); err is then what Deliver returns.
type item struct {
	e       store.OutboxEntry
	done    chan struct{}
	settled bool
	err     error
	// restored is set for a reply read from the store: an attempt before
	// it was read may have sent part of it.
	restored bool
	// first is the id of its first part once the platform took it: set
	// by the attempt that sent it, which may run after the item was
	// settled (a retry), while its Deliver reads it.
	first atomic.Pointer[msg.MessageID]
}

// firstID is the id of its first part, "" while none was sent.
func (it *item) firstID() msg.MessageID {
	if p := it.first.Load(); p != nil {
		return *p
	}
	return ""
}

// New returns an Outbox; Start brings back what an earlier run left.
func New(o Options) *Outbox {
	if o.MaxAge <= 0 {
		o.MaxAge = 5 * time.Minute
	}
	if o.MinBackoff <= 0 {
		o.MinBackoff = 500 * time.Millisecond
	}
	if o.MaxBackoff <= 0 {
		o.MaxBackoff = 10 * time.Second
	}
	if o.Keep <= 0 {
		o.Keep = 24 * time.Hour
	}
	if o.Metrics == nil {
		o.Metrics, _ = NewMetrics(nil) // nothing to register, so no error
	}
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	ctx, stop := context.WithCancel(context.Background())
	return &Outbox{
		opts: o, log: log.With("component", "outbox"), ctx: ctx, stop: stop,
		senders: map[route]Sender{}, queues: map[queueKey]*queue{}, ids: map[string]*item{}, changed: make(chan struct{}),
	}
}

// Register adds the sender of a channel account.
func (o *Outbox) Register(ch msg.ChannelID, acct msg.AccountID, s Sender) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.senders[route{ch, acct}] = s
}

// Start queues the replies an earlier run left pending, for every
// registered channel account, and forgets long-finished ones. It is
// StartWhere for every reply.
func (o *Outbox) Start(ctx context.Context) error {
	return o.StartWhere(ctx, nil)
}

// StartWhere is Start for the pending replies whose chat keep accepts (nil:
// all), for a process that takes those chats over from another (see
// Release). A reply queued here already is not queued again, nor is one
// that finished here while StartWhere ran.
func (o *Outbox) StartWhere(ctx context.Context, keep func(ch msg.ChannelID, acct msg.AccountID, peer msg.Peer) bool) error {
	o.prune(ctx)
	o.mu.Lock()
	if !o.pruning {
		o.pruning = true
		o.wg.Go(o.pruneHourly)
	}
	routes := make([]route, 0, len(o.senders))
	for r := range o.senders {
		routes = append(routes, r)
	}
	o.restoring++
	if o.recent == nil {
		o.recent = map[string]bool{}
	}
	o.mu.Unlock()
	defer func() {
		o.mu.Lock()
		if o.restoring--; o.restoring == 0 {
			o.recent = nil
		}
		o.mu.Unlock()
	}()
	restored := 0
	for _, r := range routes {
		entries, err := o.opts.Store.PendingOutbox(ctx, r.channel, r.account)
		if err != nil {
			return fmt.Errorf("outbox: restore %s/%s: %w", r.channel, r.account, err)
		}
		for _, e := range entries {
			if keep != nil && !keep(r.channel, r.account, e.Out.Peer) {
				continue
			}
			it := &item{e: e, done: make(chan struct{}), restored: true}
			if key, q, queued, start := o.queueUp(r, it, true); queued == it {
				restored++
				if start {
					o.wg.Add(1)
					go o.work(key, q, nil, o.opts.MinBackoff)
				}
			}
		}
	}
	if restored > 0 {
		o.log.Info("replies from before the restart are being delivered", "count", restored)
	}
	return nil
}

// prune forgets the replies finished longer than Keep ago.
func (o *Outbox) prune(ctx context.Context) {
	if n, err := o.opts.Store.PruneOutbox(ctx, time.Now().Add(-o.opts.Keep)); err != nil {
		if ctx.Err() == nil {
			o.log.Warn("old replies not pruned", "err", err)
		}
	} else if n > 0 {
		o.log.Debug("old replies pruned", "count", n)
	}
}

// pruneHourly prunes every PruneEvery until Close.
func (o *Outbox) pruneHourly() {
	t := time.NewTicker(PruneEvery)
	defer t.Stop()
	for {
		select {
		case <-o.ctx.Done():
			return
		case <-t.C:
			o.prune(o.ctx)
		}
	}
}

// Release stops sending the replies of the chats keep accepts here, for
// a process that gives those chats up to another: they are dropped from
// memory and stay pending in the store (StartWhere, here or in the next
// owner, queues them again); their Deliver calls still waiting learn
// ErrReleased. A part already on the wire may finish, and what the
// platform confirms of it is still recorded; no attempt, and no further
// part, starts after Release returns.
func (o *Outbox) Release(keep func(ch msg.ChannelID, acct msg.AccountID, peer msg.Peer) bool) {
	if keep == nil {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	dropped := 0
	for key, q := range o.queues {
		if !keep(key.channel, key.account, key.peer) {
			continue
		}
		q.released = true
		dropped += o.dropLocked(q)
		select {
		case q.wake <- struct{}{}: // a worker backing off returns
		default:
		}
	}
	if dropped > 0 {
		o.log.Info("replies released: they stay pending for the chats' next owner", "count", dropped)
	}
}

// dropLocked forgets q's replies but the one on the wire, which its
// worker forgets when the attempt is over; they learn ErrReleased.
func (o *Outbox) dropLocked(q *queue) int {
	kept := q.items[:0]
	n := 0
	for _, it := range q.items {
		if it == q.sending {
			kept = append(kept, it)
			continue
		}
		o.forgetLocked(it)
		settle(it, ErrReleased)
		n++
	}
	clear(q.items[len(kept):])
	q.items = kept
	return n
}

// forgetLocked counts it out of the replies queued here.
func (o *Outbox) forgetLocked(it *item) {
	if o.ids[it.e.ID] == it {
		delete(o.ids, it.e.ID)
	}
	o.pending--
	o.opts.Metrics.pending.Set(float64(o.pending))
	o.notifyLocked()
}

// maySend asks Options.MaySend about key's chat.
func (o *Outbox) maySend(key queueKey) bool {
	return o.opts.MaySend == nil || o.opts.MaySend(key.channel, key.account, key.peer)
}

// mayGoOn reports whether the next part of the attempt on the wire in q
// may go: the chat was not released, and MaySend agrees (when it does
// not, the chat is released).
func (o *Outbox) mayGoOn(key queueKey, q *queue) bool {
	ok := o.maySend(key)
	o.mu.Lock()
	defer o.mu.Unlock()
	if !ok {
		q.released = true
	}
	return !q.released
}

// Deliver stores out under id and sends it after the chat's earlier
// replies. It returns once the first attempt is over: the id of the first
// message sent, or nil with the reply still queued when the platform could
// not be reached (it is retried until MaxAge), or an error when the reply
// was refused for good or could not be sent at all. An id that was already
// delivered (or is on its way) is not sent again. An empty id makes one up.
func (o *Outbox) Deliver(ctx context.Context, ch msg.ChannelID, id string, out msg.Outbound) (msg.MessageID, error) {
	if id == "" {
		id = "x:" + randomID()
	}
	r := route{ch, out.Account}
	o.mu.Lock()
	s := o.senders[r]
	o.mu.Unlock()
	if s == nil {
		return "", fmt.Errorf("%w: %s/%s", ErrNoSender, ch, out.Account)
	}
	key := queueKey{r, out.Peer}
	e := store.OutboxEntry{ID: id, Channel: ch, Out: out, State: store.OutboxPending, Created: time.Now()}
	added, err := o.opts.Store.AddOutbox(ctx, e)
	if err != nil {
		// The store is failing: a reply sent without a retry net is better
		// than none.
		o.log.Error("reply not stored; sending it once, without retries", "id", id, "err", err)
		if !o.maySend(key) {
			return "", ErrReleased
		}
		sendCtx, cancel := context.WithCancelCause(ctx)
		defer cancel(nil)
		var first msg.MessageID
		err := s.SendParts(sendCtx, out, 0, func(part int, mid msg.MessageID, more bool) {
			if part == 0 {
				first = mid
			}
			if more && !o.maySend(key) {
				cancel(ErrReleased)
			}
		})
		if cause := context.Cause(sendCtx); err != nil && errors.Is(cause, ErrReleased) {
			err = cause
		}
		return first, err
	}
	if !added {
		o.log.Info("reply already delivered or on its way; not sent again", "id", id)
		o.opts.Metrics.duplicates.Inc()
		return "", nil
	}
	it := &item{e: e, done: make(chan struct{})}
	if ctx.Done() == nil {
		// Nothing can end the wait but the first attempt: when the chat
		// has no worker, this goroutine makes the attempt itself rather
		// than start one and wait for it.
		key, q, queued, start := o.queueUp(r, it, false)
		if start {
			o.wg.Add(1)
			o.work(key, q, it, o.opts.MinBackoff)
		}
		it = queued
		<-it.done
		return it.firstID(), it.err
	}
	it = o.enqueue(r, it)
	select {
	case <-it.done:
		return it.firstID(), it.err
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

// enqueue puts it last in its chat's queue, starting the queue's worker if
// it is idle; a queue that is backing off settles it at once. It returns
// the item queued under it's id: it, or the one queued before.
func (o *Outbox) enqueue(r route, it *item) *item {
	key, q, queued, start := o.queueUp(r, it, false)
	if start {
		o.wg.Add(1)
		go o.work(key, q, nil, o.opts.MinBackoff)
	}
	return queued
}

// queueUp puts it last in its chat's queue; start says the queue is new
// and needs a worker. A reply queued under it's id already is not queued
// again: queued is that one, else it. restoring says the reply was read
// from the store (see StartWhere): one that finished since is not queued
// either (queued is nil then).
func (o *Outbox) queueUp(r route, it *item, restoring bool) (key queueKey, q *queue, queued *item, start bool) {
	key = queueKey{r, it.e.Out.Peer}
	o.mu.Lock()
	defer o.mu.Unlock()
	if old := o.ids[it.e.ID]; old != nil {
		return key, nil, old, false
	}
	if restoring && o.recent[it.e.ID] {
		return key, nil, nil, false
	}
	q = o.queues[key]
	start = q == nil
	if start {
		q = &queue{wake: make(chan struct{}, 1)}
		o.queues[key] = q
	}
	q.released = false // the chat's replies are sent here (again)
	o.ids[it.e.ID] = it
	q.items = append(q.items, it)
	o.pending++
	o.opts.Metrics.pending.Set(float64(o.pending))
	o.notifyLocked()
	if q.backingOff {
		settle(it, nil)
	}
	return key, q, it, start
}

// work sends a chat's replies in order until its queue is empty, waiting
// backoff before it retries a failed one. It is counted in o.wg, and
// says so when it returns. Run by a caller of Deliver whose reply is
// caller, it hands the rest of the queue, and any wait, to a goroutine
// of its own once that reply's first attempt is over.
func (o *Outbox) work(key queueKey, q *queue, caller *item, backoff time.Duration) {
	defer o.wg.Done()
	for {
		o.mu.Lock()
		if q.released {
			o.dropLocked(q)
		}
		if len(q.items) == 0 {
			if o.queues[key] == q {
				delete(o.queues, key)
			}
			o.mu.Unlock()
			return
		}
		if caller != nil && caller.settled {
			o.mu.Unlock()
			o.wg.Add(1)
			go o.work(key, q, nil, backoff)
			return
		}
		it := q.items[0]
		s := o.senders[key.route]
		o.mu.Unlock()
		if o.ctx.Err() != nil {
			o.releaseAll(q, nil) // stopped: the rest stays stored
			return
		}

		// The chat is still this process's to send (asked before the
		// attempt's first part, and before each of the others), and no
		// Release came before the attempt starts.
		if !o.maySend(key) {
			o.mu.Lock()
			q.released = true
			o.mu.Unlock()
			continue
		}
		if time.Since(it.e.Created) > o.opts.MaxAge {
			o.finish(q, it, store.OutboxExpired, ErrExpired)
			o.log.Error("reply given up: not delivered in time", "id", it.e.ID, "peer", key.peer.String(),
				"age", time.Since(it.e.Created).Round(time.Second).String(), "attempts", it.e.Attempts, "last_error", it.e.LastError)
			o.opts.Metrics.expired.Inc()
			continue
		}
		o.mu.Lock()
		if q.released || len(q.items) == 0 || q.items[0] != it {
			o.mu.Unlock()
			continue
		}
		q.sending = it
		o.mu.Unlock()
		attempt, cancel := context.WithCancelCause(o.ctx)
		var err error
		if f, ok := s.(Finder); ok && (it.restored || it.e.Attempts > 0) {
			err = o.findSent(attempt, f, it)
		}
		stored := false // the last part's confirmation stored the outcome
		if err == nil {
			err = s.SendParts(attempt, it.e.Out, it.e.Sent, func(part int, mid msg.MessageID, more bool) {
				if part == 0 {
					it.first.CompareAndSwap(nil, &mid)
				}
				it.e.Sent = part + 1
				// Before the next part goes out, and before the sender
				// records the part's message as sent (see Confirmed), the
				// store must know this part went: a crash must not send it
				// again. After the last part, what is stored is the outcome,
				// with the attempt counted: one commit, not two.
				if !more {
					stored = o.store(it, it.e.Attempts+1, store.OutboxSent, "")
					return
				}
				o.store(it, it.e.Attempts, store.OutboxPending, "")
				if !o.mayGoOn(key, q) {
					cancel(ErrReleased) // the next part is not sent
				}
			})
		}
		released := errors.Is(context.Cause(attempt), ErrReleased)
		cancel(nil)
		o.mu.Lock()
		q.sending = nil
		o.mu.Unlock()
		it.e.Attempts++
		switch {
		case released && err != nil && !IsPermanent(err):
			// Stopped before a part: what went out is stored, and the rest
			// waits in the store for the chat's next owner (or for this
			// process again, when the chat came back meanwhile).
			if uerr := o.opts.Store.UpdateOutbox(context.WithoutCancel(o.ctx), it.e.ID, it.e.Sent, it.e.Attempts, store.OutboxPending, ""); uerr != nil {
				o.log.Warn("reply progress not stored", "id", it.e.ID, "err", uerr)
			}
			continue
		case err == nil:
			if stored {
				o.remove(q, it, nil)
			} else {
				o.finish(q, it, store.OutboxSent, nil)
			}
			o.opts.Metrics.sent.Inc()
			backoff = o.opts.MinBackoff
			continue
		case IsPermanent(err):
			o.finish(q, it, store.OutboxFailed, err)
			o.log.Error("reply refused by the platform; not retried", "id", it.e.ID, "peer", key.peer.String(), "err", err)
			o.opts.Metrics.failed.Inc()
			continue
		case o.ctx.Err() != nil:
			o.releaseAll(q, nil)
			return
		}
		it.e.LastError = err.Error()
		if uerr := o.opts.Store.UpdateOutbox(o.ctx, it.e.ID, it.e.Sent, it.e.Attempts, store.OutboxPending, it.e.LastError); uerr != nil {
			o.log.Warn("reply progress not stored", "id", it.e.ID, "err", uerr)
		}
		wait := backoff
		var ra RetryAfter
		if errors.As(err, &ra) && ra.RetryAfter() > wait {
			wait = ra.RetryAfter()
		}
		wait = jitter(wait)
		backoff = min(backoff*2, o.opts.MaxBackoff)
		if it.e.Attempts == 1 || it.e.Attempts%10 == 0 {
			o.log.Warn("reply not delivered yet; retrying", "id", it.e.ID, "peer", key.peer.String(), "attempt", it.e.Attempts,
				"retry_in", wait.Round(time.Millisecond).String(), "err", err)
		}
		o.opts.Metrics.retries.Inc()
		// Everything waiting in this chat is queued now; the senders learn
		// so rather than wait.
		o.mu.Lock()
		q.backingOff = true
		o.mu.Unlock()
		o.releaseAll(q, nil)
		if caller != nil {
			o.wg.Add(1)
			go func() { o.work(key, q, nil, o.wait(q, wait, backoff)) }()
			return
		}
		backoff = o.wait(q, wait, backoff)
	}
}

// findSent records as sent the parts of it, from the first not known to
// be sent on, that the platform shows an earlier attempt sent; an error
// says the platform could not be asked now (see Finder).
func (o *Outbox) findSent(ctx context.Context, f Finder, it *item) error {
	for {
		id, found, err := f.FindSent(ctx, it.e.Out, it.e.Sent, it.e.Created)
		if err != nil {
			o.log.Debug("could not look for the reply's parts on the platform yet; not sending them before it can", "id", it.e.ID, "err", err)
			return fmt.Errorf("look for the parts an earlier attempt sent: %w", err)
		}
		if !found {
			return nil
		}
		o.log.Info("a part of the reply an earlier attempt sent is on the platform; not sent again", "id", it.e.ID, "part", it.e.Sent, "msg_id", string(id))
		if it.e.Sent == 0 {
			it.first.CompareAndSwap(nil, &id)
		}
		it.e.Sent++
		if err := o.opts.Store.UpdateOutbox(o.ctx, it.e.ID, it.e.Sent, it.e.Attempts, store.OutboxPending, it.e.LastError); err != nil {
			o.log.Warn("reply progress not stored", "id", it.e.ID, "err", err)
		}
	}
}

// wait waits out a chat's backoff, or until it is woken (then backoff is
// back to the least) or the outbox stops, and returns the next backoff.
func (o *Outbox) wait(q *queue, wait, backoff time.Duration) time.Duration {
	t := time.NewTimer(wait)
	select {
	case <-t.C:
	case <-q.wake:
		t.Stop()
		backoff = o.opts.MinBackoff
	case <-o.ctx.Done():
		t.Stop()
	}
	o.mu.Lock()
	q.backingOff = false
	o.mu.Unlock()
	return backoff
}

// finish records it's final state and removes it from q.
func (o *Outbox) finish(q *queue, it *item, state store.OutboxState, err error) {
	errText := ""
	if err != nil {
		errText = err.Error()
	}
	o.store(it, it.e.Attempts, state, errText)
	o.remove(q, it, err)
}

// store records its progress (it.e.Sent), its attempts and state,
// durably; a failure is logged, and stored reports whether there was none.
func (o *Outbox) store(it *item, attempts int, state store.OutboxState, lastErr string) (stored bool) {
	if err := o.opts.Store.UpdateOutbox(context.WithoutCancel(o.ctx), it.e.ID, it.e.Sent, attempts, state, lastErr); err != nil {
		o.log.Warn("reply progress not stored", "id", it.e.ID, "state", string(state), "err", err)
		return false
	}
	return true
}

// remove takes it, finished, out of q and settles it with err.
func (o *Outbox) remove(q *queue, it *item, err error) {
	o.mu.Lock()
	if i := slices.Index(q.items, it); i >= 0 {
		q.items = slices.Delete(q.items, i, i+1)
		o.forgetLocked(it)
	}
	if o.restoring > 0 {
		o.recent[it.e.ID] = true
	}
	settle(it, err)
	o.mu.Unlock()
}

// releaseAll settles every unsettled item of q: they stay queued.
func (o *Outbox) releaseAll(q *queue, err error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, it := range q.items {
		settle(it, err)
	}
}

// settle ends it's wait for its first attempt; the caller holds o.mu or
// owns it.
func settle(it *item, err error) {
	if it.settled {
		return
	}
	it.settled, it.err = true, err
	close(it.done)
}

func (o *Outbox) notifyLocked() {
	close(o.changed)
	o.changed = make(chan struct{})
}

// Wake retries the waiting replies of a channel account now: it has just
// (re)connected.
func (o *Outbox) Wake(ch msg.ChannelID, acct msg.AccountID) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for key, q := range o.queues {
		if key.route == (route{ch, acct}) {
			select {
			case q.wake <- struct{}{}:
			default:
			}
		}
	}
}

// Pending counts the replies not yet delivered or given up.
func (o *Outbox) Pending() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.pending
}

// Drain waits until every reply is delivered or given up, or ctx ends
// (then the rest stays stored for the next start).
func (o *Outbox) Drain(ctx context.Context) error {
	for {
		o.mu.Lock()
		n, changed := o.pending, o.changed
		o.mu.Unlock()
		if n == 0 {
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return fmt.Errorf("outbox: %d replies still pending: %w", n, ctx.Err())
		}
	}
}

// Close stops sending and waits for the workers; what is pending stays
// stored for the next start.
func (o *Outbox) Close() {
	o.stop()
	o.mu.Lock()
	for _, q := range o.queues {
		select {
		case q.wake <- struct{}{}:
		default:
		}
	}
	o.mu.Unlock()
	o.wg.Wait()
}

// jitter spreads retries of many chats: ±20%.
func jitter(d time.Duration) time.Duration {
	if d <= 0 {
		return 0
	}
	return d - d/5 + rand.N(2*d/5+1)
}

func randomID() string {
	b := make([]byte, 12)
	_, _ = crand.Read(b) // crypto/rand.Read never fails
	return hex.EncodeToString(b)
}
