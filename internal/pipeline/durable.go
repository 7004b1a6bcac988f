package pipeline

import (
	"context"
	"fmt"
	"slices"
	"unicode/utf8"

	"github.com/pincerbot/pincer/internal/aggregate"
	"github.com/pincerbot/pincer/internal/msg"
	"github.com/pincerbot/pincer/internal/store"
	"github.com/pincerbot/pincer/internal/trace"
	"github.com/pincerbot/pincer/internal/trigger"
)

// BufferStore logs the messages the pipeline takes and keeps what its
// buffers hold across restarts; store.Store is one. The history and digest
// buffers are views of the log (a message costs one log entry, however
// many buffers hold it); realtime windows keep entries of their own.
type BufferStore interface {
	LogInbound(ctx context.Context, m msg.Message, views store.Views) (int64, error)
	LogInboundBuffered(ctx context.Context, m msg.Message, views store.Views, b store.Buffered) (int64, int64, error)
	LogInboundPending(ctx context.Context, m msg.Message, views store.Views) (int64, error)
	CompleteInbound(ctx context.Context, seq int64, m msg.Message) error
	HeldInbound(ctx context.Context, ch msg.ChannelID, acct msg.AccountID, view store.Views, limit int) ([]store.LoggedMessage, error)
	Advance(ctx context.Context, marks ...store.Mark) error
	Buffer(ctx context.Context, entries []store.Buffered) ([]int64, error)
	Unbuffer(ctx context.Context, ids []int64) error
	BufferedEntries(ctx context.Context, scope string) ([]store.Buffered, error)
}

// Kinds of stored buffer entries.
const kindRealtime = "realtime"

// kindSummary is the kind of a stored /summary command not answered yet.
const kindSummary = "summary"

// kindAsk is the kind of a stored reply whose quoted message's author
// the platform is being asked (see askOwner).
const kindAsk = "ask"

// scope names the pipeline's buffered entries in the store.
func (p *Pipeline) scope() string { return string(p.opts.Channel) + "/" + string(p.opts.Account) }

// logMessage logs m into views before any buffer holds it and returns its
// number in the log, 0 when it is not logged; pending marks the entry as
// one completed later (see enrichLater). The write is not waited for (see
// store.InboundLog); a failure to hand it in is logged and the message
// held in memory only.
func (p *Pipeline) logMessage(ctx context.Context, m msg.Message, views store.Views, pending bool) int64 {
	if p.opts.Store == nil {
		return 0
	}
	log := p.opts.Store.LogInbound
	if pending {
		log = p.opts.Store.LogInboundPending
	}
	seq, err := log(context.WithoutCancel(ctx), m, views)
	if err != nil {
		p.log.Error("message not logged; a restart would lose it", "msg_id", string(m.ID), "err", err)
		return 0
	}
	return seq
}

// completesLater reports whether m's channel completes it (a merged
// forward to expand, content to fetch) and it is a group's, whose
// history later turns read.
func (p *Pipeline) completesLater(m msg.Message) bool {
	return p.opts.Enrich != nil && m.Peer.Kind == msg.Group && m.Incomplete()
}

// enrichLater completes m, logged pending as entry seq, off the chat's
// order, and rewrites its entry and its history line with the outcome —
// completed, or as it came when that failed (the enricher logs why) —
// lifting the watermark it was. Cut by Close, it leaves the entry pending
// for the next start (see Restore); so does a Release of its chat.
func (p *Pipeline) enrichLater(m msg.Message, seq int64) {
	p.enriching.Add(1)
	p.mu.Lock()
	epoch := p.epochs[m.Peer]
	if p.completing == nil {
		p.completing = map[msg.Peer][]int64{}
	}
	p.completing[m.Peer] = append(p.completing[m.Peer], seq)
	p.mu.Unlock()
	go func() {
		defer p.enriching.Done()
		out := p.enrich(p.enrichCtx, []msg.Message{m})
		if p.enrichCtx.Err() != nil {
			return
		}
		done := m
		if len(out) == 1 {
			done = out[0]
		}
		done.ForwardIDs, done.Deferred = nil, nil
		// Released meanwhile, the chat is another process's: the entry
		// stays pending for it to complete.
		p.mu.Lock()
		released := p.epochs[m.Peer] != epoch
		if !released {
			if rest := slices.DeleteFunc(p.completing[m.Peer], func(s int64) bool { return s == seq }); len(rest) > 0 {
				p.completing[m.Peer] = rest
			} else {
				delete(p.completing, m.Peer)
			}
		}
		p.mu.Unlock()
		if released {
			return
		}
		if err := p.opts.Store.CompleteInbound(context.Background(), seq, done); err != nil {
			p.log.Warn("completed message not written back to the log; the next start completes it again", "msg_id", string(m.ID), "err", err)
		}
		p.history.Complete(m.Peer.String(), seq, done)
		p.opts.Trace.Step(trace.KeyOf(m), trace.StageForward, "", enrichedText("off the chat's order", m, done))
	}()
}

// writeBack traces what the enricher made of a batch's messages it was
// to complete, and rewrites the log entries of those it completed (a
// merged forward that @s the bot, expanded for its turn), so what reads
// the log later (a restart's buffers, digests, summaries) reads them
// completed too.
func (p *Pipeline) writeBack(entries []aggregate.Entry[held], enriched []msg.Message) {
	if p.opts.Enrich == nil || len(entries) != len(enriched) {
		return
	}
	for i, e := range entries {
		if e.Message.Incomplete() {
			p.opts.Trace.Step(trace.KeyOf(e.Message), trace.StageForward, "", enrichedText("for its turn", e.Message, enriched[i]))
		}
	}
	if p.opts.Store == nil {
		return
	}
	for i, e := range entries {
		m := enriched[i]
		if e.Tag.seq == 0 || e.Message.Recalled || m.Text == e.Message.Text || m.Recalled {
			continue
		}
		m.ForwardIDs, m.Deferred = nil, nil
		if err := p.opts.Store.CompleteInbound(context.Background(), e.Tag.seq, m); err != nil {
			p.log.Warn("completed message not written back to the log", "msg_id", string(m.ID), "err", err)
		}
	}
}

// enrichedText says in the trace what completing m (when) made of it.
func enrichedText(when string, m, done msg.Message) string {
	if done.Text == m.Text {
		return "completed " + when + ": kept as it came (see the log for why)"
	}
	return fmt.Sprintf("completed %s: %d characters", when, utf8.RuneCountInString(done.Text))
}

// logBuffered is logMessage that also stores m's entry in its realtime
// window, in the same write (a crash keeps both or neither), before the
// window holds it; it returns the log number and the entry's id, 0 for
// what was not stored.
func (p *Pipeline) logBuffered(ctx context.Context, m msg.Message, views store.Views, rtKey string, d trigger.Decision) (seq, ref int64) {
	return p.logStored(ctx, m, views, store.Buffered{Kind: kindRealtime, Key: rtKey, Trigger: d.Reason},
		"message not logged nor buffered; a restart would lose it")
}

// logSummary logs a /summary command (in no view: it is no context for
// later replies) with its stored entry, in one write, and returns the
// entry's id, 0 when not stored.
func (p *Pipeline) logSummary(ctx context.Context, m msg.Message) int64 {
	_, ref := p.logStored(ctx, m, 0, store.Buffered{Kind: kindSummary, Key: m.Peer.String()},
		"/summary command not logged nor stored; a restart before its answer would lose it")
	return ref
}

// logAsk logs m, a reply whose quoted message's author is asked of the
// platform, with its stored question, in one write; it returns the log
// entry's number and the question's id, 0 when not stored.
func (p *Pipeline) logAsk(ctx context.Context, m msg.Message, views store.Views) (int64, int64) {
	return p.logStored(ctx, m, views, store.Buffered{Kind: kindAsk, Key: m.Peer.String()},
		"message not logged nor its question stored; a restart would lose it")
}

// logStored logs m into views with b, m's stored entry in the pipeline's
// scope, in one write (a crash keeps both or neither); it returns the log
// number and the entry's id, 0 for what was not stored, and logs lost
// when the write fails.
func (p *Pipeline) logStored(ctx context.Context, m msg.Message, views store.Views, b store.Buffered, lost string) (seq, ref int64) {
	if p.opts.Store == nil {
		return 0, 0
	}
	b.Scope, b.Message = p.scope(), m
	seq, ref, err := p.opts.Store.LogInboundBuffered(context.WithoutCancel(ctx), m, views, b)
	if err != nil {
		p.log.Error(lost, "msg_id", string(m.ID), "err", err)
		return 0, 0
	}
	return seq, ref
}

// bufferAsk stores the question of m, logged already (pending its
// completion); it returns the question's id, 0 when not stored.
func (p *Pipeline) bufferAsk(ctx context.Context, m msg.Message) int64 {
	return p.bufferOne(ctx, store.Buffered{Kind: kindAsk, Key: m.Peer.String(), Message: m},
		"the question whose message a reply quotes not stored; a restart before its answer would not answer it")
}

// bufferRealtime stores the realtime entry of m, logged already, before
// its window holds it; it returns the entry's id, 0 when not stored.
func (p *Pipeline) bufferRealtime(ctx context.Context, m msg.Message, rtKey string, d trigger.Decision) int64 {
	return p.bufferOne(ctx, store.Buffered{Kind: kindRealtime, Key: rtKey, Message: m, Trigger: d.Reason},
		"realtime entry not stored; a restart would not answer it")
}

// bufferOne stores b, an entry in the pipeline's scope of a message
// logged already; it returns the entry's id, 0 when not stored, and logs
// lost when the write fails.
func (p *Pipeline) bufferOne(ctx context.Context, b store.Buffered, lost string) int64 {
	if p.opts.Store == nil {
		return 0
	}
	b.Scope = p.scope()
	ids, err := p.opts.Store.Buffer(context.WithoutCancel(ctx), []store.Buffered{b})
	if err != nil || len(ids) != 1 {
		p.log.Error(lost, "msg_id", string(b.Message.ID), "err", err)
		return 0
	}
	return ids[0]
}

// unbuffer forgets stored realtime entries no window holds any more.
func (p *Pipeline) unbuffer(refs ...int64) {
	p.release(store.Consumed{Entries: refs})
}

// release forgets what no buffer holds any more, outside a turn.
func (p *Pipeline) release(c store.Consumed) {
	c.Entries = slices.DeleteFunc(c.Entries, func(r int64) bool { return r == 0 })
	if p.opts.Store == nil || c.Empty() {
		return
	}
	ctx := context.Background()
	if err := p.opts.Store.Unbuffer(ctx, c.Entries); err != nil {
		p.log.Warn("stale buffered entries not removed", "err", err)
	}
	if err := p.opts.Store.Advance(ctx, c.Marks...); err != nil {
		p.log.Warn("buffer views not advanced", "err", err)
	}
}

// mark is the mark that takes view of m's chat past the log entries refs
// (the ones a buffer drained); none when none was logged.
func (p *Pipeline) mark(m msg.Message, view store.Views, refs []int64) []store.Mark {
	upto := int64(0)
	for _, r := range refs {
		upto = max(upto, r)
	}
	if upto == 0 {
		return nil
	}
	return []store.Mark{{Channel: p.opts.Channel, Account: p.opts.Account, Peer: m.Peer, View: view, Seq: upto}}
}
