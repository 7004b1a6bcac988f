package onebot

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/pincerbot/pincer/internal/trace"
	"log/slog"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"

	"github.com/pincerbot/pincer/internal/channel"
	"github.com/pincerbot/pincer/internal/channel/onebot/wire"
	"github.com/pincerbot/pincer/internal/msg"
	"github.com/pincerbot/pincer/internal/outbox"
	"github.com/pincerbot/pincer/internal/store"
)

// AccountOptions configure one QQ account. Its unexported fields are set
// by tests only; they keep their defaults otherwise.
type AccountOptions struct {
	// ID is the account id ("default" for the top-level account).
	ID msg.AccountID
	// WSURL is the implementation's forward WebSocket; empty for none.
	WSURL string
	// HTTPURL is the implementation's HTTP API, used for actions while no
	// WebSocket is connected; empty for none.
	HTTPURL string
	// Remote runs actions while this process holds no connection of the
	// account and has no HTTP API: in a cluster, through the process that
	// holds the connection. Nil: such actions fail as not connected.
	Remote Caller
	Token  string
	SelfID wire.ID
	Filter PeerFilter
	// Trace, when set, learns why a message was dropped before the
	// pipeline saw it.
	Trace *trace.Recorder
	// Reverse accepts reverse WebSocket connections (ServeReverse).
	Reverse bool
	// Post accepts events POSTed to ServePost, signed with PostSecret
	// when it is set.
	Post       bool
	PostSecret string
	// ReplyToTrigger quotes the triggering message in group replies.
	ReplyToTrigger bool
	// AutoReact makes Ack react to group messages with ReactEmoji.
	AutoReact  bool
	ReactEmoji string
	ChunkLimit int
	// InlineLocalMedia sends local media files (absolute paths and
	// file:// URIs in a reply's media) inline, as base64:// data, instead
	// of by path for the implementation to read: set it when the
	// implementation runs in another container or on another host and
	// cannot see pincer's files. It applies to image, record and video
	// segments and to file uploads alike. A file over InlineMediaLimit is
	// still sent by path, with a warning. http(s) URLs always go as they
	// are: the implementation downloads them.
	InlineLocalMedia bool
	// InlineMediaLimit is the largest file InlineLocalMedia sends inline,
	// in bytes; DefaultInlineMediaLimit (10 MiB) when 0.
	InlineMediaLimit int64
	// Fetch downloads an inbound attachment's URL for Download, reading
	// at most limit+1 bytes and failing with channel.ErrTooLarge beyond
	// limit. The gateway passes one that refuses private addresses. Nil
	// is a plain HTTP GET, for tests and development only.
	Fetch func(ctx context.Context, url string, limit int64) (channel.Blob, error)
	// ChunkGap paces the chunks of one long reply.
	ChunkGap       time.Duration
	RequestTimeout time.Duration
	Reconnect      Reconnect
	// backoff pauses sends after risk control; defaultSendBackoff when nil.
	backoff *sendBackoff
	// Pace spaces the messages sent to one chat; nil sends at once.
	Pace *Pacer
	// Sent keeps the ids of the bot's messages across restarts, so a
	// reply to one of them still counts; nil keeps them in memory only.
	Sent store.SentLog
	// Inbound bounds what one message may carry to the agent.
	Inbound Inbound
	// Outbox, when set, delivers every payload durably (Send and the
	// repliers go through it); the account is its sender and wakes it on
	// every new connection.
	Outbox *outbox.Outbox
	// ownerTimeout bounds the get_msg that asks whether a quoted message
	// is the bot's; defaultOwnerTimeout when zero.
	ownerTimeout time.Duration
	// historyGap paces the pages of a history read; defaultHistoryGap
	// when zero.
	historyGap time.Duration
	// httpClient dials the forward WebSocket and the HTTP API.
	httpClient *http.Client
	// Debug logs every outbound payload.
	Debug  bool
	Logger *slog.Logger
}

// Inbound bounds what one inbound message brings to the agent. The zero
// value is the defaults.
type Inbound struct {
	// MaxChars is the most characters of one message's text that reach the
	// agent; the rest is cut and wire.TruncatedMarker appended.
	// wire.DefaultMaxChars when 0.
	MaxChars int
}

// State is a connection's state, reported on every change.
type State string

// States.
const (
	// stateIdle: not started.
	stateIdle State = "idle"
	// StateListening: waiting for the implementation to connect (reverse
	// WebSocket or HTTP POST only).
	StateListening  State = "listening"
	stateConnecting State = "connecting"
	StateConnected  State = "connected"
	stateWaiting    State = "waiting to reconnect"
	StateFailed     State = "failed"
)

// Account is one QQ account: it keeps its transports up, turns message
// events into messages for the sink, and delivers replies over whichever
// connection is live.
type Account struct {
	opts AccountOptions
	log  *slog.Logger
	sent *sentIDs
	// owners remembers what get_msg said about whose message an id is;
	// asks are the get_msg lookups in flight.
	owners  ownerCache
	asks    ownerAsks
	seen    *seen
	http    *httpCaller
	reactor reactor

	// refused logs refused reverse connections and POSTs, rate-limited.
	refused refusals

	mu      sync.Mutex
	live    []*Conn // connected WebSockets, newest last
	reverse *Conn   // the one reverse connection
	self    wire.ID
	state   State
	// stateErr is why the account is in its state, if an error put it there.
	stateErr error
	// intake exists from the start, so an implementation that dials in
	// before Run begins waits rather than being refused.
	intake  *intake
	started bool
	// connectedBefore: a connection was up once, so the next one backfills.
	connectedBefore bool
	// lastSeen is when each chat's newest message was sent, for backfill.
	lastSeen   map[msg.Peer]time.Time
	lastPruned time.Time
	// sentPruned is when the store's old sent ids were last pruned.
	sentPruned time.Time

	// reverseFrom is the remote address of reverse and reverseSeq its
	// handshake's number (under mu); handshakes counts them.
	reverseFrom string
	reverseSeq  uint64
	handshakes  atomic.Uint64

	// recalls learn the ids of recalled messages (see OnRecall; under mu).
	recalls []func(msg.MessageID)
}

// OnRecall has f learn the id of every message recalled in the account's
// chats from now on (group_recall and friend_recall notices).
func (a *Account) OnRecall(f func(msg.MessageID)) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.recalls = append(a.recalls, f)
}

// recalled tells the OnRecall functions that message id was recalled.
func (a *Account) recalled(id msg.MessageID) {
	a.mu.Lock()
	fs := a.recalls
	a.mu.Unlock()
	for _, f := range fs {
		f(id)
	}
}

// intake hands reverse connections and POSTed events from HTTP handlers
// to Run, which owns every goroutine of the account.
type intake struct {
	conns   chan reverseConn
	posts   chan post
	stopped chan struct{}
}

func newIntake() *intake {
	return &intake{conns: make(chan reverseConn), posts: make(chan post, 256), stopped: make(chan struct{})}
}

type reverseConn struct {
	ws     *websocket.Conn
	header string
	remote string
	// seq orders handshakes: the connection that completed its handshake
	// last is the live one, whatever order the hand-offs to Run take.
	seq uint64
}

type post struct {
	body   []byte
	header string
}

// Event dedup keeps keys for ten minutes, at most this many.
const (
	seenTTL = 10 * time.Minute
	seenMax = 50000
)

// NewAccount returns an account; Run brings it up.
func NewAccount(o AccountOptions) *Account {
	if o.ID == "" {
		o.ID = msg.DefaultAccount
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.backoff == nil {
		o.backoff = defaultSendBackoff()
	}
	if o.ReactEmoji == "" {
		o.ReactEmoji = "1"
	}
	a := &Account{
		opts: o, log: o.Logger.With("channel", string(ChannelID), "account", string(o.ID)),
		sent: newSentIDs(0), seen: newSeen(seenTTL, seenMax), self: o.SelfID,
		state:  stateIdle,
		intake: newIntake(),
	}
	if o.HTTPURL != "" {
		a.http = &httpCaller{BaseURL: o.HTTPURL, Token: o.Token, Timeout: o.RequestTimeout, Client: o.httpClient}
	}
	return a
}

var (
	_ channel.Adapter = (*Account)(nil)
	_ caller          = (*Account)(nil)
)

// Name implements channel.Adapter.
func (a *Account) Name() msg.ChannelID { return ChannelID }

// ID is the account id.
func (a *Account) ID() msg.AccountID { return a.opts.ID }

func (a *Account) setState(s State, err error) {
	a.mu.Lock()
	a.state, a.stateErr = s, err
	a.mu.Unlock()
	switch {
	case s == StateFailed:
		a.log.Error("connection given up", "state", string(s), "err", err)
	case err != nil:
		a.log.Warn("connection", "state", string(s), "err", err)
	default:
		a.log.Info("connection", "state", string(s))
	}
}

// Health reports the account's connection: its state, whether a
// connection is live to act on, and the error that put it there, if any.
func (a *Account) Health() (state State, live bool, err error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.state, len(a.live) > 0 || a.http != nil, a.stateErr
}

// Self is the bot's QQ number, 0 while unknown.
func (a *Account) Self() wire.ID {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.self
}

// errNotConnected is returned by actions while the account has no live
// connection and no HTTP API.
var errNotConnected = errors.New("onebot: account not connected")

// Call runs an action over the newest live WebSocket, else the HTTP API.
func (a *Account) Call(ctx context.Context, action string, params any, timeout time.Duration) (json.RawMessage, error) {
	c, err := a.liveCaller()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", action, err)
	}
	return c.Call(ctx, action, params, timeout)
}

func (a *Account) liveCaller() (caller, error) {
	c, err := a.localCaller()
	if err != nil && a.opts.Remote != nil {
		return a.opts.Remote, nil
	}
	return c, err
}

// localCaller is the newest live WebSocket of this process, else the HTTP
// API.
func (a *Account) localCaller() (caller, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if n := len(a.live); n > 0 {
		return a.live[n-1], nil
	}
	if a.http != nil {
		return a.http, nil
	}
	return nil, errNotConnected
}

// Run keeps the account's transports up until ctx ends, handing messages
// to sink. Each message is dispatched on its own goroutine, so a slow turn
// never stalls a connection; Run waits for them before returning. A
// forward connection whose retries run out leaves the account in
// StateFailed (logged as an error); Run goes on serving the other
// transports until ctx ends. One Run at a time: a second one while it runs
// fails; after it returned, Run may run again.
func (a *Account) Run(ctx context.Context, sink channel.Sink) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	defer wg.Wait()

	a.mu.Lock()
	if a.started {
		a.mu.Unlock()
		return errors.New("onebot: account already running")
	}
	a.started = true
	select {
	case <-a.intake.stopped:
		// Run again (a cluster's instance that holds the connection once
		// more): connections and events are taken from here on.
		a.intake = newIntake()
	default:
	}
	in := a.intake
	a.mu.Unlock()
	defer func() {
		close(in.stopped)
		a.mu.Lock()
		a.started = false
		a.mu.Unlock()
	}()

	switch {
	case a.opts.WSURL != "":
		wg.Go(func() { a.runForward(ctx, sink, &wg) })
	case a.opts.Reverse:
		a.setState(StateListening, nil)
	}
	if a.opts.SelfID == 0 && a.opts.WSURL == "" && !a.opts.Reverse && a.http != nil {
		wg.Go(func() { a.resolveSelf(ctx, a.http, "", nil) })
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case rc := <-in.conns:
			wg.Go(func() { a.serveReverse(ctx, rc, sink, &wg) })
		case p := <-in.posts:
			a.onFrame(ctx, p.header, p.body, sink, &wg)
		}
	}
}

// serveConn reads a live connection until it ends, making it the one
// actions go over meanwhile.
func (a *Account) serveConn(ctx context.Context, c *Conn, header string, sink channel.Sink, wg *sync.WaitGroup) error {
	a.mu.Lock()
	a.live = append(a.live, c)
	a.mu.Unlock()
	if a.opts.Outbox != nil {
		// Replies that waited for a connection go now.
		a.opts.Outbox.Wake(ChannelID, a.opts.ID)
	}
	defer func() {
		a.mu.Lock()
		for i, x := range a.live {
			if x == c {
				a.live = append(a.live[:i], a.live[i+1:]...)
				break
			}
		}
		a.mu.Unlock()
	}()
	// Every new connection confirms the QQ number and learns which
	// implementation it talks to; the first frame usually carries self_id.
	// A connection after a lost one also fetches what was missed.
	a.mu.Lock()
	again := a.connectedBefore
	a.connectedBefore = true
	a.mu.Unlock()
	first := make(chan *wire.Event, 1)
	_, headerErr := strconv.ParseInt(header, 10, 64)
	known := a.opts.SelfID > 0 || headerErr == nil
	wg.Go(func() {
		var ev *wire.Event
		if !known {
			select {
			case ev = <-first:
			case <-time.After(2 * time.Second):
			case <-ctx.Done():
				return
			}
		}
		a.resolveSelf(ctx, c, header, ev)
		a.reactor.learn(ctx, c, a.log)
		if again {
			a.backfill(ctx, c, sink, wg)
		}
	})
	once := sync.Once{}
	return c.Run(ctx, func(frame []byte, ev *wire.Event) {
		a.onEvent(ctx, c, header, frame, ev, sink, wg)
		once.Do(func() {
			if ev != nil {
				first <- ev
			}
		})
	})
}

func (a *Account) resolveSelf(ctx context.Context, c caller, header string, first *wire.Event) {
	self, src, err := lookupSelf(ctx, c, a.opts.SelfID, header, first)
	if err != nil {
		if ctx.Err() == nil {
			a.log.Error("the bot's QQ number is unknown: group mentions cannot trigger replies; set selfId", "err", err)
		}
		return
	}
	a.mu.Lock()
	prev := a.self
	a.self = self
	a.mu.Unlock()
	switch {
	case prev != 0 && prev != self:
		a.log.Warn("the implementation is logged in as another QQ number", "self_id", self.String(), "was", prev.String(), "source", string(src))
	case prev != self || src != selfFromConfig:
		a.log.Info("bot QQ number", "self_id", self.String(), "source", string(src))
	}
}
