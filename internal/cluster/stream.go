package cluster

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// ErrFenced is returned by Consume when another consumer saved progress for
// the partition: this one has been replaced and must stop.
var ErrFenced = errors.New("cluster: partition progress written by another consumer")

// saveEvery is the least time between two progress saves of a partition.
const saveEvery = 100 * time.Millisecond

func (n *Node) inboundSubject(p int) string { return n.o.Prefix + ".inbound." + strconv.Itoa(p) }

func progressKey(p int) string { return "p." + strconv.Itoa(p) }

func (n *Node) checkPartition(p int) error {
	if p < 0 || p >= n.o.Partitions {
		return fmt.Errorf("cluster: partition %d out of range [0, %d)", p, n.o.Partitions)
	}
	return nil
}

// Publish appends data to partition p of the inbound stream and waits for
// the stream's acknowledgement. A non-empty id goes in the Nats-Msg-Id
// header: the same id published again within two minutes is stored once
// (and Publish succeeds).
func (n *Node) Publish(ctx context.Context, p int, id string, data []byte) error {
	if err := n.checkPartition(p); err != nil {
		return err
	}
	m := nats.NewMsg(n.inboundSubject(p))
	m.Data = data
	var opts []jetstream.PublishOpt
	if id != "" {
		opts = append(opts, jetstream.WithMsgID(id))
	}
	if _, err := n.js.PublishMsg(ctx, m, opts...); err != nil {
		return fmt.Errorf("cluster: publish to partition %d: %w", p, connErr(err))
	}
	return nil
}

// PublishAsync is Publish without waiting for the acknowledgement: done
// learns the outcome once the stream acknowledged the message, refused it,
// or did not answer within asyncTimeout (and with ErrClosed when the node
// closes first). Messages published one after another from one goroutine
// are stored in that order. While asyncPending acknowledgements are
// outstanding it waits for room, so a slow stream holds the publisher back
// rather than letting messages pile up in memory.
//
// done runs on one goroutine for every PublishAsync of the node, in
// publishing order, failures included: while it runs, the outcomes of
// the messages after it wait. A caller may publish a failed message again
// there (synchronously, with Publish and the same id, which the stream
// stores once) and keep its order, at the price of holding the others.
func (n *Node) PublishAsync(p int, id string, data []byte, done func(error)) {
	a := pendingAck{p: p, done: done}
	if err := n.checkPartition(p); err != nil {
		a.err = err
	} else {
		m := nats.NewMsg(n.inboundSubject(p))
		m.Data = data
		opts := []jetstream.PublishOpt{jetstream.WithStallWait(asyncTimeout)}
		if id != "" {
			opts = append(opts, jetstream.WithMsgID(id))
		}
		if a.f, err = n.js.PublishMsgAsync(m, opts...); err != nil {
			a.err = fmt.Errorf("cluster: publish to partition %d: %w", p, connErr(err))
		}
	}
	n.ackMu.RLock()
	defer n.ackMu.RUnlock()
	if n.acksClosed {
		done(ErrClosed)
		return
	}
	select {
	case n.acks <- a:
	case <-n.ctx.Done():
		done(ErrClosed)
	}
}

// Bounds of PublishAsync, and how long Close waits for its
// acknowledgements.
const (
	asyncPending = 4096
	asyncTimeout = 10 * time.Second
	asyncDrain   = 2 * time.Second
)

// pendingAck is a PublishAsync awaiting its acknowledgement, or one that
// failed at once (err).
type pendingAck struct {
	f    jetstream.PubAckFuture
	err  error
	p    int
	done func(error)
}

// ackLoop tells PublishAsync's callers their outcomes, in publishing
// order, until the node closes; what is still awaited then fails with
// ErrClosed.
func (n *Node) ackLoop() {
	for {
		select {
		case a := <-n.acks:
			if a.err != nil {
				a.done(a.err)
				continue
			}
			select {
			case <-a.f.Ok():
				a.done(nil)
			case err := <-a.f.Err():
				a.done(fmt.Errorf("cluster: publish to partition %d: %w", a.p, connErr(err)))
			case <-n.ctx.Done():
				a.done(ErrClosed)
			}
		case <-n.ctx.Done():
			// No publish enqueues after this: the ones waiting to are
			// told at once, and what is queued is told here.
			n.ackMu.Lock()
			n.acksClosed = true
			n.ackMu.Unlock()
			for {
				select {
				case a := <-n.acks:
					a.done(ErrClosed)
				default:
					return
				}
			}
		}
	}
}

// Consume reads partition p in stream order from where it was left (a
// progress record per partition in the progress bucket: the highest stream
// sequence whose message and every earlier one were done), with an ordered
// consumer, until ctx ends. handle is called in order, one message at a
// time, and must call done (from any goroutine, possibly later) once the
// message is safely taken in; progress advances only over a contiguous run
// of done messages and is saved at most every 100 ms and when Consume
// returns, with a compare-and-set on the progress key's revision: if another
// writer got there first Consume returns ErrFenced at once. A message whose
// done never came is read again by the next owner: handlers are idempotent.
//
// Consume returns nil when ctx ends. Run it inside the partition's lease
// (RunPartitions) so one consumer reads a partition at a time.
func (n *Node) Consume(ctx context.Context, p int, handle func(ctx context.Context, seq uint64, data []byte, done func())) error {
	if err := n.checkPartition(p); err != nil {
		return err
	}
	pr := &progress{n: n, key: progressKey(p), signal: make(chan struct{}, 1)}
	if err := pr.load(ctx); err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("cluster: consume partition %d: %w", p, err)
	}
	if pr.saved > 0 {
		// A stream deleted and created again starts its sequences anew;
		// progress beyond its end would skip every new message.
		s, err := n.js.Stream(ctx, n.stream)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("cluster: consume partition %d: %w", p, err)
		}
		if last := s.CachedInfo().State.LastSeq; pr.saved > last {
			n.log.Warn("progress beyond the end of the stream; reading the partition from the start",
				"partition", p, "progress", pr.saved, "last_seq", last)
			pr.saved, pr.done = 0, 0
		}
	}
	cfg := jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{n.inboundSubject(p)},
		DeliverPolicy:  jetstream.DeliverAllPolicy,
	}
	if pr.saved > 0 {
		cfg.DeliverPolicy = jetstream.DeliverByStartSequencePolicy
		cfg.OptStartSeq = pr.saved + 1
	}
	cons, err := n.js.OrderedConsumer(ctx, n.stream, cfg)
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("cluster: consume partition %d: %w", p, err)
	}
	it, err := cons.Messages()
	if err != nil {
		return fmt.Errorf("cluster: consume partition %d: %w", p, err)
	}
	n.log.Debug("consuming partition", "partition", p, "after_seq", pr.saved)

	inner, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	// Next does not watch its context while the ordered consumer is being
	// recreated; stopping the iterator ends that too.
	stopIt := context.AfterFunc(inner, it.Stop)
	defer stopIt()
	saverDone := make(chan struct{})
	go func() {
		defer close(saverDone)
		pr.saveLoop(inner, cancel)
	}()

	var result error
	for {
		msg, err := it.Next(jetstream.NextContext(inner))
		if err != nil {
			if inner.Err() == nil {
				result = fmt.Errorf("cluster: consume partition %d: %w", p, err)
			}
			break
		}
		md, err := msg.Metadata()
		if err != nil {
			result = fmt.Errorf("cluster: consume partition %d: %w", p, err)
			break
		}
		seq := md.Sequence.Stream
		handle(inner, seq, msg.Data(), pr.add(seq))
	}
	cancel(nil)
	<-saverDone
	it.Stop()
	// The last save and the clean-up are quick or hopeless: a connection
	// cut off from the server must not hold Consume for long.
	fctx, fcancel := context.WithTimeout(context.WithoutCancel(ctx), min(n.opTimeout, time.Second))
	defer fcancel()
	if !pr.fenced {
		if err := pr.save(fctx); err != nil && !errors.Is(err, ErrFenced) {
			n.log.Warn("saving progress failed", "partition", p, "error", err)
		}
	}
	if info := cons.CachedInfo(); info != nil {
		// Otherwise the server keeps it until it has been idle for minutes.
		_ = n.js.DeleteConsumer(fctx, n.stream, info.Name)
	}
	if pr.fenced {
		return fmt.Errorf("cluster: consume partition %d: %w", p, ErrFenced)
	}
	return result
}

// progress tracks which delivered messages are done and saves the
// contiguous prefix.
type progress struct {
	n      *Node
	key    string
	signal chan struct{} // a message became done

	mu      sync.Mutex
	pending []pendingMsg // delivered and not yet part of the done prefix, in order
	done    uint64       // highest sequence up to which every message is done

	// Owned by the goroutine saving (the saver, then Consume after it).
	saved     uint64
	rev       uint64
	uncertain uint64 // value of a save whose outcome is unknown, or 0
	fenced    bool
}

type pendingMsg struct {
	seq  uint64
	done bool
}

func (pr *progress) load(ctx context.Context) error {
	e, err := pr.n.prog.Get(ctx, pr.key)
	switch {
	case errors.Is(err, jetstream.ErrKeyNotFound):
		return nil
	case err != nil:
		return fmt.Errorf("read progress: %w", err)
	}
	seq, err := strconv.ParseUint(string(e.Value()), 10, 64)
	if err != nil {
		return fmt.Errorf("progress %s holds %q: %w", pr.key, e.Value(), err)
	}
	pr.saved, pr.done, pr.rev = seq, seq, e.Revision()
	return nil
}

// add records a delivered message and returns its done function.
func (pr *progress) add(seq uint64) func() {
	pr.mu.Lock()
	pr.pending = append(pr.pending, pendingMsg{seq: seq})
	pr.mu.Unlock()
	var once sync.Once
	return func() { once.Do(func() { pr.markDone(seq) }) }
}

func (pr *progress) markDone(seq uint64) {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	if i, ok := slices.BinarySearchFunc(pr.pending, seq, func(m pendingMsg, seq uint64) int {
		return cmp.Compare(m.seq, seq)
	}); ok {
		pr.pending[i].done = true
	}
	advanced := false
	for len(pr.pending) > 0 && pr.pending[0].done {
		pr.done = pr.pending[0].seq
		pr.pending = pr.pending[1:]
		advanced = true
	}
	if advanced {
		select {
		case pr.signal <- struct{}{}:
		default:
		}
	}
}

func (pr *progress) doneSeq() uint64 {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	return pr.done
}

// saveLoop saves progress when it advanced, at most every saveEvery, until
// ctx ends; on ErrFenced it cancels ctx with that cause.
func (pr *progress) saveLoop(ctx context.Context, cancel context.CancelCauseFunc) {
	var last time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case <-pr.signal:
		}
		if wait := saveEvery - time.Since(last); wait > 0 {
			sleep(ctx, wait)
			if ctx.Err() != nil {
				return
			}
		}
		last = time.Now()
		sctx, scancel := context.WithTimeout(context.WithoutCancel(ctx), pr.n.opTimeout)
		err := pr.save(sctx)
		scancel()
		if errors.Is(err, ErrFenced) {
			cancel(ErrFenced)
			return
		}
		if err != nil {
			pr.n.noteErr(err)
			pr.n.log.Warn("saving progress failed", "key", pr.key, "error", err)
			// Try again at the next tick even if nothing new is done.
			select {
			case pr.signal <- struct{}{}:
			default:
			}
		}
	}
}

// save writes the done prefix if it advanced past what was saved.
func (pr *progress) save(ctx context.Context) error {
	if pr.fenced {
		return ErrFenced
	}
	seq := pr.doneSeq()
	if seq <= pr.saved {
		return nil
	}
	val := []byte(strconv.FormatUint(seq, 10))
	var rev uint64
	var err error
	if pr.rev == 0 {
		rev, err = pr.n.prog.Create(ctx, pr.key, val)
	} else {
		rev, err = pr.n.prog.Update(ctx, pr.key, val, pr.rev)
	}
	switch {
	case err == nil:
		pr.saved, pr.rev, pr.uncertain = seq, rev, 0
		return nil
	case isConflict(err):
		// A save whose reply was lost may have been stored: then the
		// entry holds exactly that value and it is ours.
		if pr.uncertain != 0 {
			if e, gerr := pr.n.prog.Get(ctx, pr.key); gerr == nil && string(e.Value()) == strconv.FormatUint(pr.uncertain, 10) {
				pr.saved, pr.rev, pr.uncertain = pr.uncertain, e.Revision(), 0
				return pr.save(ctx)
			}
		}
		pr.fenced = true
		return ErrFenced
	default:
		pr.uncertain = seq
		return fmt.Errorf("save progress: %w", connErr(err))
	}
}
