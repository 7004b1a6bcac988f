package cluster

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Defaults for the zero values of Options.
const (
	DefaultPartitions = 32
	DefaultLeaseTTL   = 6 * time.Second
	DefaultPrefix     = "pincer"
)

// Limits on Options.
const (
	MinLeaseTTL   = 100 * time.Millisecond
	MaxPartitions = 4096
)

// Options configures a Node.
type Options struct {
	URL        string        // nats://host:port, may carry user:pass
	Instance   string        // this process's name, unique in the cluster
	Partitions int           // chat partitions; 0 = DefaultPartitions (32); every instance must agree
	LeaseTTL   time.Duration // 0 = DefaultLeaseTTL (6s)
	Prefix     string        // names of the NATS resources; "" = "pincer" (tests use a unique one)
	Logger     *slog.Logger
}

// drainTimeout bounds the drain of the connection in Close.
const drainTimeout = 2 * time.Second

// Key prefixes in the lease bucket that Hold may not use.
const (
	memberPrefix    = "member."
	partitionPrefix = "part."
)

// partitionsKey is the key in the progress bucket that records the partition
// count the stream was created with.
const partitionsKey = "partitions"

var (
	tokenRE    = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)
	leaseKeyRE = regexp.MustCompile(`^[A-Za-z0-9_=/-]+(\.[A-Za-z0-9_=/-]+)*$`)
)

// Node is this process's membership in the cluster: one NATS connection, the
// lease and progress buckets and the inbound stream. Its methods are safe for
// concurrent use.
type Node struct {
	o      Options
	log    *slog.Logger
	nc     *nats.Conn
	js     jetstream.JetStream
	leases jetstream.KeyValue
	prog   jetstream.KeyValue
	stream string
	value  []byte // what this process writes into the leases it holds

	// Durations derived from the lease TTL.
	renewEvery time.Duration // renewal period of a held lease
	margin     time.Duration // a holder gives up this long before its lease can expire
	retryEvery time.Duration // retry period of a failed renewal
	poll       time.Duration // a contender retries at least this often
	opTimeout  time.Duration // bound of one request that is not bounded otherwise

	view *view

	// acks holds PublishAsync's acknowledgements still awaited, in the
	// order the messages went out; ackLoop tells their callers. ackMu
	// guards acksClosed, set once ackLoop stopped reading acks.
	acks       chan pendingAck
	ackMu      sync.RWMutex
	acksClosed bool

	ctx     context.Context // ends with Close
	cancel  context.CancelFunc
	keepers sync.WaitGroup // goroutines running a held lease
	bg      sync.WaitGroup // the lease watcher
	closed  chan struct{}  // closed by the connection's closed handler

	// reconnected restarts the lease watcher, whose consumer may not have
	// survived (a restarted server has lost it).
	reconnected chan struct{}
	once        sync.Once

	mu      sync.Mutex
	held    map[string]uint64 // lease name → current revision
	closing bool              // set by Close: no lease may be kept any more
	lastErr string
}

// ErrClosed is returned by the Node's methods after Close.
var ErrClosed = errors.New("cluster: node closed")

// PartitionOf maps key onto one of partitions partitions: the FNV-1a 32-bit
// hash of key's bytes modulo partitions. The mapping is part of the stored
// state (progress is kept per partition) and never changes. partitions < 1
// counts as 1.
func PartitionOf(partitions int, key string) int {
	if partitions <= 1 {
		return 0
	}
	h := fnv.New32a()
	h.Write([]byte(key))
	return int(h.Sum32() % uint32(partitions))
}

// Token turns any string (an account id, a chat id) into one token of a
// lease or request name: letters, digits, '-' and '_' stay, every other byte
// becomes '=' and two hex digits. Different strings give different tokens.
func Token(s string) string {
	const hex = "0123456789ABCDEF"
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '-', c == '_':
			b.WriteByte(c)
		default:
			b.WriteByte('=')
			b.WriteByte(hex[c>>4])
			b.WriteByte(hex[c&15])
		}
	}
	if b.Len() == 0 {
		return "="
	}
	return b.String()
}

func (o *Options) normalize() error {
	if o.URL == "" {
		return errors.New("cluster: cluster.nats.url is required")
	}
	if !tokenRE.MatchString(o.Instance) {
		return fmt.Errorf("cluster: cluster.instance %q must be non-empty and use only letters, digits, '-' and '_'", o.Instance)
	}
	switch {
	case o.Partitions == 0:
		o.Partitions = DefaultPartitions
	case o.Partitions < 0 || o.Partitions > MaxPartitions:
		return fmt.Errorf("cluster: cluster.partitions %d must be between 1 and %d", o.Partitions, MaxPartitions)
	}
	switch {
	case o.LeaseTTL == 0:
		o.LeaseTTL = DefaultLeaseTTL
	case o.LeaseTTL < MinLeaseTTL:
		return fmt.Errorf("cluster: cluster.leaseTtlMs %d is below the minimum of %d", o.LeaseTTL.Milliseconds(), MinLeaseTTL.Milliseconds())
	}
	if o.Prefix == "" {
		o.Prefix = DefaultPrefix
	}
	if !tokenRE.MatchString(o.Prefix) {
		return fmt.Errorf("cluster: prefix %q must use only letters, digits, '-' and '_'", o.Prefix)
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return nil
}

// Open connects to NATS and makes sure the lease and progress buckets and the
// inbound stream exist and agree with o. The first connection must succeed
// (an unreachable server is an error, so a wrong URL shows at once); after
// that the connection is re-established forever, and while it is down
// requests fail at once rather than being buffered.
func Open(ctx context.Context, o Options) (*Node, error) {
	if err := o.normalize(); err != nil {
		return nil, err
	}
	ttl := o.LeaseTTL
	n := &Node{
		o:           o,
		log:         o.Logger.With("component", "cluster", "instance", o.Instance),
		stream:      o.Prefix + "_inbound",
		value:       []byte(o.Instance + " " + rand.Text()),
		renewEvery:  ttl / 3,
		margin:      ttl / 5,
		retryEvery:  max(ttl/10, 10*time.Millisecond),
		poll:        min(time.Second, ttl/4),
		opTimeout:   min(max(ttl, 500*time.Millisecond), 5*time.Second),
		closed:      make(chan struct{}),
		reconnected: make(chan struct{}, 1),
		held:        map[string]uint64{},
	}
	n.view = newView(ttl)

	nc, err := nats.Connect(o.URL,
		nats.Name("pincer "+o.Instance),
		nats.MaxReconnects(-1),
		nats.ReconnectWait(500*time.Millisecond),
		nats.ReconnectBufSize(-1),
		nats.PingInterval(min(max(2*ttl, time.Second), 20*time.Second)),
		nats.MaxPingsOutstanding(2),
		nats.DrainTimeout(drainTimeout),
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) {
			if err == nil {
				// Closed or drained by Close: nothing went wrong.
				n.log.Debug("nats connection closed")
				return
			}
			n.noteErr(fmt.Errorf("disconnected: %w", err))
			n.log.Warn("nats disconnected", "error", err)
		}),
		nats.ReconnectHandler(func(c *nats.Conn) {
			n.log.Info("nats reconnected", "server", c.ConnectedUrlRedacted())
			select {
			case n.reconnected <- struct{}{}:
			default:
			}
		}),
		nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
			n.noteErr(err)
			n.log.Warn("nats error", "error", err)
		}),
		nats.ClosedHandler(func(*nats.Conn) { close(n.closed) }),
	)
	if err != nil {
		return nil, fmt.Errorf("cluster: connect to cluster.nats.url: %w", err)
	}
	n.nc = nc
	fail := func(err error) (*Node, error) {
		nc.Close()
		return nil, err
	}
	if n.js, err = jetstream.New(nc, jetstream.WithPublishAsyncMaxPending(asyncPending), jetstream.WithPublishAsyncTimeout(asyncTimeout)); err != nil {
		return fail(fmt.Errorf("cluster: jetstream: %w", err))
	}
	if err := n.ensure(ctx); err != nil {
		return fail(err)
	}
	n.ctx, n.cancel = context.WithCancel(context.Background())
	n.acks = make(chan pendingAck, asyncPending)
	n.bg.Go(n.ackLoop)
	n.bg.Add(1)
	go func() {
		defer n.bg.Done()
		n.watch(n.ctx)
	}()
	n.log.Info("cluster node open", "server", nc.ConnectedUrlRedacted(), "partitions", o.Partitions,
		"lease_ttl", ttl, "prefix", o.Prefix)
	return n, nil
}

// ensure creates or checks the buckets and the stream.
func (n *Node) ensure(ctx context.Context) error {
	o := n.o
	leases, err := n.ensureKV(ctx, jetstream.KeyValueConfig{
		Bucket:      o.Prefix + "_leases",
		Description: "pincer cluster leases",
		TTL:         o.LeaseTTL,
		Storage:     jetstream.FileStorage,
	})
	if err != nil {
		return err
	}
	st, err := leases.Status(ctx)
	if err != nil {
		return fmt.Errorf("cluster: status of bucket %s: %w", leases.Bucket(), err)
	}
	if st.TTL() != o.LeaseTTL {
		return fmt.Errorf("cluster: the lease bucket %s keeps leases for %d ms but cluster.leaseTtlMs is %d; every instance must use the same value (or delete the bucket to change it)",
			leases.Bucket(), st.TTL().Milliseconds(), o.LeaseTTL.Milliseconds())
	}
	n.leases = leases

	if n.prog, err = n.ensureKV(ctx, jetstream.KeyValueConfig{
		Bucket:      o.Prefix + "_progress",
		Description: "pincer cluster consumer progress per partition",
		Storage:     jetstream.FileStorage,
	}); err != nil {
		return err
	}

	cfg := jetstream.StreamConfig{
		Name:        n.stream,
		Description: "pincer inbound messages, one subject per chat partition",
		Subjects:    []string{o.Prefix + ".inbound.*"},
		Retention:   jetstream.LimitsPolicy,
		Storage:     jetstream.FileStorage,
		MaxAge:      24 * time.Hour,
		Duplicates:  2 * time.Minute,
	}
	if _, err := n.js.Stream(ctx, cfg.Name); errors.Is(err, jetstream.ErrStreamNotFound) {
		if _, err := n.js.CreateStream(ctx, cfg); err != nil && !errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) {
			return fmt.Errorf("cluster: create stream %s: %w", cfg.Name, err)
		}
	} else if err != nil {
		return fmt.Errorf("cluster: look up stream %s: %w", cfg.Name, err)
	}

	want := strconv.Itoa(o.Partitions)
	if _, err := n.prog.Create(ctx, partitionsKey, []byte(want)); err == nil {
		return nil
	} else if !isConflict(err) {
		return fmt.Errorf("cluster: record the partition count: %w", err)
	}
	e, err := n.prog.Get(ctx, partitionsKey)
	if err != nil {
		return fmt.Errorf("cluster: read the partition count: %w", err)
	}
	if got := string(e.Value()); got != want {
		return fmt.Errorf("cluster: the stream %s was set up with %s partitions but cluster.partitions is %s; every instance must use the same value (changing it needs a new stream)",
			n.stream, got, want)
	}
	return nil
}

func (n *Node) ensureKV(ctx context.Context, cfg jetstream.KeyValueConfig) (jetstream.KeyValue, error) {
	kv, err := n.js.KeyValue(ctx, cfg.Bucket)
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		kv, err = n.js.CreateKeyValue(ctx, cfg)
		if errors.Is(err, jetstream.ErrBucketExists) {
			kv, err = n.js.KeyValue(ctx, cfg.Bucket)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("cluster: bucket %s: %w", cfg.Bucket, err)
	}
	return kv, nil
}

// Close stops every Hold and RunPartitions of this node: their runs are
// cancelled and, once they return, the leases are released (deleted at their
// last revision) so other instances take over at once. Then the connection is
// drained and closed. A run that does not return within the lease TTL is not
// waited for; its lease then runs out by itself.
func (n *Node) Close() error {
	n.once.Do(func() {
		// What was published without waiting is acknowledged first (or
		// given a moment): a message read from a connection is not lost
		// to a shutdown that came just after it.
		if n.nc.IsConnected() {
			t := time.NewTimer(asyncDrain)
			select {
			case <-n.js.PublishAsyncComplete():
			case <-t.C:
			}
			t.Stop()
		}
		n.mu.Lock()
		n.closing = true
		n.mu.Unlock()
		n.cancel()
		if !waitGroup(&n.keepers, n.o.LeaseTTL) {
			n.log.Warn("closing with leases whose runs have not returned; they expire by ttl", "held", n.heldNames())
		}
		// Stopping the watcher deletes its consumer, which waits for a
		// reply a connection cut off from the server never gets.
		waitGroup(&n.bg, time.Second)
		if !n.nc.IsConnected() || n.nc.Drain() != nil {
			n.nc.Close()
		}
		select {
		case <-n.closed:
		case <-time.After(drainTimeout + time.Second):
			n.nc.Close()
		}
		n.bg.Wait()
		n.log.Info("cluster node closed")
	})
	return nil
}

func waitGroup(wg *sync.WaitGroup, d time.Duration) bool {
	done := make(chan struct{})
	go func() {
		wg.Wait()
		close(done)
	}()
	select {
	case <-done:
		return true
	case <-time.After(d):
		return false
	}
}

// Instance returns this process's instance name.
func (n *Node) Instance() string { return n.o.Instance }

// Partitions returns the number of chat partitions.
func (n *Node) Partitions() int { return n.o.Partitions }

// Status is a snapshot for health reports.
type Status struct {
	Connected bool
	Server    string   // the server connected to, credentials redacted
	Held      []string // names of the leases this node holds
	Members   []string // instances seen alive (registered by RunPartitions)
	LastError string
}

// Status reports the connection, the leases held and the members seen.
func (n *Node) Status() Status {
	s := Status{
		Connected: n.nc.IsConnected(),
		Server:    n.nc.ConnectedUrlRedacted(),
		Held:      n.heldNames(),
		Members:   n.view.members(),
	}
	n.mu.Lock()
	_, member := n.held[memberPrefix+n.o.Instance]
	s.LastError = n.lastErr
	n.mu.Unlock()
	if member && !slices.Contains(s.Members, n.o.Instance) {
		s.Members = append(s.Members, n.o.Instance)
		slices.Sort(s.Members)
	}
	return s
}

func (n *Node) heldNames() []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	names := make([]string, 0, len(n.held))
	for k := range n.held {
		names = append(names, k)
	}
	slices.Sort(names)
	return names
}

func (n *Node) noteErr(err error) {
	n.mu.Lock()
	n.lastErr = err.Error()
	n.mu.Unlock()
}

// scope returns a context that ends with ctx or with Close.
func (n *Node) scope(ctx context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(n.ctx, cancel)
	return ctx, func() {
		stop()
		cancel()
	}
}

// errNotConnected replaces nats.go's "outbound buffer limit exceeded",
// which is what a request gets while the connection is down (the reconnect
// buffer is off).
var errNotConnected = errors.New("not connected to NATS")

func connErr(err error) error {
	if errors.Is(err, nats.ErrReconnectBufExceeded) {
		return errNotConnected
	}
	return err
}

// isConflict reports whether err is JetStream's "wrong last sequence": the
// key exists (Create) or has another revision (Update, Delete).
func isConflict(err error) bool {
	if errors.Is(err, jetstream.ErrKeyExists) || errors.Is(err, jetstream.ErrKeyRevisionMismatch) {
		return true
	}
	var apiErr *jetstream.APIError
	return errors.As(err, &apiErr) &&
		(apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence ||
			apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequenceConstant)
}
