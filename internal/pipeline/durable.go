package pipeline

import (
	"context"
	"fmt"

	"github.com/pincerbot/pincer/internal/aggregate"
	"github.com/pincerbot/pincer/internal/msg"
	"github.com/pincerbot/pincer/internal/store"
	"github.com/pincerbot/pincer/internal/trigger"
)

// BufferStore keeps buffered messages across restarts; store.Store is one.
type BufferStore interface {
	Buffer(ctx context.Context, entries []store.Buffered) ([]int64, error)
	Unbuffer(ctx context.Context, ids []int64) error
	BufferedEntries(ctx context.Context, scope string) ([]store.Buffered, error)
}

// Kinds of stored buffer entries.
const (
	kindHistory  = "history"
	kindRealtime = "realtime"
	kindDigest   = "digest"
)

// takers says which buffers take a message.
type takers struct{ history, realtime, digest bool }

// refs are a message's stored entries per buffer, 0 when not stored.
type refs struct{ history, realtime, digest int64 }

// persist stores the message once for each buffer that takes it, before
// any buffer holds it. A store failure is logged and the message is held
// in memory only.
func (p *Pipeline) persist(ctx context.Context, m msg.Message, peer, rtKey string, d trigger.Decision, want takers) refs {
	var out refs
	if p.opts.Store == nil || !(want.history || want.realtime || want.digest) {
		return out
	}
	entries := make([]store.Buffered, 0, 3)
	slots := make([]*int64, 0, 3)
	if want.history {
		entries = append(entries, store.Buffered{Scope: p.opts.Scope, Kind: kindHistory, Key: peer, Message: m})
		slots = append(slots, &out.history)
	}
	if want.realtime {
		entries = append(entries, store.Buffered{Scope: p.opts.Scope, Kind: kindRealtime, Key: rtKey, Message: m, Trigger: d.Reason})
		slots = append(slots, &out.realtime)
	}
	if want.digest {
		entries = append(entries, store.Buffered{Scope: p.opts.Scope, Kind: kindDigest, Key: peer, Message: m})
		slots = append(slots, &out.digest)
	}
	ids, err := p.opts.Store.Buffer(context.WithoutCancel(ctx), entries)
	if err != nil {
		p.log.Error("buffered message not stored; a restart would lose it", "msg_id", string(m.ID), "err", err)
		return refs{}
	}
	for i, slot := range slots {
		*slot = ids[i]
	}
	return out
}

// unbuffer forgets stored entries that no buffer holds any more.
func (p *Pipeline) unbuffer(refs ...int64) {
	var ids []int64
	for _, r := range refs {
		if r != 0 {
			ids = append(ids, r)
		}
	}
	if len(ids) == 0 || p.opts.Store == nil {
		return
	}
	if err := p.opts.Store.Unbuffer(context.Background(), ids); err != nil {
		p.log.Warn("stale buffered entries not removed", "err", err)
	}
}

// Restore refills the buffers from the store after a restart: history and
// digest windows as they were, realtime windows reopened (their first
// message opens the window again, with fresh timers). Call it before
// messages flow.
func (p *Pipeline) Restore(ctx context.Context) error {
	if p.opts.Store == nil {
		return nil
	}
	entries, err := p.opts.Store.BufferedEntries(ctx, p.opts.Scope)
	if err != nil {
		return fmt.Errorf("pipeline %s: restore: %w", p.opts.Scope, err)
	}
	opened := map[string]bool{}
	counts := map[string]int{}
	for _, e := range entries {
		switch {
		case e.Kind == kindHistory && p.opts.Receive.History.Enabled:
			p.unbuffer(p.history.Add(e.Key, e.Message, e.ID)...)
		case e.Kind == kindDigest && p.opts.Receive.Digest.Enabled:
			for _, x := range p.digest.Accept(e.Key, aggregate.Entry[held]{Message: e.Message, Tag: held{ref: e.ID}}) {
				p.unbuffer(x.Tag.ref)
			}
		case e.Kind == kindRealtime && p.opts.ReplierFor != nil:
			h := held{r: p.opts.ReplierFor(e.Message), ref: e.ID}
			first := !opened[e.Key]
			opened[e.Key] = true
			if !p.realtime.Accept(e.Key, aggregate.Entry[held]{Message: e.Message, Tag: h}, first, e.Trigger) {
				p.unbuffer(e.ID)
			}
		default:
			p.unbuffer(e.ID) // that buffer is off now
			continue
		}
		counts[e.Kind]++
	}
	if len(entries) > 0 {
		p.log.Info("buffered messages restored", "history", counts[kindHistory], "realtime", counts[kindRealtime], "digest", counts[kindDigest])
	}
	return nil
}
