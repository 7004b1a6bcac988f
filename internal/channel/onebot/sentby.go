package onebot

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/pincerbot/pincer/internal/channel/onebot/wire"
	"github.com/pincerbot/pincer/internal/msg"
)

// Keeping the bot's sent ids. The newest ones are in memory (sentIDs);
// with a store they are also written there, so a reply to the bot's
// message still counts after a restart. Ids older than SentRetention are
// pruned from the store, at most once every sentPruneEvery. An id known
// to neither, nor received from someone else, is looked up with get_msg
// (reference §8.3), off the chat's order and without a goroutine waiting
// for it, and the answer, either way, is remembered for ownerTTL.
const (
	// SentRetention is how long the store keeps the bot's sent ids: a
	// week covers replies to anything still on screen; older ones fall
	// back to get_msg.
	SentRetention  = 7 * 24 * time.Hour
	sentPruneEvery = time.Hour
	// defaultOwnerTimeout bounds the get_msg that asks whose message a
	// quoted id is.
	defaultOwnerTimeout = 3 * time.Second
	ownerTTL            = 30 * time.Minute
	ownerMax            = 2000
)

// sentIDs remembers the ids of the bot's recent messages, so a reply to
// one of them can be recognised without a get_msg round trip.
type sentIDs struct {
	mu    sync.Mutex
	max   int
	order []msg.MessageID
	set   map[msg.MessageID]bool
}

// newSentIDs keeps the newest max ids (500 when max <= 0).
func newSentIDs(max int) *sentIDs {
	if max <= 0 {
		max = 500
	}
	return &sentIDs{max: max, set: map[msg.MessageID]bool{}}
}

// Add records id, forgetting the oldest beyond the limit.
func (s *sentIDs) Add(id msg.MessageID) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.set[id] {
		return
	}
	s.set[id] = true
	s.order = append(s.order, id)
	if len(s.order) > s.max {
		delete(s.set, s.order[0])
		s.order = s.order[1:]
	}
}

// Has reports whether id is one of the recent sent ids.
func (s *sentIDs) Has(id msg.MessageID) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.set[id]
}

// SentByBot reports whether id, quoted in peer's chat, is one of the bot's
// messages as far as the account knows without asking the implementation:
// one this process sent, one the store recorded, one get_msg attributed
// before, or one that arrived from someone else. known is false when only
// the implementation can tell; AskSentByBot asks it. It never waits for
// the implementation.
func (a *Account) SentByBot(ctx context.Context, peer msg.Peer, id msg.MessageID) (mine, known bool) {
	n, err := strconv.ParseInt(string(id), 10, 64)
	if err != nil {
		return false, true // not a OneBot message id
	}
	id = msg.MessageID(strconv.FormatInt(n, 10))
	// What memory knows first; the store only for what it does not.
	if a.sent.Has(id) {
		return true, true
	}
	if mine, ok := a.owners.get(id); ok {
		return mine, true
	}
	self := a.Self()
	if self != 0 && a.seen.has(seenKey(self, peer, id)) {
		return false, true // it came in from someone else
	}
	if a.opts.Sent != nil {
		ok, err := a.opts.Sent.WasSent(ctx, ChannelID, a.opts.ID, id)
		if err != nil {
			a.log.Warn("reading the bot's sent ids", "err", err)
		}
		if ok {
			return true, true
		}
	}
	// Without the bot's own number there is nothing to compare an answer
	// with.
	return false, self == 0
}

// errTooManyAsks: so many get_msg lookups wait for the implementation that
// one more is not asked.
var errTooManyAsks = errors.New("onebot: too many get_msg lookups in flight")

// maxAsks bounds the get_msg lookups in flight; each costs a pending entry
// and a timer, no goroutine.
const maxAsks = 4096

// ownerAsks are the get_msg lookups in flight, with whoever waits for each
// answer: several quotes of one message share one lookup.
type ownerAsks struct {
	mu      sync.Mutex
	waiting map[msg.MessageID][]func(mine bool, err error)
}

// AskSentByBot asks the implementation (get_msg) whether id is one of the
// bot's messages and calls then with the answer, once, without waiting for
// it: then runs later on another goroutine (the connection's reader, a
// timer) and must not block. err, when not nil, says why there is no
// answer (no connection, a timeout); mine is false then. The answer is
// remembered for a while, so SentByBot knows it next time.
//
// Asked while there is no connection to ask over, or before the bot's QQ
// number is known (a restart asks again the questions its last run left
// unanswered before the implementation is connected), or when the
// connection drops before the answer comes, the question waits for both
// and is asked again, up to askWait, and fails with errNotConnected (or
// errDisconnected) after that.
func (a *Account) AskSentByBot(ctx context.Context, id msg.MessageID, then func(mine bool, err error)) {
	n, err := strconv.ParseInt(string(id), 10, 64)
	if err != nil {
		then(false, nil) // no message id of QQ's
		return
	}
	a.askWhenConnected(ctx, n, then, time.Now().Add(askWait))
}

// askWait is how long a question waits for a connection to ask over, and
// askRetry how often it looks for one meanwhile.
const (
	askWait  = time.Minute
	askRetry = 250 * time.Millisecond
)

// askWhenConnected asks whose message n is at once when the account
// can, else again after askRetry, until deadline.
func (a *Account) askWhenConnected(ctx context.Context, n int64, then func(mine bool, err error), deadline time.Time) {
	if _, err := a.liveCaller(); err == nil && a.Self() != 0 {
		a.ask(ctx, n, then, deadline)
		return
	}
	if err := ctx.Err(); err != nil {
		then(false, fmt.Errorf("get_msg: %w", err))
		return
	}
	if !time.Now().Before(deadline) {
		then(false, fmt.Errorf("get_msg: %w (waited %s)", errNotConnected, askWait))
		return
	}
	time.AfterFunc(askRetry, func() { a.askWhenConnected(ctx, n, then, deadline) })
}

// ask is AskSentByBot over the connection there is now. A connection
// that turns out to be gone or drops before the answer (or, in a cluster,
// no process holding one) sends the question back to wait for one, until
// deadline.
func (a *Account) ask(ctx context.Context, n int64, then func(mine bool, err error), deadline time.Time) {
	self := a.Self()
	if self == 0 {
		then(false, nil)
		return
	}
	id := msg.MessageID(strconv.FormatInt(n, 10))
	a.asks.mu.Lock()
	if waiting, ok := a.asks.waiting[id]; ok {
		a.asks.waiting[id] = append(waiting, then)
		a.asks.mu.Unlock()
		return
	}
	if len(a.asks.waiting) >= maxAsks {
		a.asks.mu.Unlock()
		then(false, fmt.Errorf("%w (%d)", errTooManyAsks, maxAsks))
		return
	}
	if a.asks.waiting == nil {
		a.asks.waiting = map[msg.MessageID][]func(bool, error){}
	}
	a.asks.waiting[id] = []func(bool, error){then}
	a.asks.mu.Unlock()
	timeout := a.opts.ownerTimeout
	if timeout <= 0 {
		timeout = defaultOwnerTimeout
	}
	a.callAsync(ctx, "get_msg", getMsgParams{MessageID: n}, timeout, func(data json.RawMessage, err error) {
		mine, definite := ownerOf(data, err, self)
		if definite {
			a.owners.put(id, mine)
			err = nil
		} else {
			a.log.Debug("whose message is quoted: get_msg failed", "msg_id", string(id), "err", err)
		}
		a.asks.mu.Lock()
		waiting := a.asks.waiting[id]
		delete(a.asks.waiting, id)
		a.asks.mu.Unlock()
		// No connection to ask over, or one that dropped while asked: the
		// question (read-only, so safe to ask twice) waits for the next,
		// once for all who wait for it, as it was asked.
		if (errors.Is(err, errNotConnected) || errors.Is(err, errDisconnected)) && time.Now().Before(deadline) {
			time.AfterFunc(askRetry, func() {
				a.askWhenConnected(ctx, n, func(mine bool, err error) {
					for _, then := range waiting {
						then(mine, err)
					}
				}, deadline)
			})
			return
		}
		for _, then := range waiting {
			then(mine, err)
		}
	})
}

// getMsgParams are get_msg's: the id of the message.
type getMsgParams struct {
	MessageID int64 `json:"message_id"`
}

// ownerOf reads get_msg's answer: whether the message is self's. definite
// is false when the answer says nothing about the message (no connection,
// a timeout); a failure the implementation reports means it does not know
// the message, which is not the bot's then.
func ownerOf(data json.RawMessage, err error, self wire.ID) (mine, definite bool) {
	if err != nil {
		var ae *wire.ActionError
		return false, errors.As(err, &ae)
	}
	sender, _ := wire.Author(data)
	return sender == self, true
}

// callAsync runs an action over the newest live connection without
// waiting for it (Conn.Go); over the HTTP API, which has no such thing, on
// a goroutine of its own. done learns the outcome once and must not block.
func (a *Account) callAsync(ctx context.Context, action string, params any, timeout time.Duration, done func(json.RawMessage, error)) {
	c, err := a.liveCaller()
	if err != nil {
		done(nil, fmt.Errorf("%s: %w", action, err))
		return
	}
	if conn, ok := c.(*Conn); ok {
		conn.Go(action, params, timeout, done)
		return
	}
	go func() { done(c.Call(ctx, action, params, timeout)) }()
}

// recordSent remembers the id of a message the bot just sent, in memory
// and in the store.
func (a *Account) recordSent(ctx context.Context, id msg.MessageID) {
	a.sent.Add(id)
	a.owners.put(id, true)
	st := a.opts.Sent
	if st == nil {
		return
	}
	ctx = context.WithoutCancel(ctx) // the message went out; its id is kept
	if err := st.RecordSent(ctx, ChannelID, a.opts.ID, id); err != nil {
		a.log.Warn("recording a sent message id", "msg_id", string(id), "err", err)
	}
	a.mu.Lock()
	prune := time.Since(a.sentPruned) >= sentPruneEvery
	if prune {
		a.sentPruned = time.Now()
	}
	a.mu.Unlock()
	if prune {
		if _, err := st.PruneSent(ctx, time.Now().Add(-SentRetention)); err != nil {
			a.log.Warn("pruning sent message ids", "err", err)
		}
	}
}

// ownerCache remembers whose message an id is, for a while, bounded in
// size (oldest forgotten first).
type ownerCache struct {
	mu    sync.Mutex
	items map[msg.MessageID]ownerEntry
	order []msg.MessageID
}

type ownerEntry struct {
	mine    bool
	expires time.Time
}

func (c *ownerCache) get(id msg.MessageID) (mine, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.items[id]
	if !ok || !time.Now().Before(e.expires) {
		return false, false
	}
	return e.mine, true
}

func (c *ownerCache) put(id msg.MessageID, mine bool) {
	now := time.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.items == nil {
		c.items = map[msg.MessageID]ownerEntry{}
	}
	if _, ok := c.items[id]; !ok {
		c.order = append(c.order, id)
	}
	c.items[id] = ownerEntry{mine: mine, expires: now.Add(ownerTTL)}
	for len(c.order) > 0 {
		oldest := c.order[0]
		if e, ok := c.items[oldest]; ok && len(c.items) <= ownerMax && now.Before(e.expires) {
			break
		}
		delete(c.items, oldest)
		c.order = c.order[1:]
	}
}
