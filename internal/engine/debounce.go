package engine

import (
	"context"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/pincerbot/pincer/internal/channel"
	"github.com/pincerbot/pincer/internal/msg"
)

// DebounceOptions configure a Debouncer.
type DebounceOptions struct {
	// Window returns the quiet window for a message's channel; 0 means the
	// channel is not debounced.
	Window func(ch msg.ChannelID) time.Duration
	// MaxWait caps a batch, measured from its first message; 0 means five
	// times the window. Sustained input cannot hold a batch open forever.
	MaxWait time.Duration
	// Bypass reports messages that are never held, such as commands; any
	// batch of the same sender is flushed before them. Abort reports the
	// stop words among them: the sender's held batch is dropped instead,
	// so the stop takes effect at once.
	Bypass func(m msg.Message) bool
	Abort  func(m msg.Message) bool
	// MaxKeys bounds the batches held at once; a message beyond it is
	// dispatched at once. 0 means 2048.
	MaxKeys int
}

// Debouncer merges a sender's burst of text messages into one dispatch: a
// quiet window restarts with every message, and a batch never waits longer
// than MaxWait from its first message. Media flush at once, and bypassed
// messages (commands) are never held.
type Debouncer struct {
	next channel.Sink
	opts DebounceOptions

	mu      sync.Mutex
	batches map[string]*batch
	closed  bool
	running sync.WaitGroup
}

type batch struct {
	ctx     context.Context
	entries []entry
	timer   *time.Timer
	first   time.Time
	window  time.Duration
	maxWait time.Duration
}

type entry struct {
	m    msg.Message
	r    channel.Replier
	done chan error
}

var _ channel.Sink = (*Debouncer)(nil)

// NewDebouncer returns a Debouncer in front of next.
func NewDebouncer(next channel.Sink, o DebounceOptions) *Debouncer {
	if o.MaxKeys <= 0 {
		o.MaxKeys = 2048
	}
	if o.Bypass == nil {
		o.Bypass = func(msg.Message) bool { return false }
	}
	if o.Abort == nil {
		o.Abort = func(msg.Message) bool { return false }
	}
	return &Debouncer{next: next, opts: o, batches: map[string]*batch{}}
}

// debounceKey groups messages of one sender in one conversation.
func debounceKey(m msg.Message) string {
	return string(m.Channel) + "\x00" + string(m.Account) + "\x00" + m.Peer.String() + "\x00" + string(m.Sender.ID)
}

// Dispatch implements channel.Sink. A held message's Dispatch returns when
// the merged turn it joined has been dispatched: channel.ErrMerged for all
// but the last message of the batch, whose replier got the reply.
func (d *Debouncer) Dispatch(ctx context.Context, m msg.Message, r channel.Replier) error {
	return d.admit(ctx, m, r)()
}

// Take implements channel.Taker: m is held, or what was held for its
// sender is let go and m handed on, before Take returns, so messages taken
// one after the other keep their order; done learns what Dispatch would
// have returned.
func (d *Debouncer) Take(ctx context.Context, m msg.Message, r channel.Replier, done func(error)) {
	wait := d.admit(ctx, m, r)
	go func() {
		err := wait()
		if done != nil {
			done(err)
		}
	}()
}

// admit holds m, or lets go what was held for its sender, and returns
// what remains of its Dispatch: waiting for its batch's outcome, or
// handing it on.
func (d *Debouncer) admit(ctx context.Context, m msg.Message, r channel.Replier) func() error {
	window := time.Duration(0)
	if d.opts.Window != nil {
		window = d.opts.Window(m.Channel)
	}
	key := debounceKey(m)
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return func() error { return channel.ErrClosed }
	}
	b := d.batches[key]
	hold := window > 0 && !d.opts.Bypass(m) && !hasMedia(m) && (b != nil || len(d.batches) < d.opts.MaxKeys)
	if !hold {
		if b != nil && d.opts.Abort(m) {
			// The sender said stop: what they were still typing is not
			// to be answered, and the stop must not wait behind it.
			delete(d.batches, key)
			b.timer.Stop()
			d.mu.Unlock()
			for _, e := range b.entries {
				e.done <- channel.ErrStopped
			}
			return func() error { return d.next.Dispatch(ctx, m, r) }
		}
		// Anything held for this sender goes first, so order is kept.
		if b != nil {
			d.detach(key, b)
		}
		d.mu.Unlock()
		return func() error {
			if b != nil {
				d.flush(b)
			}
			return d.next.Dispatch(ctx, m, r)
		}
	}
	e := entry{m: m, r: r, done: make(chan error, 1)}
	now := time.Now()
	if b == nil {
		maxWait := d.opts.MaxWait
		if maxWait <= 0 {
			maxWait = 5 * window
		}
		b = &batch{ctx: context.WithoutCancel(ctx), first: now, window: window, maxWait: maxWait}
		d.batches[key] = b
		b.timer = time.AfterFunc(window, func() { d.fire(key, b) })
	} else {
		// Restart the quiet window, but never past the batch's deadline.
		b.timer.Reset(min(window, b.first.Add(b.maxWait).Sub(now)))
	}
	b.entries = append(b.entries, e)
	d.mu.Unlock()
	return func() error { return <-e.done }
}

func hasMedia(m msg.Message) bool {
	return slices.ContainsFunc(m.Segments, func(s msg.Segment) bool {
		switch s.Kind {
		case msg.SegImage, msg.SegVoice, msg.SegVideo, msg.SegFile:
			return true
		}
		return false
	})
}

// fire flushes a batch whose timer ran out.
func (d *Debouncer) fire(key string, b *batch) {
	d.mu.Lock()
	if d.batches[key] != b {
		d.mu.Unlock()
		return // already flushed by a bypassing message or Close
	}
	d.detach(key, b)
	d.mu.Unlock()
	d.flush(b)
}

// detach removes b from the held batches; d.mu must be held.
func (d *Debouncer) detach(key string, b *batch) {
	delete(d.batches, key)
	b.timer.Stop()
	d.running.Add(1)
}

// flush dispatches a detached batch as one message and releases its
// waiters.
func (d *Debouncer) flush(b *batch) {
	defer d.running.Done()
	msgs := make([]msg.Message, len(b.entries))
	for i, e := range b.entries {
		msgs[i] = e.m
	}
	last := b.entries[len(b.entries)-1]
	err := d.next.Dispatch(b.ctx, Merge(msgs), last.r)
	for i, e := range b.entries {
		if i < len(b.entries)-1 && err == nil {
			e.done <- channel.ErrMerged
			continue
		}
		e.done <- err
	}
}

// Merge combines a sender's burst into one message: texts joined by
// newlines, segments and mentions concatenated, and the last message's ids,
// time and quote, so the reply threads to the newest message.
func Merge(msgs []msg.Message) msg.Message {
	if len(msgs) == 1 {
		return msgs[0]
	}
	out := msgs[len(msgs)-1]
	texts := make([]string, 0, len(msgs))
	out.Segments, out.Mentions, out.ForwardIDs = nil, nil, nil
	out.AtAll = false
	for i, m := range msgs {
		texts = append(texts, m.Text)
		if i > 0 {
			out.Segments = append(out.Segments, msg.Text("\n"))
		}
		out.Segments = append(out.Segments, m.Segments...)
		for _, u := range m.Mentions {
			if !slices.Contains(out.Mentions, u) {
				out.Mentions = append(out.Mentions, u)
			}
		}
		out.ForwardIDs = append(out.ForwardIDs, m.ForwardIDs...)
		out.AtAll = out.AtAll || m.AtAll
		if m.ReplyTo != "" {
			out.ReplyTo = m.ReplyTo
		}
	}
	out.Text = strings.Join(texts, "\n")
	return out
}

// Close flushes every held batch at once and waits for their dispatches;
// later messages are refused.
func (d *Debouncer) Close() {
	d.mu.Lock()
	d.closed = true
	held := make([]*batch, 0, len(d.batches))
	for key, b := range d.batches {
		d.detach(key, b)
		held = append(held, b)
	}
	d.mu.Unlock()
	for _, b := range held {
		go d.flush(b)
	}
	d.running.Wait()
}
