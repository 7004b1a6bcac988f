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

// persist stores the message once for each buffer that takes it, before
// any buffer holds it, and returns the stored entries by kind. A store
// failure is logged and the message is held in memory only.
func (p *Pipeline) persist(ctx context.Context, m msg.Message, peer, rtKey string, d trigger.Decision, want map[string]bool) map[string]int64 {
	refs := map[string]int64{}
	if p.opts.Store == nil {
		return refs
	}
	var entries []store.Buffered
	for _, kind := range []string{kindHistory, kindRealtime, kindDigest} {
		if !want[kind] {
			continue
		}
		e := store.Buffered{Scope: p.opts.Scope, Kind: kind, Key: peer, Message: m}
		if kind == kindRealtime {
			e.Key, e.Trigger = rtKey, d.Reason
		}
		entries = append(entries, e)
	}
	if len(entries) == 0 {
		return refs
	}
	ids, err := p.opts.Store.Buffer(context.WithoutCancel(ctx), entries)
	if err != nil {
		p.log.Error("buffered message not stored; a restart would lose it", "msg_id", string(m.ID), "err", err)
		return refs
	}
	for i, e := range entries {
		refs[e.Kind] = ids[i]
	}
	return refs
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
