package pipeline

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/pincerbot/pincer/internal/aggregate"
	"github.com/pincerbot/pincer/internal/msg"
	"github.com/pincerbot/pincer/internal/store"
	"github.com/pincerbot/pincer/internal/trace"
	"github.com/pincerbot/pincer/internal/trigger"
)

// What a pipeline that takes part of an account's chats over from
// another process (and gives them back) does: RestoreWhere brings back
// what the store holds of the chats it takes over, Release forgets what
// it holds of the chats it gives up. A chat's epoch counts its releases:
// every buffered entry carries the epoch it was taken in, and nothing is
// done here with an entry of an older epoch (a window that fired as it
// was released, a batch on its way to the engine).

// ErrReleased is the outcome of a message whose realtime window Release
// dropped: another process answers it now.
var ErrReleased = errors.New("pipeline: the chat was released before the message was answered")

// Restore refills the buffers from the store after a restart: history and
// digest windows as they were, realtime windows reopened (their first
// message opens the window again, with fresh timers). Call it before
// messages flow. It is RestoreWhere for every chat.
func (p *Pipeline) Restore(ctx context.Context) error {
	return p.RestoreWhere(ctx, nil)
}

// RestoreWhere is Restore for the chats keep accepts (nil: all), for a
// process that takes those chats over from another (see Release). A chat
// is restored once: a chat restored before and not released since, or
// whose buffers hold messages already, is left as it is, so a later call
// for other chats adds only those. Call it before messages of those
// chats flow.
func (p *Pipeline) RestoreWhere(ctx context.Context, keep func(msg.Peer) bool) error {
	if p.opts.Store == nil {
		return nil
	}
	// fresh decides once per chat and buffer whether it is restored
	// here: keep accepts it, it was not restored since it was last
	// released, and the buffer holds nothing of it yet.
	type chatBuffer struct {
		peer msg.Peer
		kind string
	}
	decided := map[chatBuffer]bool{}
	fresh := func(peer msg.Peer, kind string, empty func() bool) bool {
		k := chatBuffer{peer, kind}
		if ok, seen := decided[k]; seen {
			return ok
		}
		ok := keep == nil || keep(peer)
		if ok {
			p.mu.Lock()
			_, again := p.restored[peer]
			p.mu.Unlock()
			ok = !again && empty()
		}
		decided[k] = ok
		return ok
	}
	r := p.opts.Receive
	counts := map[string]int{}
	// Chats with settings of their own may keep a history or digest the
	// account does not: each message goes back as its chat says.
	if r.History.Enabled || p.opts.Chat != nil {
		logged, err := p.opts.Store.HeldInbound(ctx, p.opts.Channel, p.opts.Account, store.ViewHistory, r.History.MaxMessages)
		if err != nil {
			return fmt.Errorf("pipeline %s: restore history: %w", p.scope(), err)
		}
		for _, lm := range logged {
			peer := lm.Message.Peer
			key := peer.String()
			if !p.chat(peer).Receive.History.Enabled || !fresh(peer, "history", func() bool { return p.history.Len(key) == 0 }) {
				continue
			}
			if lm.Pending && p.opts.Enrich != nil {
				// Left pending by the run before: completed now.
				p.history.AddPending(key, lm.Message, lm.Seq)
				p.enrichLater(lm.Message, lm.Seq)
			} else {
				p.history.Add(key, lm.Message, lm.Seq)
			}
			counts["history"]++
		}
	}
	if r.Digest.Enabled || p.opts.Chat != nil {
		logged, err := p.opts.Store.HeldInbound(ctx, p.opts.Channel, p.opts.Account, store.ViewDigest, r.Digest.MaxMessages)
		if err != nil {
			return fmt.Errorf("pipeline %s: restore digests: %w", p.scope(), err)
		}
		for _, lm := range logged {
			peer := lm.Message.Peer
			key := peer.String()
			c := p.chat(peer)
			if c.Silent || !c.Receive.Digest.Enabled || !fresh(peer, "digest", func() bool { return !p.digest.Open(key) }) {
				continue
			}
			p.digest.AcceptEvery(key, aggregate.Entry[held]{Message: lm.Message, Tag: held{ref: lm.Seq, epoch: p.epoch(peer)}}, c.Receive.Digest.Interval)
			counts["digest"]++
		}
	}
	entries, err := p.opts.Store.BufferedEntries(ctx, p.scope())
	if err != nil {
		return fmt.Errorf("pipeline %s: restore: %w", p.scope(), err)
	}
	opened := map[string]bool{}
	// The messages restored into realtime windows, and the questions
	// asked again after them: a question whose answer opened the
	// message's window before the restart may be stored still.
	windowed := map[string]bool{}
	var asks []store.Buffered
	for _, e := range entries {
		peer := e.Message.Peer
		if e.Kind == kindSummary {
			if fresh(peer, kindSummary, func() bool { return true }) && p.restoreSummary(e) {
				counts[kindSummary]++
			}
			continue
		}
		if e.Kind == kindAsk {
			asks = append(asks, e)
			continue
		}
		shape := p.chat(peer).shape
		if !fresh(peer, kindRealtime, func() bool { return len(p.realtime.Windows(peer.String()+"::")) == 0 }) {
			continue
		}
		if e.Kind != kindRealtime || p.opts.ReplierFor == nil {
			p.unbuffer(e.ID) // that buffer is off now
			continue
		}
		h := held{r: p.opts.ReplierFor(e.Message), ref: e.ID, epoch: p.epoch(peer)}
		first := !opened[e.Key]
		opened[e.Key] = true
		if !p.realtime.AcceptIn(e.Key, aggregate.Entry[held]{Message: e.Message, Tag: h}, first, e.Trigger, shape) {
			p.unbuffer(e.ID)
			continue
		}
		windowed[peer.String()+"\x00"+string(e.Message.ID)] = true
		counts[kindRealtime]++
	}
	for _, e := range asks {
		peer := e.Message.Peer
		if !fresh(peer, kindAsk, func() bool { return true }) {
			continue
		}
		if windowed[peer.String()+"\x00"+string(e.Message.ID)] || p.opts.ReplierFor == nil {
			p.unbuffer(e.ID)
			continue
		}
		m := e.Message
		p.opts.Trace.Step(trace.KeyOf(m), trace.StageTrigger, "not triggered", "whose message "+string(m.ReplyTo)+" is was not learned before a restart or a handover: asked again")
		p.askOwner(ctx, m, p.opts.ReplierFor(m), trigger.StripLeadingMention(m, p.opts.Bot.Self()), p.epoch(peer), e.ID)
		counts[kindAsk]++
	}
	p.mu.Lock()
	if keep != nil && p.chats == nil {
		// From now on the pipeline remembers the chats it takes messages
		// of, for Release to find their history.
		p.chats = map[msg.Peer]struct{}{}
	}
	for k, ok := range decided {
		// Restore for every chat (a single process) remembers none: the
		// buffers' own contents say what was restored.
		if ok && p.chats != nil {
			if p.restored == nil {
				p.restored = map[msg.Peer]struct{}{}
			}
			p.restored[k.peer] = struct{}{}
		}
	}
	p.mu.Unlock()
	if counts["history"]+counts["digest"]+counts[kindRealtime]+counts[kindSummary]+counts[kindAsk] > 0 {
		p.log.Info("buffered messages restored", "history", counts["history"], "realtime", counts[kindRealtime], "digest", counts["digest"], "summary", counts[kindSummary], "asked", counts[kindAsk])
	}
	return nil
}

// restoreSummary answers again a stored /summary command that was not
// answered before a restart or a handover; false when it is not answered
// any more (its chat's summaries were turned off since), and its entry
// is removed.
func (p *Pipeline) restoreSummary(e store.Buffered) bool {
	m := e.Message
	typed := trigger.StripLeadingMention(m, p.opts.Bot.Self())
	count, ok := p.summaryCount(p.chat(m.Peer), m, typed)
	if !ok || p.opts.ReplierFor == nil {
		p.unbuffer(e.ID)
		return false
	}
	p.opts.Trace.Step(trace.KeyOf(m), trace.StageCommand, "summary", fmt.Sprintf("/summary of the last %d messages, taken up again after a restart or a handover", count))
	p.runSummary(m, count, p.opts.ReplierFor(m), e.ID, p.epoch(m.Peer), func(error) {})
	return true
}

// Release forgets what the pipeline holds of the chats keep accepts, for
// a process that gives them up to another: their realtime and digest
// windows are stopped without firing, their history is dropped, and what
// was taken in before is not acted on any more (a batch flushed just
// before and not yet handed to the engine is dropped; a message whose
// window is dropped learns ErrReleased). The store keeps all of it, for
// RestoreWhere here or in another process. A message of a released chat
// that arrives later is taken in as any other.
//
// Still running after Release returns, for those chats: turns handed to
// the engine before (Engine.Release stops them), /summary commands in
// progress, and the completion of merged forwards (whose result is no
// longer written back).
func (p *Pipeline) Release(keep func(msg.Peer) bool) {
	if keep == nil {
		return
	}
	chats := map[msg.Peer]bool{}
	consider := func(peer msg.Peer) {
		if _, seen := chats[peer]; !seen {
			chats[peer] = keep(peer)
		}
	}
	// The chats the pipeline holds anything of.
	for _, w := range p.realtime.Windows("") {
		if peer, ok := peerOfKey(w.Key); ok {
			consider(peer)
		}
	}
	for _, key := range p.digest.Keys() {
		if peer, err := msg.ParsePeer(key); err == nil {
			consider(peer)
		}
	}
	p.mu.Lock()
	for peer := range p.chats {
		consider(peer)
	}
	for peer := range p.restored {
		consider(peer)
	}
	for peer := range p.completing {
		consider(peer)
	}
	for peer, ok := range chats {
		if !ok {
			continue
		}
		if p.epochs == nil {
			p.epochs = map[msg.Peer]uint64{}
		}
		p.epochs[peer]++
		delete(p.restored, peer)
		delete(p.chats, peer)
	}
	p.mu.Unlock()
	released := 0
	for peer, ok := range chats {
		if !ok {
			continue
		}
		released++
		key := peer.String()
		for _, w := range p.realtime.Windows(key + "::") {
			for _, e := range p.realtime.Discard(w.Key) {
				if e.Tag.done != nil {
					e.Tag.done(ErrReleased)
				}
			}
		}
		p.digest.Drop(key)
		p.dropHistory(peer)
	}
	if released > 0 {
		p.log.Info("chats released: their buffers stay in the store", "chats", released)
	}
}

// dropHistory empties peer's history buffer, its lines still waiting for
// their completion included; the log and its marks are left as they are.
func (p *Pipeline) dropHistory(peer msg.Peer) {
	key := peer.String()
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, seq := range p.completing[peer] {
		p.history.Complete(key, seq, msg.Message{})
	}
	delete(p.completing, peer)
	p.history.Take(key, nil, time.Now())
}

// peerOfKey is the chat of a realtime window's key ("<peer>::<sender>").
func peerOfKey(key string) (msg.Peer, bool) {
	s, _, ok := strings.Cut(key, "::")
	if !ok {
		return msg.Peer{}, false
	}
	peer, err := msg.ParsePeer(s)
	return peer, err == nil
}

// epoch is peer's epoch now: how many times it was released.
func (p *Pipeline) epoch(peer msg.Peer) uint64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.epochs[peer]
}

// stale reports whether the entries were taken in before their chat was
// released: nothing is done with them here any more.
func (p *Pipeline) stale(entries []aggregate.Entry[held]) bool {
	if len(entries) == 0 {
		return false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.epochs) == 0 {
		return false
	}
	for _, e := range entries {
		if e.Tag.epoch != p.epochs[e.Message.Peer] {
			return true
		}
	}
	return false
}
