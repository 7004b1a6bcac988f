package onebot

import (
	"cmp"
	"context"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/pincerbot/pincer/internal/channel"
	"github.com/pincerbot/pincer/internal/msg"
)

// Backfill bounds: implementations replay nothing after a disconnect, so a
// new connection reads the recent history of every chat active lately
// (the most recent first) and hands on what arrived in the gap: up to
// backfillCount messages a chat. It is paced, since fast history reads look
// risky to QQ.
const (
	backfillActive = 30 * time.Minute
	backfillCount  = 50
	backfillGap    = 300 * time.Millisecond
	maxLastSeen    = 4096
)

// noteSeen records the newest message time of m's chat.
func (a *Account) noteSeen(m msg.Message) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.lastSeen == nil {
		a.lastSeen = map[msg.Peer]time.Time{}
	}
	if m.Time.After(a.lastSeen[m.Peer]) {
		a.lastSeen[m.Peer] = m.Time
	}
	// Forget inactive chats now and then, not on every message.
	if len(a.lastSeen) > maxLastSeen && time.Since(a.lastPruned) > time.Minute {
		a.lastPruned = time.Now()
		for p, t := range a.lastSeen {
			if time.Since(t) > backfillActive {
				delete(a.lastSeen, p)
			}
		}
	}
}

// backfill hands on the messages the active chats received while the
// account was disconnected. Messages already handled are dropped by the
// same dedup as live events.
func (a *Account) backfill(ctx context.Context, c caller, sink channel.Sink, wg *sync.WaitGroup) {
	a.mu.Lock()
	since := maps.Clone(a.lastSeen)
	self := a.self
	a.mu.Unlock()
	peers := make([]msg.Peer, 0, len(since))
	for p, t := range since {
		if time.Since(t) <= backfillActive {
			peers = append(peers, p)
		}
	}
	// The most recently active first.
	slices.SortFunc(peers, func(x, y msg.Peer) int { return cmp.Compare(since[y].UnixNano(), since[x].UnixNano()) })
	found := 0
	for i, p := range peers {
		if i > 0 {
			t := time.NewTimer(backfillGap)
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-t.C:
			}
		}
		// A page or three: the gap is usually short, and the next
		// reconnect reads again.
		r := historyReader{Caller: c, Account: a.opts.ID, Self: self, MaxPages: 3, Gap: backfillGap, Since: since[p]}
		msgs, err := r.Read(ctx, p, channel.HistoryQuery{Count: backfillCount})
		if err != nil {
			a.log.Debug("backfill", "peer", p.String(), "err", err)
			continue
		}
		for _, m := range msgs {
			if m.Time.Before(since[p]) || (self != 0 && m.Sender.ID == msg.UserID(self.String())) {
				continue
			}
			found++
			a.admit(ctx, self, m, sink, wg)
		}
	}
	if len(peers) > 0 {
		a.log.Info("backfilled after reconnecting", "chats", len(peers), "messages_checked", found)
	}
}
