package onebot

import (
	"context"
	"encoding/json"
	"errors"
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
// to neither is looked up with get_msg (reference §8.3), and the answer,
// either way, is remembered for ownerTTL.
const (
	// SentRetention is how long the store keeps the bot's sent ids: a
	// week covers replies to anything still on screen; older ones fall
	// back to get_msg.
	SentRetention  = 7 * 24 * time.Hour
	sentPruneEvery = time.Hour
	// defaultOwnerTimeout bounds the get_msg that asks whose message a
	// quoted id is: it runs before the message is handled.
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

// SentByBot reports whether id is one of the bot's messages: one this
// process sent, one the store recorded, or one get_msg attributes to the
// bot. It never fails: an error on the way means "not the bot".
func (a *Account) SentByBot(ctx context.Context, id msg.MessageID) bool {
	if id == "" {
		return false
	}
	if a.sent.Has(id) {
		return true
	}
	if a.opts.Sent != nil {
		ok, err := a.opts.Sent.WasSent(ctx, ChannelID, a.opts.ID, id)
		if err != nil {
			a.log.Warn("reading the bot's sent ids", "err", err)
		}
		if ok {
			return true
		}
	}
	if mine, ok := a.owners.get(id); ok {
		return mine
	}
	self := a.Self()
	if self == 0 {
		return false // nothing to compare with; ask again once known
	}
	mine, definite := a.askOwner(ctx, id, self)
	if definite {
		a.owners.put(id, mine)
	}
	return mine
}

// askOwner asks get_msg who sent id. definite is false when the answer
// says nothing about the message (no connection, a timeout), so it is not
// remembered.
func (a *Account) askOwner(ctx context.Context, id msg.MessageID, self wire.ID) (mine, definite bool) {
	n, err := strconv.ParseInt(string(id), 10, 64)
	if err != nil {
		return false, true // not a OneBot message id
	}
	timeout := a.opts.ownerTimeout
	if timeout <= 0 {
		timeout = defaultOwnerTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	data, err := a.Call(ctx, "get_msg", map[string]any{"message_id": n}, timeout)
	if err != nil {
		var ae *wire.ActionError
		a.log.Debug("whose message is quoted: get_msg failed", "msg_id", string(id), "err", err)
		return false, errors.As(err, &ae) // the implementation answered: it does not know the message
	}
	var ans struct {
		UserID wire.ID `json:"user_id"`
		Sender struct {
			UserID wire.ID `json:"user_id"`
		} `json:"sender"`
	}
	if json.Unmarshal(data, &ans) != nil {
		return false, true
	}
	sender := ans.Sender.UserID
	if sender == 0 {
		sender = ans.UserID
	}
	return sender == self, true
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
