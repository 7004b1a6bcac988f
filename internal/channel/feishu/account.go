// Package feishu is the Feishu / Lark channel: a self-built app's bot,
// receiving events over the long connection or a webhook, normalizing
// them into msg.Message values for the receive pipeline, expanding merged
// forwards, and sending replies through the outbox with the platform's
// idempotency key.
package feishu

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pincerbot/pincer/internal/channel"
	"github.com/pincerbot/pincer/internal/channel/feishu/larkevent"
	"github.com/pincerbot/pincer/internal/lanes"
	"github.com/pincerbot/pincer/internal/msg"
	"github.com/pincerbot/pincer/internal/outbox"
	"github.com/pincerbot/pincer/internal/store"
)

// ChannelID is the Feishu channel's id.
const ChannelID msg.ChannelID = "feishu"

// Modes of receiving events.
const (
	ModeWebSocket = "websocket"
	ModeWebhook   = "webhook"
)

// DedupTTL is how long an event, message or content key is remembered:
// longer than the platform's last redelivery (6 h after the first push).
const DedupTTL = 7 * time.Hour

// startGrace admits messages created this long before start-up: a message
// older than that is a redelivery of one a previous run received.
const startGrace = 2 * time.Second

// Options configure one app.
type Options struct {
	ID                msg.AccountID
	AppID, AppSecret  string
	BaseURL           string
	Mode              string
	VerificationToken string
	EncryptKey        string
	Filter            PeerFilter
	// ChunkLimit bounds one sent message, in characters.
	ChunkLimit int
	// TypingReaction shows a "Typing" reaction while the agent works.
	TypingReaction bool
	// MergeForward bounds the expansion of merged forwards.
	MergeForward MergeForward
	// Quote resolves the message a reply quotes, within QuoteTimeout.
	Quote        bool
	QuoteTimeout time.Duration
	// Workspace is the directory of a chat's files (merged-forward
	// overflow, downloads); nil keeps none.
	Workspace func(peer msg.Peer) string
	Location  *time.Location
	// Dedup persists the keys of events taken in, so a redelivery after
	// a restart is still recognized; nil keeps them in memory only.
	Dedup store.Dedup
	// Sent remembers the bot's messages and the topics it answered in.
	Sent store.SentLog
	// Outbox, when set, stores replies before they are sent.
	Outbox     *outbox.Outbox
	HTTPClient *http.Client
	Logger     *slog.Logger
	// Now is the clock; time.Now when nil.
	Now func() time.Time
}

// MergeForward bounds the expansion of a merged forward.
type MergeForward struct {
	Enabled                      bool
	MaxDepth, MaxLines, MaxChars int
}

// Account is one app's bot.
type Account struct {
	opts    Options
	api     *client
	log     *slog.Logger
	started time.Time

	self    atomic.Pointer[identity]
	seen    *seenKeys
	names   *nameCache
	forward *forwards
	typing  sync.Map // message id → reaction id
	sendLimits

	sink atomic.Pointer[sinkHolder]
}

type identity struct{ openID, name string }

type sinkHolder struct{ s channel.Sink }

// New returns the account for o.
func New(o Options) *Account {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.ChunkLimit <= 0 {
		o.ChunkLimit = 4000
	}
	if o.QuoteTimeout <= 0 {
		o.QuoteTimeout = 10 * time.Second
	}
	if o.Location == nil {
		o.Location = shanghai()
	}
	a := &Account{
		opts: o, api: newClient(o.AppID, o.AppSecret, o.BaseURL, o.HTTPClient, 30*time.Second),
		log:     o.Logger.With("channel", string(ChannelID), "account", string(o.ID)),
		started: o.Now(),
		seen:    newSeenKeys(DedupTTL),
	}
	a.names = newNameCache(a.api, 6*time.Hour)
	a.forward = newForwards(a)
	return a
}

// ID is the account's id.
func (a *Account) ID() msg.AccountID { return a.opts.ID }

// Self is the bot's open_id, empty until it is known.
func (a *Account) Self() msg.UserID {
	if id := a.self.Load(); id != nil {
		return msg.UserID(id.openID)
	}
	return ""
}

// botName is the bot's app name, empty until known.
func (a *Account) botName() string {
	if id := a.self.Load(); id != nil {
		return id.name
	}
	return ""
}

// learnSelf asks the platform who the bot is, retrying with backoff until
// it answers or ctx ends.
func (a *Account) learnSelf(ctx context.Context) error {
	wait := time.Second
	for {
		openID, name, err := a.api.botInfo(ctx)
		if err == nil {
			a.self.Store(&identity{openID: openID, name: name})
			a.log.Info("Feishu bot identity", "open_id", openID, "name", name)
			return nil
		}
		a.log.Warn("Feishu bot info (retrying)", "err", err, "in", wait.String())
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(wait):
		}
		wait = min(2*wait, time.Minute)
	}
}

// Run receives events until ctx ends: over the long connection, or from
// the webhook handler (ServeWebhook) in webhook mode.
func (a *Account) Run(ctx context.Context, sink channel.Sink) error {
	a.sink.Store(&sinkHolder{sink})
	if err := a.learnSelf(ctx); err != nil {
		return nil
	}
	if a.opts.Mode == ModeWebhook {
		<-ctx.Done()
		return nil
	}
	return a.runLongConnection(ctx)
}

// WebhookHandler is the handler of the app's event request URL.
func (a *Account) WebhookHandler() (http.Handler, error) {
	return larkevent.NewHandler(larkevent.Options{
		VerificationToken: a.opts.VerificationToken, EncryptKey: a.opts.EncryptKey,
		Deliver: a.deliver, Logger: a.log, Now: a.opts.Now,
	})
}

// errNotRunning is returned for events that arrive before Run.
var errNotRunning = errors.New("feishu: the account is not running yet")

// deliver takes one verified event in: it is decoded, deduplicated and
// handed to the sink, and deliver returns without waiting for any reply.
func (a *Account) deliver(ctx context.Context, ev larkevent.Envelope) error {
	switch ev.EventType {
	case larkevent.EventMessageReceive:
	case larkevent.EventMessageRecalled:
		return nil
	default:
		a.log.Debug("Feishu event ignored", "type", ev.EventType)
		return nil
	}
	h := a.sink.Load()
	if h == nil || a.Self() == "" {
		// The platform retries; by then pincer knows who it is.
		return fmt.Errorf("%w: %w", larkevent.ErrBusy, errNotRunning)
	}
	m, err := larkevent.DecodeMessageReceive(ev)
	if err != nil {
		a.log.Warn("Feishu message event dropped: it does not decode", "event_id", ev.EventID, "err", err)
		return nil
	}
	if m.SenderType == "app" && m.SenderOpenID == string(a.Self()) {
		return nil
	}
	if t := time.UnixMilli(m.CreateTime); t.Before(a.started.Add(-startGrace)) {
		a.log.Debug("Feishu message from before start-up not answered", "message_id", m.MessageID, "created", t)
		return nil
	}
	keys := []string{"event:" + ev.EventID, "msg:" + m.MessageID, "content:" + larkevent.ContentKey(m)}
	if !a.claim(ctx, keys) {
		a.log.Debug("Feishu redelivery dropped", "event_id", ev.EventID, "message_id", m.MessageID)
		return nil
	}
	in, ok := a.normalize(ctx, m)
	if !ok {
		return nil
	}
	if !a.opts.Filter.Allows(m.ChatID, in.Peer, in.Sender.ID) {
		a.log.Debug("Feishu message from a peer not allowed", "peer", in.Peer.String())
		return nil
	}
	if in.Peer.Kind == msg.Group && !in.Mentioned(a.Self()) && m.ThreadID != "" && a.answeredIn(ctx, m.ThreadID) {
		// A topic the bot already answered in needs no @.
		in.Mentions = append(in.Mentions, a.Self())
	}
	if len(in.ForwardIDs) > 0 && a.opts.MergeForward.Enabled {
		// Expanded now in the background, so a later turn finds the
		// excerpt ready; the turn that needs it waits for it.
		a.forward.prefetch(string(in.ID), in.Peer)
	}
	r := a.ReplierFor(in)
	if t, ok := h.s.(channel.Taker); ok {
		t.Take(context.WithoutCancel(ctx), in, r, a.outcome(in))
		return nil
	}
	go func() {
		if err := h.s.Dispatch(context.WithoutCancel(ctx), in, r); err != nil {
			a.outcome(in)(err)
		}
	}()
	return nil
}

// outcome logs how a message ended when it was not answered.
func (a *Account) outcome(m msg.Message) func(error) {
	return func(err error) {
		switch {
		case err == nil, errors.Is(err, channel.ErrMerged), errors.Is(err, channel.ErrDuplicate), errors.Is(err, channel.ErrStopped):
		case errors.Is(err, lanes.ErrClosed), errors.Is(err, channel.ErrClosed):
			a.log.Warn("Feishu message not taken in: shutting down", "message_id", string(m.ID), "peer", m.Peer.String())
		default:
			a.log.Warn("Feishu message", "message_id", string(m.ID), "peer", m.Peer.String(), "err", err)
		}
	}
}

// claim claims every key of an event, in memory and in the store; false
// when any was claimed before (a redelivery).
func (a *Account) claim(ctx context.Context, keys []string) bool {
	prefix := string(ChannelID) + "\x1f" + string(a.opts.ID) + "\x1f"
	if !a.seen.claim(keys, a.opts.Now()) {
		return false
	}
	if a.opts.Dedup == nil {
		return true
	}
	fresh := true
	for _, k := range keys {
		ok, err := a.opts.Dedup.ClaimDedup(ctx, prefix+k, DedupTTL)
		if err != nil {
			a.log.Warn("Feishu dedup claim (taken in anyway)", "key", k, "err", err)
			continue
		}
		fresh = fresh && ok
	}
	return fresh
}

// answeredIn reports whether the bot replied in the topic thread.
func (a *Account) answeredIn(ctx context.Context, thread string) bool {
	if a.opts.Sent == nil {
		return false
	}
	ok, err := a.opts.Sent.WasSent(ctx, ChannelID, a.opts.ID, msg.MessageID("thread:"+thread))
	return err == nil && ok
}

// SentByBot reports whether id is one of the bot's messages.
func (a *Account) SentByBot(ctx context.Context, id msg.MessageID) bool {
	if a.opts.Sent == nil || id == "" {
		return false
	}
	ok, err := a.opts.Sent.WasSent(ctx, ChannelID, a.opts.ID, id)
	return err == nil && ok
}

// seenKeys remembers claimed keys for a while.
type seenKeys struct {
	mu   sync.Mutex
	ttl  time.Duration
	keys map[string]time.Time
	next time.Time
}

func newSeenKeys(ttl time.Duration) *seenKeys {
	return &seenKeys{ttl: ttl, keys: map[string]time.Time{}}
}

// claim records keys at now; false when any is remembered.
func (s *seenKeys) claim(keys []string, now time.Time) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if now.After(s.next) {
		for k, at := range s.keys {
			if now.Sub(at) > s.ttl {
				delete(s.keys, k)
			}
		}
		s.next = now.Add(time.Minute)
	}
	fresh := true
	for _, k := range keys {
		if at, ok := s.keys[k]; ok && now.Sub(at) <= s.ttl {
			fresh = false
		}
	}
	for _, k := range keys {
		s.keys[k] = now
	}
	return fresh
}

// PeerFilter admits chats and users: 'chat:oc_…', 'user:ou_…' or '*'.
// Empty Allow admits everyone; Deny always wins.
type PeerFilter struct {
	allow, deny []string
}

// NewPeerFilter parses allow and deny lists.
func NewPeerFilter(allow, deny []string) (PeerFilter, error) {
	norm := func(list []string) ([]string, error) {
		var out []string
		for _, e := range list {
			e = strings.TrimSpace(e)
			if e == "*" {
				out = append(out, e)
				continue
			}
			kind, id, ok := strings.Cut(e, ":")
			kind = strings.ToLower(kind)
			if !ok || id == "" || (kind != "chat" && kind != "user") {
				return nil, fmt.Errorf("peer %q: want *, chat:<oc_…> or user:<ou_…>", e)
			}
			out = append(out, kind+":"+id)
		}
		return out, nil
	}
	a, err := norm(allow)
	if err != nil {
		return PeerFilter{}, err
	}
	d, err := norm(deny)
	if err != nil {
		return PeerFilter{}, err
	}
	return PeerFilter{allow: a, deny: d}, nil
}

// Allows reports whether a message in chat chatID, from sender, is taken.
func (f PeerFilter) Allows(chatID string, peer msg.Peer, sender msg.UserID) bool {
	match := func(list []string) bool {
		for _, e := range list {
			if e == "*" || e == "chat:"+chatID || e == "user:"+string(sender) || (peer.Kind == msg.Group && e == "chat:"+peer.ID) {
				return true
			}
		}
		return false
	}
	if match(f.deny) {
		return false
	}
	return len(f.allow) == 0 || match(f.allow)
}

// shanghai is Asia/Shanghai, or UTC+8 when the zone database is missing.
func shanghai() *time.Location {
	if loc, err := time.LoadLocation("Asia/Shanghai"); err == nil {
		return loc
	}
	return time.FixedZone("CST", 8*3600)
}
