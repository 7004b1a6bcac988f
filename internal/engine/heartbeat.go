package engine

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/pincerbot/pincer/internal/channel"
	"github.com/pincerbot/pincer/internal/lazylog"
	"github.com/pincerbot/pincer/internal/llm"
	"github.com/pincerbot/pincer/internal/msg"
)

// DefaultHeartbeatPrompt asks the agent to check in, or to stay quiet with
// the heartbeat token.
const DefaultHeartbeatPrompt = "Heartbeat: this is a scheduled check-in, not a message from the user. " +
	"If something in this conversation needs following up, write it now. " +
	"If nothing needs attention, reply with exactly HEARTBEAT_OK."

// Heartbeat configures scheduled check-in turns.
type Heartbeat struct {
	// Every is the interval; 0 turns interval heartbeats off.
	Every time.Duration
	// Schedule, when set instead, gives the time of the next beat after
	// now (a cron schedule).
	Schedule func(now time.Time) time.Time
	// Prompt is the heartbeat turn's message; DefaultHeartbeatPrompt when
	// empty.
	Prompt string
	// Model, when set, runs heartbeats on this model first.
	Model llm.Ref
}

// target is where a heartbeat goes: the conversation last heard from.
type target struct {
	channel msg.ChannelID
	account msg.AccountID
	peer    msg.Peer
}

// noteActive remembers m's conversation as the heartbeat target.
func (e *Engine) noteActive(m msg.Message) {
	e.last.Store(&target{channel: m.Channel, account: m.Account, peer: m.Peer})
}

// RunHeartbeat runs a heartbeat turn on the heartbeat's schedule (its
// Schedule, else every Heartbeat.Every) until ctx ends,
// in the conversation last heard from, replying through the adapter that
// sends arrives by. A reply that is only the heartbeat token (or a short
// acknowledgement beside it) is not delivered, and a busy session skips
// the beat.
func (e *Engine) RunHeartbeat(ctx context.Context, adapters func(msg.ChannelID) (channel.Adapter, bool)) error {
	next := e.opts.Heartbeat.Schedule
	if every := e.opts.Heartbeat.Every; next == nil && every > 0 {
		next = func(now time.Time) time.Time { return now.Add(every) }
	}
	if next == nil {
		return nil
	}
	for {
		now := time.Now()
		at := next(now)
		if at.IsZero() {
			return nil // a schedule that never fires again
		}
		t := time.NewTimer(at.Sub(now))
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C:
			if err := e.Beat(adapters); err != nil && !errors.Is(err, ErrBusy) && !errors.Is(err, errNoTarget) {
				e.log.Warn("heartbeat", "err", err)
			}
		}
	}
}

// errNoTarget: no conversation has been heard from yet.
var errNoTarget = errors.New("no conversation to check in on yet")

// Beat runs one heartbeat turn now.
func (e *Engine) Beat(adapters func(msg.ChannelID) (channel.Adapter, bool)) error {
	e.state.RLock()
	closed := e.closed
	if !closed {
		e.inflight.Add(1)
	}
	e.state.RUnlock()
	if closed {
		return channel.ErrClosed
	}
	defer e.inflight.Done()
	tg := e.last.Load()
	if tg == nil {
		return errNoTarget
	}
	a, ok := adapters(tg.channel)
	if !ok {
		return fmt.Errorf("heartbeat: no adapter for channel %s", tg.channel)
	}
	prompt := e.opts.Heartbeat.Prompt
	if prompt == "" {
		prompt = DefaultHeartbeatPrompt
	}
	now := time.Now()
	m := msg.Message{
		ID: msg.MessageID(fmt.Sprintf("heartbeat-%d", now.UnixNano())), Channel: tg.channel, Account: tg.account, Peer: tg.peer,
		Sender: msg.Sender{ID: "heartbeat", Name: "heartbeat"}, Time: now, Text: prompt, Segments: []msg.Segment{msg.Text(prompt)},
	}
	mc := NewMsgContext(m)
	mc.SessionKey = e.SessionKey(m)
	mc.Heartbeat, mc.NoCommands = true, true
	mc = Finalize(mc, e.opts.Policy)
	ctx, cancel := context.WithCancel(e.base)
	defer cancel()
	log := lazylog.With(e.log, "channel", string(m.Channel), "peer", m.Peer.String(), "heartbeat", true)
	return e.enqueue(ctx, log, mc, channel.SenderReplier{Adapter: a})
}
