package pipeline

import (
	"context"
	"fmt"
	"time"

	"github.com/pincerbot/pincer/internal/aggregate"
	"github.com/pincerbot/pincer/internal/channel"
	"github.com/pincerbot/pincer/internal/msg"
	"github.com/pincerbot/pincer/internal/trace"
	"github.com/pincerbot/pincer/internal/trigger"
)

// A reply to a message nobody here knows (not sent by this bot as far as
// the store remembers, not received from someone else) triggers when the
// quoted message is the bot's, which only the platform can tell. Asking
// on the chat's lane would hold every later message of the chat, and the
// queue behind them, until the platform answers, and the platform's
// answer may itself wait behind those messages on the connection. So the
// message is taken in at once as chatter (logged, in the history and
// digest buffers), the question goes out off the lane, and an answer
// that the message quotes the bot opens its realtime window then, as if
// it had triggered on arrival: its sender's next lines join it, and the
// history it is answered with still holds what came before it. Between
// the two, other messages of the chat go on.
//
// The question is stored with the message's log entry (an entry of kind
// ask) until its answer is handled: a restart, or a handover of the chat
// to another process, before then asks again (Restore, RestoreWhere), so
// a reply to the bot is answered even when the process that took it in
// did not live to learn that it was one. Asking again is harmless: "not
// the bot's" changes nothing, and a reply answered before has its turn's
// admission claimed already.

// canAsk reports whether the channel can be asked whose a message is.
func (p *Pipeline) canAsk() bool {
	_, ok := p.opts.Bot.(Asker)
	return ok
}

// askOwner asks whose message m quotes and takes m as a trigger when it
// is the bot's. typed is m's text without its leading mention; ref is
// the stored question (0 for none), removed once its answer is handled,
// and kept when it is left to a restart or to the chat's next owner.
func (p *Pipeline) askOwner(ctx context.Context, m msg.Message, r channel.Replier, typed string, epoch uint64, ref int64) {
	key := trace.KeyOf(m)
	asker, ok := p.opts.Bot.(Asker)
	if !ok {
		p.opts.Trace.Step(key, trace.StageTrigger, "not triggered", "whose message "+string(m.ReplyTo)+" is cannot be asked on this channel; it is not taken as a reply to the bot")
		p.unbuffer(ref)
		return
	}
	p.mu.Lock()
	if p.flushed {
		p.mu.Unlock()
		if ref != 0 {
			p.opts.Trace.Step(key, trace.StageTrigger, "not triggered", "pincer was shutting down: whose message "+string(m.ReplyTo)+" is is asked at the next start")
			return
		}
		p.opts.Trace.Step(key, trace.StageTrigger, "not triggered", "pincer was shutting down: whose message "+string(m.ReplyTo)+" is was not asked")
		return
	}
	p.asks.Add(1)
	p.mu.Unlock()
	asked := time.Now()
	asker.AskSentByBot(context.WithoutCancel(ctx), m.ReplyTo, func(mine bool, err error) {
		took := time.Since(asked).Round(time.Millisecond)
		switch {
		case err != nil:
			p.asks.Done()
			p.log.Warn("whose message a reply quotes is unknown; it is not answered as a reply to the bot", "peer", m.Peer.String(), "msg_id", string(m.ID), "quoted", string(m.ReplyTo), "err", err)
			p.opts.Trace.Step(key, trace.StageTrigger, "not triggered", fmt.Sprintf("whose message %s is could not be learned (%v, after %s); it is not taken as a reply to the bot", m.ReplyTo, err, took))
			p.unbuffer(ref)
		case !mine:
			// The common answer: the message stays the chatter its trace
			// already says it is (its trigger step says a reply to the
			// bot's message would have followed).
			p.asks.Done()
			p.unbuffer(ref)
		default:
			// Opening the window writes to the store: not on the
			// goroutine that read the answer.
			go func() {
				defer p.asks.Done()
				why := fmt.Sprintf("a reply to the bot's message %s (the platform said so after %s)", m.ReplyTo, took)
				if p.lateTrigger(ctx, m, r, typed, epoch, trigger.Decision{Triggered: true, Reason: msg.TriggerReplyToSelf, Why: why}, ref != 0) {
					// Its window's entry is stored by now: a restart finds
					// the one or the other, at worst both (see
					// RestoreWhere), never neither.
					p.unbuffer(ref)
				}
			}()
		}
	})
}

// lateTrigger takes m, already in the chat's history and digest buffers,
// as the trigger d says it is: its realtime window opens now (or it joins
// its sender's open one), and a command acts at once. epoch is its chat's
// when it was taken in: a chat released since is not acted on. It is
// false when m is left to be taken up again by the chat's next owner or
// the next start: its chat was released, or the shutdown had answered
// the open bursts already. stored says whether m's question is stored,
// for the next start to ask again.
func (p *Pipeline) lateTrigger(ctx context.Context, m msg.Message, r channel.Replier, typed string, epoch uint64, d trigger.Decision, stored bool) bool {
	key := trace.KeyOf(m)
	d = p.bots.apply(m, p.chat(m.Peer).gate(m, d), p.opts.Receive.MaxBotReplyChain)
	if !d.Triggered {
		p.opts.Trace.Step(key, trace.StageTrigger, "not triggered", d.Why)
		return true
	}
	p.mu.Lock()
	flushed, released := p.flushed, p.epochs[m.Peer] != epoch
	p.mu.Unlock()
	if released {
		p.opts.Trace.Step(key, trace.StageTrigger, "not triggered", d.Why+"; learned of after its chat was released to another process, which asks again")
		return false
	}
	if flushed && stored {
		p.log.Info("a reply to the bot was learned of after the shutdown answered the open bursts; it is answered after the restart", "peer", m.Peer.String(), "msg_id", string(m.ID))
		p.opts.Trace.Step(key, trace.StageTrigger, "not triggered", d.Why+"; learned of after pincer had answered its open bursts for the shutdown: asked again and answered at the next start")
		return false
	}
	if flushed {
		p.log.Warn("a reply to the bot was learned of after the shutdown answered the open bursts; it is not answered", "peer", m.Peer.String(), "msg_id", string(m.ID))
		p.opts.Trace.Step(key, trace.StageTrigger, "not triggered", d.Why+"; learned of after pincer had answered its open bursts for the shutdown")
		return false
	}
	p.opts.Trace.Step(key, trace.StageTrigger, "triggered", d.Why)
	p.debugDecision(ctx, m, "triggered", d.Why)
	if m.Peer.Kind == msg.Group {
		p.ack(m)
	}
	rtKey := m.Peer.String() + "::" + string(m.Sender.ID)
	ref := p.bufferRealtime(ctx, m, rtKey, d)
	command := p.isCommand(typed)
	waiting := false
	p.isolate("realtime", func() {
		e := aggregate.Entry[held]{Message: m, Tag: held{r: r, ref: ref, epoch: epoch}}
		if command {
			p.endWindowFor(rtKey, p.opts.IsAbort(typed))
			waiting = p.realtime.AcceptIn(rtKey, e, true, d.Reason, p.chat(m.Peer).shape)
			p.realtime.FlushNow(rtKey, msg.FlushImmediate)
			return
		}
		if waiting = p.realtime.AcceptIn(rtKey, e, true, d.Reason, p.chat(m.Peer).shape); !waiting {
			p.unbuffer(ref)
		}
	})
	p.opts.Trace.Step(key, trace.StageBuffer, "", buffersTaken(false, true, false, command, waiting))
	return true
}
