package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pincerbot/pincer/internal/channel"
	"github.com/pincerbot/pincer/internal/channel/feishu"
	"github.com/pincerbot/pincer/internal/channel/onebot"
	"github.com/pincerbot/pincer/internal/channel/onebot/wire"
	"github.com/pincerbot/pincer/internal/cluster"
	"github.com/pincerbot/pincer/internal/config"
	"github.com/pincerbot/pincer/internal/engine"
	"github.com/pincerbot/pincer/internal/httpapi"
	"github.com/pincerbot/pincer/internal/lanes"
	"github.com/pincerbot/pincer/internal/msg"
	"github.com/pincerbot/pincer/internal/outbox"
	"github.com/pincerbot/pincer/internal/pipeline"
	"github.com/pincerbot/pincer/internal/store"
)

// sharedStore is what a cluster needs of its store beyond store.Store:
// the PostgreSQL store has it.
type sharedStore interface {
	// Flush returns once what was handed in before is committed.
	Flush(ctx context.Context) error
	// FreshNumbers numbers what is logged from now on after every entry
	// any process logged so far.
	FreshNumbers()
}

// member is this process as one instance of a cluster (config
// cluster.*): it holds the connections whose leases it wins and publishes
// what they receive to the chats' partitions; it answers the chats of the
// partitions it owns, restoring their windows, replies and turns from the
// shared store when it takes a partition over, and gives them up at once
// when it loses one.
type member struct {
	node   *cluster.Node
	st     store.Store
	shared sharedStore
	ttl    time.Duration
	log    *slog.Logger
	// owned is, by partition, whether this process owns it now: the
	// outbox asks before every send.
	owned []atomic.Bool
	// given is closed once this process owns no partition any more, at
	// the start of a shutdown: its chats are the others' then.
	given chan struct{}
	// taken commits what the partitions' messages wrote before they are
	// recorded as taken in.
	taken *takenIn

	// Set by wire once the gateway is built.
	ingest  *lanes.Lanes
	routers map[msg.ChannelID]accountRouter
	pipes   []chatPipe
	eng     *engine.Engine
	out     *outbox.Outbox
	resume  func(engine.MsgContext) (channel.Replier, bool)
	qq      *qq
	lark    *lark
}

// chatPipe is the receive pipeline of one channel account.
type chatPipe struct {
	ch   msg.ChannelID
	acct msg.AccountID
	p    *pipeline.Pipeline
}

// joinCluster connects to the cluster's NATS server; nil without a
// cluster section.
func joinCluster(ctx context.Context, c config.Cluster, st store.Store, log *slog.Logger) (*member, error) {
	if !c.Enabled() {
		return nil, nil
	}
	shared, ok := st.(sharedStore)
	if !ok {
		return nil, fmt.Errorf("config: cluster: the store (%T) cannot be shared; set store.driver 'postgres'", st)
	}
	node, err := cluster.Open(ctx, cluster.Options{
		URL: c.NATS.URL.Value(), Instance: c.Instance, Partitions: c.Partitions, LeaseTTL: c.LeaseTTL(),
		Logger: log,
	})
	if err != nil {
		return nil, err
	}
	m := &member{node: node, st: st, shared: shared, ttl: c.LeaseTTL(), log: log.With("component", "cluster", "instance", c.Instance), given: make(chan struct{}), taken: &takenIn{shared: shared}}
	m.owned = make([]atomic.Bool, node.Partitions())
	return m, nil
}

// chatKey names a chat for the partitions. It must never change: every
// instance must put a chat in the same partition.
func chatKey(ch msg.ChannelID, acct msg.AccountID, peer msg.Peer) string {
	return string(ch) + "\x00" + string(acct) + "\x00" + string(peer.Kind) + "\x00" + peer.ID
}

// partition is the partition of a chat.
func (m *member) partition(ch msg.ChannelID, acct msg.AccountID, peer msg.Peer) int {
	return cluster.PartitionOf(len(m.owned), chatKey(ch, acct, peer))
}

// owns reports whether this process answers the chat now.
func (m *member) owns(ch msg.ChannelID, acct msg.AccountID, peer msg.Peer) bool {
	return m.owned[m.partition(ch, acct, peer)].Load()
}

// remoteQQ runs a QQ account's actions through the instance holding its
// connection. A call under way when that instance loses the connection's
// lease (it died, or was cut off) ends then, as a call over a dropped
// connection does, rather than at its timeout.
func (m *member) remoteQQ(id msg.AccountID) onebot.Caller {
	name := "onebot." + string(id)
	return onebot.RemoteCaller(func(ctx context.Context, call []byte) ([]byte, error) {
		resp, err := m.node.RequestWhileHeld(ctx, name, "conn."+name, call)
		if errors.Is(err, cluster.ErrHolderLost) {
			return nil, fmt.Errorf("%w: %w", onebot.ErrHolderGone, err)
		}
		return resp, err
	})
}

// envelope is a message on its way from the connection's holder to the
// chat's owner.
type envelope struct {
	// Self is the bot's id as the holder knows it (QQ).
	Self string `json:"self,omitempty"`
	// At is when the holder published it (Unix ms).
	At int64           `json:"at"`
	M  json.RawMessage `json:"m"`
}

// publisher takes a held connection's messages into their chats'
// partitions, in arrival order (one at a time, on the reading goroutine).
type publisher struct {
	m    *member
	self func() string
}

var _ channel.Taker = publisher{}

func (p publisher) Dispatch(ctx context.Context, m msg.Message, _ channel.Replier) error {
	return p.publish(ctx, m)
}

// Take publishes without waiting for the stream: the connection's reader
// goes on at once, and the stream stores the messages in the order they
// were read. done learns whether the stream took the message. A message
// the stream did not take (NATS restarting, say) is published again, in
// its place, until it is taken or this process no longer holds the
// connection (ctx ends): meanwhile the messages after it wait, and the
// reader with them once enough do.
func (p publisher) Take(ctx context.Context, m msg.Message, _ channel.Replier, done func(error)) {
	if done == nil {
		done = func(error) {}
	}
	part, id, data, err := p.encode(m)
	if err != nil {
		done(err)
		return
	}
	p.m.node.PublishAsync(part, id, data, func(err error) {
		if err != nil && !errors.Is(err, cluster.ErrClosed) {
			err = p.again(ctx, m, part, id, data, err)
		}
		done(err)
	})
}

// again publishes a message the stream did not take until it does, or
// ctx ends; the stream stores it once even if it had taken it after all.
func (p publisher) again(ctx context.Context, m msg.Message, part int, id string, data []byte, first error) error {
	p.m.log.Warn("a message was not taken by the stream; publishing it again until it is", "msg_id", string(m.ID), "peer", m.Peer.String(), "err", first)
	wait := 50 * time.Millisecond
	for {
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			err := fmt.Errorf("cluster: message %s lost: the connection was given up before the stream took it: %w", m.ID, first)
			p.m.log.Error("a message read from the connection was lost", "msg_id", string(m.ID), "peer", m.Peer.String(), "err", err)
			return err
		case <-t.C:
		}
		pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		err := p.m.node.Publish(pctx, part, id, data)
		cancel()
		if err == nil {
			p.m.log.Info("the stream took the message", "msg_id", string(m.ID))
			return nil
		}
		wait = min(2*wait, time.Second)
	}
}

func (p publisher) publish(ctx context.Context, m msg.Message) error {
	part, id, data, err := p.encode(m)
	if err != nil {
		return err
	}
	return p.m.node.Publish(ctx, part, id, data)
}

// encode is a message's partition, its id in the stream and its envelope.
func (p publisher) encode(m msg.Message) (part int, id string, data []byte, err error) {
	body, err := m.AppendJSON(nil)
	if err != nil {
		return 0, "", nil, fmt.Errorf("cluster: encode %s: %w", m.ID, err)
	}
	self := ""
	if p.self != nil {
		self = p.self()
	}
	data = appendEnvelope(make([]byte, 0, len(body)+64), self, time.Now().UnixMilli(), body)
	key := chatKey(m.Channel, m.Account, m.Peer)
	return cluster.PartitionOf(len(p.m.owned), key), key + "\x00" + string(m.ID), data, nil
}

// run holds what this process wins until ctx ends: the connections, the
// partitions and the heartbeat. ctx is the chat connections' context,
// which outlives the start of a shutdown; stop ends the partitions (and
// with them the chats' answering here) when a shutdown begins.
func (m *member) run(ctx, stop context.Context, heartbeat func(context.Context) error) error {
	var wg sync.WaitGroup
	defer wg.Wait()
	if m.qq != nil {
		for id := range m.qq.receive {
			a, _ := m.qq.channel.Account(id)
			wg.Go(func() { m.holdQQ(ctx, a) })
		}
	}
	if m.lark != nil {
		for _, a := range m.lark.accounts {
			if a.Webhook() {
				// Events come to every instance's webhook; each publishes
				// what it got to the chat's partition.
				wg.Go(func() { _ = a.Run(ctx, publisher{m: m}) })
				continue
			}
			wg.Go(func() { _ = a.Identify(ctx) })
			wg.Go(func() { m.holdLark(ctx, a) })
		}
	}
	if heartbeat != nil {
		wg.Go(func() { m.holdHeartbeat(stop, heartbeat) })
	}
	wg.Go(func() { m.taken.run(stop) })
	err := m.node.RunPartitions(stop, m.ownPartition)
	close(m.given)
	if err != nil && stop.Err() == nil {
		return fmt.Errorf("cluster: %w", err)
	}
	return nil
}

// handedOver waits until this process owns no partition (their windows,
// turns and replies given up for the next owners), or ctx ends: a
// shutdown closes the pipelines and the engine only after that, so none
// of its chats is answered halfway here.
func (m *member) handedOver(ctx context.Context) {
	select {
	case <-m.given:
	case <-ctx.Done():
	}
}

// holdHeartbeat runs the heartbeat while this instance holds its lease,
// so it fires once in the cluster.
func (m *member) holdHeartbeat(stop context.Context, heartbeat func(context.Context) error) {
	err := m.node.Hold(stop, "heartbeat", func(ctx context.Context, _ cluster.Lease) {
		if err := heartbeat(ctx); err != nil {
			m.log.Warn("heartbeat", "err", err)
		}
		// A heartbeat that never fires again keeps its lease: no other
		// instance would fire it either.
		<-ctx.Done()
	})
	if err != nil {
		m.log.Error("heartbeat lease", "err", err)
	}
}

// holdQQ runs a QQ account's connection while this process holds its
// lease, and serves the other instances' actions over it.
func (m *member) holdQQ(ctx context.Context, a *onebot.Account) {
	name := "onebot." + string(a.ID())
	err := m.node.Hold(ctx, "conn."+name, func(ctx context.Context, l cluster.Lease) {
		m.log.Info("holding the QQ connection", "account", string(a.ID()), "token", l.Token)
		var wg sync.WaitGroup
		defer wg.Wait()
		wg.Go(func() {
			if err := m.node.Serve(ctx, name, a.ServeRemote); err != nil && ctx.Err() == nil {
				m.log.Warn("serving the QQ account's actions", "account", string(a.ID()), "err", err)
			}
		})
		self := func() string {
			if s := a.Self(); s != 0 {
				return s.String()
			}
			return ""
		}
		if err := a.Run(ctx, publisher{m: m, self: self}); err != nil {
			m.log.Warn("QQ connection", "account", string(a.ID()), "err", err)
		}
	})
	if err != nil {
		m.log.Error("QQ connection lease", "account", string(a.ID()), "err", err)
	}
}

// holdLark runs a Feishu app's long connection while this process holds
// its lease. Sends go from every instance through the open platform's
// API, which needs no connection.
func (m *member) holdLark(ctx context.Context, a *feishu.Account) {
	err := m.node.Hold(ctx, "conn.feishu."+string(a.ID()), func(ctx context.Context, l cluster.Lease) {
		m.log.Info("holding the Feishu long connection", "account", string(a.ID()), "token", l.Token)
		if err := a.Run(ctx, publisher{m: m}); err != nil {
			m.log.Warn("Feishu long connection", "account", string(a.ID()), "err", err)
		}
	})
	if err != nil {
		m.log.Error("Feishu connection lease", "account", string(a.ID()), "err", err)
	}
}

// ownPartition answers the chats of partition p while this process owns
// it: it restores what the store holds for them (windows, replies not
// confirmed, turns not finished), takes in the partition's messages in
// order, and when the partition is lost gives all of it up at once.
func (m *member) ownPartition(ctx context.Context, p int, l cluster.Lease) {
	log := m.log.With("partition", p, "token", l.Token)
	acquired := time.Now()
	// Entries logged from here on sort after the previous owner's.
	m.shared.FreshNumbers()
	inPeer := func(ch msg.ChannelID, acct msg.AccountID) func(msg.Peer) bool {
		return func(peer msg.Peer) bool { return m.partition(ch, acct, peer) == p }
	}
	inChat := func(ch msg.ChannelID, acct msg.AccountID, peer msg.Peer) bool {
		return m.partition(ch, acct, peer) == p
	}
	inMsg := func(msg msg.Message) bool { return inChat(msg.Channel, msg.Account, msg.Peer) }
	m.owned[p].Store(true)
	defer func() {
		// Nothing more is sent for these chats from here; their state stays
		// in the store for the next owner.
		// The windows first, so no batch reaches the engine after it let
		// go; then the turns (Release waits for them); then the replies.
		m.owned[p].Store(false)
		for _, pp := range m.pipes {
			pp.p.Release(inPeer(pp.ch, pp.acct))
		}
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), m.ttl)
		defer cancel()
		if err := m.eng.Release(rctx, inMsg); err != nil {
			log.Warn("giving up the partition's turns", "err", err)
		}
		m.out.Release(inChat)
		log.Info("partition given up")
	}()
	// What cannot be restored now (the store failing) is not answered
	// without: the partition is given back, to be taken again.
	for _, pp := range m.pipes {
		if err := pp.p.RestoreWhere(ctx, inPeer(pp.ch, pp.acct)); err != nil {
			log.Error("restoring the partition's buffered messages failed; the partition is given back", "err", err)
			pause(ctx, time.Second)
			return
		}
	}
	if err := m.out.StartWhere(ctx, inChat); err != nil {
		log.Error("restoring the partition's replies failed; the partition is given back", "err", err)
		pause(ctx, time.Second)
		return
	}
	if n, err := m.eng.ResumeWhere(ctx, m.resume, inMsg); err != nil {
		log.Error("resuming the partition's turns failed; the partition is given back", "err", err)
		pause(ctx, time.Second)
		return
	} else if n > 0 {
		log.Info("turns taken over are being answered", "count", n)
	}
	log.Info("partition owned")

	for {
		cause, err := m.consume(ctx, p, acquired, log)
		if ctx.Err() != nil {
			return
		}
		if cause == nil {
			if err != nil {
				log.Warn("reading the partition stopped", "err", err)
			}
			return
		}
		// The store failed. The windows, turns and replies stay here
		// (each retries its own writes, as in one process); the messages
		// are read again, once the store answers, from the last one whose
		// writes were committed, and the log tells which of the ones after
		// it were taken in after all.
		log.Warn("the store failed: the partition waits for it, then is read again from its last message the store committed", "err", cause)
		for m.shared.Flush(ctx) != nil {
			if !pause(ctx, 500*time.Millisecond) {
				return
			}
		}
		log.Info("the store answers again: the partition is read again")
		acquired = time.Now()
	}
}

// consume reads partition p until ctx ends, the reading stops (err), or
// the store fails (cause).
func (m *member) consume(ctx context.Context, p int, acquired time.Time, log *slog.Logger) (cause, err error) {
	cctx, giveUp := context.WithCancelCause(ctx)
	defer giveUp(nil)
	err = m.node.Consume(cctx, p, func(ctx context.Context, seq uint64, data []byte, done func()) {
		m.take(ctx, p, acquired, data, func() { m.taken.add(done, giveUp) }, giveUp, log)
	})
	giveUp(nil)
	if c := context.Cause(cctx); c != nil && !errors.Is(c, context.Canceled) {
		return c, err
	}
	return nil, err
}

// take hands one message of partition p to its pipeline, on its chat's
// lane; done is called once it is taken in.
func (m *member) take(ctx context.Context, p int, acquired time.Time, data []byte, done func(), giveUp context.CancelCauseFunc, log *slog.Logger) {
	env, in, err := decodeEnvelope(data)
	if err != nil || in.ID == "" {
		log.Error("a message of the partition cannot be read; skipped", "bytes", len(data), "err", err)
		done()
		return
	}
	if env.Self != "" && in.Channel == onebot.ChannelID && m.qq != nil {
		if a, ok := m.qq.channel.Account(in.Account); ok {
			if n, err := strconv.ParseInt(env.Self, 10, 64); err == nil {
				a.LearnSelf(wire.ID(n))
			}
		}
	}
	// What was published before this process took the partition may have
	// been taken in by the owner before it: the log tells.
	if env.At < acquired.Add(clockSkew).UnixMilli() {
		_, logged, err := m.st.FindInbound(ctx, in.Channel, in.Account, in.Peer, in.ID, takeoverLookback)
		if err != nil {
			giveUp(fmt.Errorf("look %s up in the log: %w", in.ID, err))
			return
		}
		if logged {
			done()
			return
		}
	}
	router, ok := m.routers[in.Channel]
	if !ok {
		log.Error("a message of a channel this instance does not run; skipped", "channel", string(in.Channel))
		done()
		return
	}
	r, ok := m.replierFor(in)
	if !ok {
		log.Error("a message of an account this instance does not run; skipped", "channel", string(in.Channel), "account", string(in.Account))
		done()
		return
	}
	next := owned{m: m, p: p, next: router}
	lanes.Sink{Lanes: m.ingest, Next: next}.Take(ctx, in, r, func(err error) {
		switch {
		case err == nil, errors.Is(err, channel.ErrDuplicate), errors.Is(err, channel.ErrMerged), errors.Is(err, channel.ErrStopped):
			done()
		case errors.Is(err, errNotOwned), errors.Is(err, pipeline.ErrReleased), errors.Is(err, engine.ErrReleased), errors.Is(err, channel.ErrClosed):
			// Given up here: the next owner reads it again.
		default:
			// Not taken in (the store failing, say): read again from the
			// last message recorded, where the log tells what was.
			giveUp(fmt.Errorf("message %s: %w", in.ID, err))
		}
	})
}

// clockSkew is how far the holder's clock, which dates what it publishes,
// may be ahead of an owner's: only what was published before the owner
// took the partition (the owner before it stopped reading before that)
// may have been taken in already.
const clockSkew = 2 * time.Second

// takeoverLookback is how far back in a chat's log a new owner looks for
// a message the owner before it may have taken in already.
const takeoverLookback = 1000

// replierFor is the reply path of a message, on the account this process
// runs for its chat.
func (m *member) replierFor(in msg.Message) (channel.Replier, bool) {
	switch in.Channel {
	case onebot.ChannelID:
		if m.qq != nil {
			if a, ok := m.qq.channel.Account(in.Account); ok {
				return a.ReplierFor(in), true
			}
		}
	case feishu.ChannelID:
		if m.lark != nil {
			if a, ok := m.lark.accounts[in.Account]; ok {
				return a.ReplierFor(in), true
			}
		}
	}
	return nil, false
}

// errNotOwned: the message's partition was lost before its lane reached
// it.
var errNotOwned = errors.New("cluster: the chat's partition is no longer owned here")

// owned passes a message on only while its partition is still owned, so
// a lane that reaches it after the partition was given up does not bring
// the chat back to life here.
type owned struct {
	m    *member
	p    int
	next channel.Taker
}

func (o owned) Dispatch(ctx context.Context, in msg.Message, r channel.Replier) error {
	if !o.m.owned[o.p].Load() {
		return errNotOwned
	}
	return o.next.Dispatch(ctx, in, r)
}

func (o owned) Take(ctx context.Context, in msg.Message, r channel.Replier, done func(error)) {
	if !o.m.owned[o.p].Load() {
		done(errNotOwned)
		return
	}
	o.next.Take(ctx, in, r, done)
}

// takenIn records messages as taken in only once what their pipeline
// wrote is committed: the store's writer commits in batches, and a
// partition's progress must never pass a message the store could still
// lose. One commit every 50 ms serves every partition this process owns.
type takenIn struct {
	shared sharedStore
	mu     sync.Mutex
	due    []dueMsg
}

// dueMsg is a message waiting for the commit: done records it, giveUp
// ends its partition's reading when the commit failed.
type dueMsg struct {
	done   func()
	giveUp context.CancelCauseFunc
}

func (t *takenIn) add(done func(), giveUp context.CancelCauseFunc) {
	t.mu.Lock()
	t.due = append(t.due, dueMsg{done, giveUp})
	t.mu.Unlock()
}

// run commits and records the messages taken in every 50 ms until ctx
// ends.
func (t *takenIn) run(ctx context.Context) {
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			t.flush(ctx)
		}
	}
}

func (t *takenIn) flush(ctx context.Context) {
	t.mu.Lock()
	due := t.due
	t.due = nil
	t.mu.Unlock()
	if len(due) == 0 {
		return
	}
	if err := t.shared.Flush(ctx); err != nil {
		// Those messages are never recorded as taken in here: their
		// partitions are read again once the store answers.
		err = fmt.Errorf("the store did not commit what the partition's messages wrote: %w", err)
		for _, d := range due {
			d.giveUp(err)
		}
		return
	}
	for _, d := range due {
		d.done()
	}
}

// wire gives the member the gateway it answers with.
func (m *member) wire(ingest *lanes.Lanes, qqRouter, larkRouter accountRouter, eng *engine.Engine, out *outbox.Outbox, resume func(engine.MsgContext) (channel.Replier, bool), q *qq, l *lark) {
	m.ingest, m.eng, m.out, m.resume, m.qq, m.lark = ingest, eng, out, resume, q, l
	m.routers = map[msg.ChannelID]accountRouter{}
	for ch, r := range map[msg.ChannelID]accountRouter{onebot.ChannelID: qqRouter, feishu.ChannelID: larkRouter} {
		if r == nil {
			continue
		}
		m.routers[ch] = r
		for acct, t := range r {
			if p, ok := t.(*pipeline.Pipeline); ok {
				m.pipes = append(m.pipes, chatPipe{ch: ch, acct: acct, p: p})
			}
		}
	}
}

// health is the cluster's /healthz component, and the leases this
// instance holds.
func (m *member) health() (httpapi.Component, map[string]bool) {
	s := m.node.Status()
	held := map[string]bool{}
	parts := 0
	for _, name := range s.Held {
		held[name] = true
	}
	for i := range m.owned {
		if m.owned[i].Load() {
			parts++
		}
	}
	c := httpapi.Component{Name: "cluster", Status: httpapi.StatusOK,
		Reason: fmt.Sprintf("instance %s of %d, owns %d of %d partitions", m.node.Instance(), len(s.Members), parts, len(m.owned))}
	if !s.Connected {
		c.Status, c.Reason = httpapi.StatusDown, "NATS is not reachable: this instance holds no connection and answers no chat until it is"
		if s.LastError != "" {
			c.Reason += " (" + s.LastError + ")"
		}
	}
	return c, held
}

// pause waits d, or until ctx ends (false).
func pause(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
