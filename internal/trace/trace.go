// Package trace answers the question operators of chat bots ask most: why
// did it (not) reply? Every inbound message gets a Record, and every part
// of pincer that decides something about it — the channel that drops it,
// the pipeline's trigger and buffers, quote and forward resolution, the
// agent run, the delivery — adds a Step in words an operator can read.
//
// Records are kept in a bounded ring per account, can be followed live
// (Subscribe) and, with a Store (and Run), are kept for a configurable
// time. Steps
// never hold secrets: they are written by pincer's own code from ids,
// counts, rule names and a short preview of the message.
package trace

import (
	"context"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/pincerbot/pincer/internal/msg"
)

// Stages of a message's path.
const (
	StageReceive = "receive" // the channel took or dropped it
	StageTrigger = "trigger" // the mention / keyword / reply decision
	StageBuffer  = "buffer"  // history, realtime windows, digests took it
	StageWindow  = "window"  // a realtime window opened, was joined, flushed
	StageCommand = "command" // a command or /summary
	StageQuote   = "quote"   // a quoted message resolved
	StageForward = "forward" // a merged forward expanded
	StageMedia   = "media"   // images, voice and links read for the turn
	StageLimit   = "limit"   // a limit (limits.*) held the turn before any model call
	StageAgent   = "agent"   // the agent run: model, fallbacks, tokens, latency
	StageDeliver = "deliver" // what was sent, or why nothing was
)

// Key names one inbound message.
type Key struct {
	Channel msg.ChannelID `json:"channel"`
	Account msg.AccountID `json:"account"`
	Peer    msg.Peer      `json:"peer"`
	ID      msg.MessageID `json:"id"`
}

// KeyOf returns m's key.
func KeyOf(m msg.Message) Key {
	return Key{Channel: m.Channel, Account: m.Account, Peer: m.Peer, ID: m.ID}
}

// Chat is the chat part of k, as "channel:account:peer".
func (k Key) Chat() string { return ChatOf(k.Channel, k.Account, k.Peer) }

// ChatOf names a chat as "channel:account:peer", the form `pincer trace`
// and the dashboard take.
func ChatOf(ch msg.ChannelID, acct msg.AccountID, peer msg.Peer) string {
	return string(ch) + ":" + string(acct) + ":" + peer.String()
}

// Step is one thing decided about a message.
type Step struct {
	At    time.Time `json:"at"`
	Stage string    `json:"stage"`
	// Outcome is the step's verdict in a word or two ("dropped",
	// "triggered", "not triggered", "sent", "no reply"), empty for a step
	// that only informs.
	Outcome string `json:"outcome,omitempty"`
	// Detail says why, in a sentence.
	Detail string `json:"detail"`
}

// Record is the trace of one inbound message.
type Record struct {
	Key    Key       `json:"key"`
	Chat   string    `json:"chat"`
	At     time.Time `json:"at"`
	Sender string    `json:"sender,omitempty"`
	// Preview is the start of the message's text.
	Preview string `json:"preview,omitempty"`
	Steps   []Step `json:"steps"`
	// stored: the record goes to the store with each step (see settles).
	stored bool
	// The ring's records keep the sender's parts and name their chat only
	// when copied out (clone): a busy account begins thousands of records
	// a second.
	senderName, senderID string
}

// Outcome is the last verdict among the record's steps.
func (r Record) Outcome() string {
	for i := len(r.Steps) - 1; i >= 0; i-- {
		if r.Steps[i].Outcome != "" {
			return r.Steps[i].Outcome
		}
	}
	return ""
}

// Event is what subscribers receive: a record as it stands after Step.
type Event struct {
	Record Record `json:"record"`
	// Step is the step just added, the record's Index-th (from 0).
	Step  Step `json:"step"`
	Index int  `json:"index"`
}

// Store keeps records beyond the ring.
type Store interface {
	// AddTraceRecords keeps records, replacing what it kept of the same
	// messages. It must not wait for the disk.
	AddTraceRecords(ctx context.Context, recs []Record) error
	// TraceRecords returns the records of chat, newest first, at most
	// limit; only the one of id when id is not empty.
	TraceRecords(ctx context.Context, chat string, id msg.MessageID, limit int) ([]Record, error)
	// PruneTraces removes the records begun before t.
	PruneTraces(ctx context.Context, before time.Time) error
}

// flushEvery spaces the writes of records to the store: they go in small
// batches, off the path of the messages they describe.
const flushEvery = 200 * time.Millisecond

// Options configure a Recorder.
type Options struct {
	// PerAccount bounds the records kept in memory for one account;
	// DefaultPerAccount when zero.
	PerAccount int
	// Store, when set, keeps for Keep the records of messages something
	// happened to (see settles): answered, dropped, commands. The chatter
	// that triggered nothing, most of a busy group's messages, is kept in
	// memory only.
	Store Store
	Keep  time.Duration
}

// settles reports whether a step settles its record's fate, so that the
// record is worth storing: a reply sent or not, a drop, a command, a turn
// a limit held. The
// chatter that triggered nothing is never stored; a stored record is
// stored again with each later step.
func settles(s Step) bool {
	switch s.Stage {
	case StageDeliver, StageCommand, StageLimit:
		return s.Outcome != ""
	case StageReceive:
		return s.Outcome == "dropped"
	}
	return false
}

// DefaultPerAccount is the ring size of an account.
const DefaultPerAccount = 500

// previewRunes bounds a record's preview.
const previewRunes = 80

// Recorder collects records. A nil *Recorder records nothing, so parts of
// pincer that may run without one need no checks.
type Recorder struct {
	opts Options
	now  func() time.Time

	mu    sync.Mutex
	rings map[ringKey]*ring
	// subs are the followers of new steps.
	subs map[chan Event]struct{}
	// pending are the records the next Flush stores, copied when a step
	// settled them or came after.
	pending []Record
	// counts are the messages begun and replies sent per CountBucket.
	counts [countBuckets]countBucket
}

// Counts: messages begun and replies sent are counted per CountBucket,
// over the last CountSpan.
const (
	CountBucket  = 10 * time.Second
	CountSpan    = 10 * time.Minute
	countBuckets = int(CountSpan / CountBucket)
)

type countBucket struct {
	n                 int64 // the bucket's number since the epoch
	messages, replies int
}

// count adds to the bucket of t; r.mu is held.
func (r *Recorder) count(t time.Time, messages, replies int) {
	n := t.UnixNano() / int64(CountBucket)
	b := &r.counts[(n%int64(countBuckets)+int64(countBuckets))%int64(countBuckets)]
	if b.n != n {
		*b = countBucket{n: n}
	}
	b.messages += messages
	b.replies += replies
}

// Counts returns, oldest first, the messages begun (a record started) and
// the replies sent (deliver steps with the outcome "sent"; one for a
// delivery StepAll records on several messages) in each CountBucket of
// the CountSpan that ends with the bucket holding now, and the start of
// the first bucket.
func (r *Recorder) Counts(now time.Time) (start time.Time, messages, replies []int) {
	last := now.UnixNano() / int64(CountBucket)
	first := last - int64(countBuckets-1)
	messages, replies = make([]int, countBuckets), make([]int, countBuckets)
	if r != nil {
		r.mu.Lock()
		for i := range countBuckets {
			n := first + int64(i)
			if b := r.counts[(n%int64(countBuckets)+int64(countBuckets))%int64(countBuckets)]; b.n == n {
				messages[i], replies[i] = b.messages, b.replies
			}
		}
		r.mu.Unlock()
	}
	return time.Unix(0, first*int64(CountBucket)).UTC(), messages, replies
}

type ringKey struct {
	ch   msg.ChannelID
	acct msg.AccountID
}

// ring keeps an account's newest records.
type ring struct {
	recs  []*Record // oldest first, wrapping at next once full
	next  int
	byKey map[Key]*Record
}

// New returns a recorder.
func New(o Options) *Recorder {
	if o.PerAccount <= 0 {
		o.PerAccount = DefaultPerAccount
	}
	return &Recorder{opts: o, now: time.Now, rings: map[ringKey]*ring{}, subs: map[chan Event]struct{}{}}
}

// Begin starts m's record (a message seen again keeps its record). The
// step says the channel took it.
func (r *Recorder) Begin(m msg.Message) {
	if r == nil {
		return
	}
	r.add(KeyOf(m), m.Sender, Preview(m.Text), Step{Stage: StageReceive, Detail: "received"})
}

// senderText names a sender as "name (id)".
func senderText(name, id string) string {
	switch {
	case name == "":
		return id
	case id == "":
		return name
	}
	return name + " (" + id + ")"
}

// Step adds a step to the record of k, starting one when there is none
// (a message dropped before it was normalized has only its key).
func (r *Recorder) Step(k Key, stage, outcome, detail string) {
	if r == nil {
		return
	}
	r.add(k, msg.Sender{}, "", Step{Stage: stage, Outcome: outcome, Detail: detail})
}

// StepAll adds the same step to the records of several messages (the
// messages one turn answers).
func (r *Recorder) StepAll(keys []Key, stage, outcome, detail string) {
	if r == nil {
		return
	}
	for i, k := range keys {
		r.addCounted(k, msg.Sender{}, "", Step{Stage: stage, Outcome: outcome, Detail: detail}, i == 0)
	}
}

func (r *Recorder) add(k Key, sender msg.Sender, preview string, s Step) {
	r.addCounted(k, sender, preview, s, true)
}

// addCounted adds s; a sent delivery counts as a reply when countReply.
func (r *Recorder) addCounted(k Key, sender msg.Sender, preview string, s Step, countReply bool) {
	s.At = r.now()
	r.mu.Lock()
	if countReply && s.Stage == StageDeliver && s.Outcome == "sent" {
		r.count(s.At, 0, 1)
	}
	rg := r.rings[ringKey{k.Channel, k.Account}]
	if rg == nil {
		rg = &ring{byKey: map[Key]*Record{}}
		r.rings[ringKey{k.Channel, k.Account}] = rg
	}
	rec := rg.byKey[k]
	if rec == nil {
		var steps []Step
		if len(rg.recs) < r.opts.PerAccount {
			rec, steps = new(Record), make([]Step, 0, 4)
			rg.recs = append(rg.recs, rec)
		} else {
			// The oldest record makes room, and its memory is the new
			// one's: only the ring points to its records (readers get
			// copies), and a busy account begins thousands a second.
			rec = rg.recs[rg.next]
			delete(rg.byKey, rec.Key)
			rg.next = (rg.next + 1) % len(rg.recs)
			steps = rec.Steps[:0]
		}
		*rec = Record{Key: k, At: s.At, Steps: steps}
		rg.byKey[k] = rec
		r.count(s.At, 1, 0)
	}
	if sender.Name != "" || sender.ID != "" {
		rec.senderName, rec.senderID = sender.Name, string(sender.ID)
	}
	if preview != "" {
		rec.Preview = preview
	}
	rec.Steps = append(rec.Steps, s)
	if r.opts.Store != nil && (rec.stored || settles(s)) {
		rec.stored = true
		r.pending = append(r.pending, rec.clone())
	}
	// Copied only for someone to read: most messages of a busy chat are
	// not followed.
	var snapshot Record
	if len(r.subs) > 0 {
		snapshot = rec.clone()
	}
	index := len(rec.Steps) - 1
	for ch := range r.subs {
		select {
		case ch <- Event{Record: snapshot, Step: s, Index: index}:
		default: // a slow follower misses steps rather than slowing pincer
		}
	}
	r.mu.Unlock()
}

// Flush hands the records waiting for the store to it, the latest copy
// of each.
func (r *Recorder) Flush(ctx context.Context) error {
	if r == nil || r.opts.Store == nil {
		return nil
	}
	r.mu.Lock()
	batch := r.pending
	r.pending = nil
	r.mu.Unlock()
	if len(batch) == 0 {
		return nil
	}
	latest := make(map[Key]int, len(batch))
	out := batch[:0]
	for _, rec := range batch {
		if i, ok := latest[rec.Key]; ok {
			out[i] = rec
			continue
		}
		latest[rec.Key] = len(out)
		out = append(out, rec)
	}
	return r.opts.Store.AddTraceRecords(ctx, out)
}

// Run stores records every flushEvery until ctx ends, then stores what
// is left.
func (r *Recorder) Run(ctx context.Context) error {
	if r == nil || r.opts.Store == nil {
		<-ctx.Done()
		return nil
	}
	t := time.NewTicker(flushEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return r.Flush(context.WithoutCancel(ctx))
		case <-t.C:
			if err := r.Flush(ctx); err != nil {
				return err
			}
		}
	}
}

// clone copies a ring record out, named and with steps of its own.
func (rec *Record) clone() Record {
	c := Record{Key: rec.Key, Chat: rec.Key.Chat(), At: rec.At, Sender: rec.Sender, Preview: rec.Preview, stored: rec.stored}
	if rec.senderName != "" || rec.senderID != "" {
		c.Sender = senderText(rec.senderName, rec.senderID)
	}
	c.Steps = append([]Step(nil), rec.Steps...)
	return c
}

// Get returns the record of k from memory, or from the store.
func (r *Recorder) Get(ctx context.Context, k Key) (Record, bool, error) {
	if r == nil {
		return Record{}, false, nil
	}
	r.mu.Lock()
	if rg := r.rings[ringKey{k.Channel, k.Account}]; rg != nil {
		if rec := rg.byKey[k]; rec != nil {
			c := rec.clone()
			r.mu.Unlock()
			return c, true, nil
		}
	}
	r.mu.Unlock()
	if r.opts.Store == nil {
		return Record{}, false, nil
	}
	if err := r.Flush(ctx); err != nil {
		return Record{}, false, err
	}
	recs, err := r.opts.Store.TraceRecords(ctx, k.Chat(), k.ID, 1)
	if err != nil || len(recs) == 0 {
		return Record{}, false, err
	}
	return recs[0], true, nil
}

// Chat returns the newest records of chat ("channel:account:peer"),
// newest first, at most limit; with id, only that message's. Memory is
// read first; the store fills in what the ring no longer holds.
func (r *Recorder) Chat(ctx context.Context, chat string, id msg.MessageID, limit int) ([]Record, error) {
	if r == nil {
		return nil, nil
	}
	if limit <= 0 {
		limit = 50
	}
	var out []Record
	seen := map[Key]bool{}
	r.mu.Lock()
	for _, rg := range r.rings {
		for _, rec := range rg.recs {
			if (id == "" || rec.Key.ID == id) && rec.Key.Chat() == chat {
				out = append(out, rec.clone())
				seen[rec.Key] = true
			}
		}
	}
	r.mu.Unlock()
	if r.opts.Store != nil && len(out) < limit {
		if err := r.Flush(ctx); err != nil {
			return nil, err
		}
		stored, err := r.opts.Store.TraceRecords(ctx, chat, id, limit)
		if err != nil {
			return nil, err
		}
		for _, rec := range stored {
			if !seen[rec.Key] {
				out = append(out, rec)
			}
		}
	}
	sortNewestFirst(out)
	if len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}

// Recent returns the newest records of every account, newest first, at
// most limit.
func (r *Recorder) Recent(limit int) []Record {
	if r == nil {
		return nil
	}
	var out []Record
	r.mu.Lock()
	for _, rg := range r.rings {
		for _, rec := range rg.recs {
			out = append(out, rec.clone())
		}
	}
	r.mu.Unlock()
	sortNewestFirst(out)
	if limit > 0 && len(out) > limit {
		out = out[:limit]
	}
	return out
}

// Subscribe follows new steps until ctx ends; a follower that falls more
// than buffer steps behind misses steps.
func (r *Recorder) Subscribe(ctx context.Context, buffer int) <-chan Event {
	ch := make(chan Event, max(buffer, 1))
	if r == nil {
		close(ch)
		return ch
	}
	r.mu.Lock()
	r.subs[ch] = struct{}{}
	r.mu.Unlock()
	context.AfterFunc(ctx, func() {
		r.mu.Lock()
		delete(r.subs, ch)
		r.mu.Unlock()
		close(ch)
	})
	return ch
}

// Prune removes what the store holds beyond Keep.
func (r *Recorder) Prune(ctx context.Context) error {
	if r == nil || r.opts.Store == nil || r.opts.Keep <= 0 {
		return nil
	}
	return r.opts.Store.PruneTraces(ctx, r.now().Add(-r.opts.Keep))
}

// Preview returns the start of text, for a record.
func Preview(text string) string {
	if utf8.RuneCountInString(text) <= previewRunes {
		return text
	}
	n := 0
	for i := range text {
		if n == previewRunes {
			return text[:i] + "…"
		}
		n++
	}
	return text
}
