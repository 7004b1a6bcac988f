package onebot

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/pincerbot/pincer/internal/channel"
	"github.com/pincerbot/pincer/internal/msg"
)

// AccountOptions configure one QQ account over a forward WebSocket.
type AccountOptions struct {
	// ID is the account id ("default" for the top-level account).
	ID     msg.AccountID
	WSURL  string
	Token  string
	SelfID ID
	Filter PeerFilter
	// ReplyToTrigger quotes the triggering message in group replies.
	ReplyToTrigger bool
	ChunkLimit     int
	RequestTimeout time.Duration
	Reconnect      Reconnect
	Logger         *slog.Logger
}

// Account is one QQ account: it keeps its connection up, turns message
// events into messages for the sink, and delivers replies.
type Account struct {
	opts AccountOptions
	log  *slog.Logger
	sent *SentIDs

	mu    sync.Mutex
	conn  *Conn
	self  ID
	state State
}

// NewAccount returns an account; Run connects it.
func NewAccount(o AccountOptions) *Account {
	if o.ID == "" {
		o.ID = msg.DefaultAccount
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return &Account{opts: o, log: o.Logger.With("channel", string(ChannelID), "account", string(o.ID)), sent: NewSentIDs(0)}
}

var _ channel.Adapter = (*Account)(nil)

// Name implements channel.Adapter.
func (a *Account) Name() msg.ChannelID { return ChannelID }

// State is the account's connection state.
func (a *Account) State() State {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.state
}

// Self is the bot's QQ number, 0 while unknown.
func (a *Account) Self() ID {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.self
}

// SentByBot reports whether id is one of the bot's recent messages.
func (a *Account) SentByBot(id msg.MessageID) bool { return a.sent.Has(id) }

// ErrNotConnected is returned by sends while the account is down.
var ErrNotConnected = errors.New("onebot: account not connected")

// Run keeps the account connected until ctx ends, handing messages to
// sink. Each message is dispatched on its own goroutine, so a slow turn
// never stalls the connection; Run waits for them before returning.
func (a *Account) Run(ctx context.Context, sink channel.Sink) error {
	var turns sync.WaitGroup
	defer turns.Wait()
	return a.opts.Reconnect.Run(ctx, func(ctx context.Context, up func()) error {
		ws, err := DialForward(ctx, a.opts.WSURL, a.opts.Token)
		if err != nil {
			return err
		}
		c := NewConn(ws, a.opts.RequestTimeout, a.log)
		a.setConn(c)
		defer a.setConn(nil)
		up()
		resolving := sync.Once{}
		return c.Run(ctx, func(frame []byte) {
			ev, err := DecodeEvent(frame)
			if err != nil {
				a.log.Warn("undecodable event", "err", err)
				return
			}
			resolving.Do(func() {
				go a.resolveSelf(ctx, c, &ev)
			})
			a.handle(ctx, ev, sink, &turns)
		})
	}, func(s State, err error) {
		a.mu.Lock()
		a.state = s
		a.mu.Unlock()
		if err != nil {
			a.log.Warn("connection", "state", string(s), "err", err)
		} else {
			a.log.Info("connection", "state", string(s))
		}
	})
}

func (a *Account) setConn(c *Conn) {
	a.mu.Lock()
	a.conn = c
	a.mu.Unlock()
}

func (a *Account) resolveSelf(ctx context.Context, c *Conn, first *Event) {
	self, src, err := ResolveSelf(ctx, c, a.opts.SelfID, "", first)
	if err != nil {
		a.log.Error("the bot's QQ number is unknown: group mentions cannot trigger replies; set selfId", "err", err)
		return
	}
	a.mu.Lock()
	a.self = self
	a.mu.Unlock()
	a.log.Info("bot QQ number", "self_id", self.String(), "source", string(src))
}

func (a *Account) handle(ctx context.Context, ev Event, sink channel.Sink, turns *sync.WaitGroup) {
	m, err := ev.ToMessage(a.opts.ID, a.Self())
	if err != nil {
		if !errors.Is(err, ErrNotMessage) && !errors.Is(err, ErrSelf) {
			a.log.Debug("event dropped", "reason", err)
		}
		return
	}
	if !a.opts.Filter.Allowed(m.Peer) {
		a.log.Debug("peer not allowed", "peer", m.Peer.String())
		return
	}
	turns.Go(func() {
		if err := sink.Dispatch(ctx, m, &replier{a: a, trigger: m}); err != nil && !errors.Is(err, channel.ErrDuplicate) {
			a.log.Warn("dispatch", "err", err, "msg_id", string(m.ID))
		}
	})
}

// Send delivers out on the live connection.
func (a *Account) Send(ctx context.Context, out msg.Outbound) (msg.MessageID, error) {
	return a.send(ctx, out, OutboundOptions{})
}

func (a *Account) send(ctx context.Context, out msg.Outbound, opts OutboundOptions) (msg.MessageID, error) {
	a.mu.Lock()
	c := a.conn
	a.mu.Unlock()
	if c == nil {
		return "", ErrNotConnected
	}
	ob := &Outbox{Caller: c, ChunkLimit: a.opts.ChunkLimit, Sent: a.sent}
	return ob.Send(ctx, out, opts)
}

// replier answers one inbound message: the reply quotes it in groups when
// ReplyToTrigger is set, and may mention its sender.
type replier struct {
	a       *Account
	trigger msg.Message
}

func (r *replier) Partial(string) {}

func (r *replier) Deliver(ctx context.Context, out msg.Outbound) (msg.MessageID, error) {
	if r.a.opts.ReplyToTrigger && r.trigger.Peer.Kind == msg.Group && out.ReplyTo == "" {
		out.ReplyTo = r.trigger.ID
	}
	opts := OutboundOptions{Mentions: true}
	if qq, err := parseID(string(r.trigger.Sender.ID)); err == nil {
		opts.Participants = []Participant{{QQ: qq, Name: r.trigger.Sender.Name}}
	}
	return r.a.send(ctx, out, opts)
}

func parseID(s string) (ID, error) {
	var id ID
	err := id.UnmarshalJSON([]byte(s))
	return id, err
}
