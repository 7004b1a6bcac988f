// Package feishu is the Feishu / Lark channel: a self-built app's bot,
// receiving events over the long connection or a webhook, normalizing
// them into msg.Message values for the receive pipeline, expanding merged
// forwards, downloading the media of messages (channel.Downloader), and
// sending replies, their images and files included, through the outbox
// with the platform's idempotency key.
package feishu

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"github.com/pincerbot/pincer/internal/trace"
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
	// Trace, when set, learns why a message was dropped before the
	// pipeline saw it.
	Trace *trace.Recorder
	// ChunkLimit bounds one sent message, in characters.
	ChunkLimit int
	// TypingReaction shows a "Typing" reaction while the agent works.
	TypingReaction bool
	// Streaming is how replies are shown while the model writes them:
	// StreamingCard writes them live into a card, StreamingOff (or "")
	// sends each whole once written.
	Streaming string
	// MergeForward bounds the expansion of merged forwards.
	MergeForward MergeForward
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
	Outbox *outbox.Outbox
	// Fetch downloads the http(s) URL of outbound media, at most limit
	// bytes (more fails with channel.ErrTooLarge). The gateway passes a
	// fetcher that refuses non-public addresses; nil is a plain GET, for
	// tests and development.
	Fetch      func(ctx context.Context, url string, limit int64) (channel.Blob, error)
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
	known   chan struct{} // closed once self is known
	seen    *seenKeys
	names   *nameCache
	forward *forwards
	direct  *directChats
	typing  sync.Map // message id → reaction id
	// recalled remembers the messages their senders recalled.
	recalled *seenKeys
	// storeWarn throttles the warnings of a failing dedup store, busyWarn
	// those of events refused while pincer is saturated.
	storeWarn, busyWarn everyMinute
	sendLimits
	// cardsRefused: the platform refused the app CardKit; replies are
	// sent whole until restart.
	cardsRefused atomic.Bool

	sink atomic.Pointer[sinkHolder]
	// conn is how the account receives events (Health); refusedRetry,
	// when set, replaces the first wait after a refusal.
	conn         connState
	refusedRetry time.Duration
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
	if o.Location == nil {
		o.Location = shanghai()
	}
	if o.BaseURL == "" {
		o.BaseURL = feishuBaseURL
	}
	a := &Account{
		opts: o, api: newClient(o.AppID, o.AppSecret, o.BaseURL, o.HTTPClient, 30*time.Second),
		log:      o.Logger.With("channel", string(ChannelID), "account", string(o.ID)),
		started:  o.Now(),
		known:    make(chan struct{}),
		recalled: newSeenKeys(recallTTL, 1<<14),
		seen:     newSeenKeys(DedupTTL, maxSeenKeys),
		direct:   newDirectChats(maxDirectChats),
	}
	a.names = newNameCache(a.api, nameTTL)
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

// Identify asks the platform who the bot is, retrying with backoff until
// it answers or ctx ends: for a process that answers the app's chats
// without running its connection (a cluster's other instances), which Run
// would otherwise ask.
func (a *Account) Identify(ctx context.Context) error { return a.learnSelf(ctx) }

// learnSelf asks the platform who the bot is, retrying with backoff until
// it answers or ctx ends.
func (a *Account) learnSelf(ctx context.Context) error {
	wait := time.Second
	for {
		openID, name, err := a.api.botInfo(ctx)
		if err == nil {
			if a.self.Swap(&identity{openID: openID, name: name}) == nil {
				close(a.known)
			}
			a.conn.identity(nil)
			a.log.Info("Feishu bot identity", "open_id", openID, "name", name)
			return nil
		}
		a.conn.identity(err)
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
// the webhook handler (WebhookHandler) in webhook mode. Events that
// arrive before the bot's identity is known are refused, to be pushed
// again. The long connection opens while the identity is asked for, so
// a refusal of the app shows at once.
func (a *Account) Run(ctx context.Context, sink channel.Sink) error {
	a.sink.Store(&sinkHolder{sink})
	if a.opts.Mode == ModeWebhook {
		a.conn.set(StateListening, nil)
		if err := a.learnSelf(ctx); err != nil {
			return nil
		}
		<-ctx.Done()
		return nil
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Go(func() { _ = a.learnSelf(ctx) })
	return a.runLongConnection(ctx)
}

// Webhook reports whether the app's events come to its webhook rather
// than over the long connection.
func (a *Account) Webhook() bool { return a.opts.Mode == ModeWebhook }

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
		if r, err := larkevent.DecodeMessageRecalled(ev); err == nil {
			// What the message said is not shown to the agent any more.
			a.recalled.claim([]string{r.MessageID}, a.opts.Now())
			a.log.Debug("Feishu message recalled", "message_id", r.MessageID)
		}
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
	peer, sender := eventPeer(m)
	key := trace.Key{Channel: ChannelID, Account: a.opts.ID, Peer: peer, ID: msg.MessageID(m.MessageID)}
	if m.SenderOpenID == string(a.Self()) {
		a.opts.Trace.Step(key, trace.StageReceive, "dropped", "the bot's own message")
		return nil
	}
	if t := time.UnixMilli(m.CreateTime); t.Before(a.started.Add(-startGrace)) {
		a.log.Debug("Feishu message from before start-up not answered", "message_id", m.MessageID, "created", t)
		a.opts.Trace.Step(key, trace.StageReceive, "dropped", "sent before pincer started ("+t.Format(time.DateTime)+"): not answered")
		return nil
	}
	if !a.opts.Filter.Allows(m.ChatID, peer, sender) {
		a.log.Debug("Feishu message from a peer not allowed", "peer", peer.String())
		a.opts.Trace.Step(key, trace.StageReceive, "dropped", "denied by allowFrom / denyFrom (chat "+m.ChatID+", user "+string(sender)+")")
		return nil
	}
	keys := []string{"event:" + ev.EventID, "msg:" + m.MessageID, "content:" + larkevent.ContentKey(m)}
	if !a.claim(ctx, keys) {
		a.log.Debug("Feishu redelivery dropped", "event_id", ev.EventID, "message_id", m.MessageID)
		a.opts.Trace.Step(key, trace.StageReceive, "dropped", "a redelivery of an event or message already taken")
		return nil
	}
	in := a.normalize(ctx, m)
	if in.Peer.Kind == msg.Group && !in.Mentioned(a.Self()) && m.ThreadID != "" && a.answeredIn(ctx, m.ThreadID) {
		// A topic the bot already answered in needs no @.
		in.Mentions = append(in.Mentions, a.Self())
	}
	if in.Peer.Kind == msg.Direct {
		a.direct.learn(m.ChatID, in.Peer.ID)
	}
	if len(in.ForwardIDs) > 0 && a.opts.MergeForward.Enabled {
		// Expanded now in the background, so a later turn finds the
		// excerpt ready; the turn that needs it waits for it.
		a.forward.prefetch(string(in.ID), in.Peer)
	}
	if _, ok := cardOf(in); ok {
		a.forward.startCard(string(in.ID))
	}
	r := a.ReplierFor(in)
	if t, ok := h.s.(tryTaker); ok {
		// While pincer is saturated the event waits a moment for room,
		// then the platform is asked to deliver it again: nothing is
		// dropped, and the claims are given back for the retry.
		if err := t.TryTake(context.WithoutCancel(ctx), in, r, a.outcome(in), busyWait); errors.Is(err, lanes.ErrFull) {
			a.release(keys)
			if a.busyWarn.admit(a.opts.Now()) {
				a.log.Warn("Feishu event refused: pincer is saturated; the platform delivers it again (logged once a minute)", "message_id", string(in.ID))
			}
			return fmt.Errorf("%w: the ingest queue is full", larkevent.ErrBusy)
		}
		return nil
	}
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

// recallTTL is how long a recall is remembered: longer than a message
// waits in a window, a history buffer or a digest is kept.
const recallTTL = 24 * time.Hour

// wasRecalled reports whether the message id was recalled.
func (a *Account) wasRecalled(id msg.MessageID) bool {
	return id != "" && !a.recalled.fresh(string(id), a.opts.Now())
}

// busyWait is how long an event waits for room in a saturated pincer
// before the platform is asked to deliver it again.
const busyWait = 2 * time.Second

// tryTaker is a sink that can refuse a message it has no room for
// (lanes.Sink).
type tryTaker interface {
	TryTake(ctx context.Context, m msg.Message, r channel.Replier, done func(error), wait time.Duration) error
}

// release gives back the claims of an event that was not taken in.
func (a *Account) release(keys []string) {
	a.seen.release(keys)
	if a.opts.Dedup == nil {
		return
	}
	prefix := string(ChannelID) + "\x1f" + string(a.opts.ID) + "\x1f"
	for _, k := range keys {
		if err := a.opts.Dedup.ReleaseDedup(context.Background(), prefix+k); err != nil && a.storeWarn.admit(a.opts.Now()) {
			a.log.Warn("Feishu dedup key not released; a redelivery of it will be dropped (logged once a minute)", "key", k, "err", err)
		}
	}
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
			if a.storeWarn.admit(a.opts.Now()) {
				a.log.Warn("Feishu dedup keys not stored (messages taken in anyway; logged once a minute)", "key", k, "err", err)
			}
			continue
		}
		fresh = fresh && ok
	}
	return fresh
}

// everyMinute lets one event a minute through: a failing store logs one
// line a minute, not one per message.
type everyMinute struct{ next atomic.Int64 }

func (e *everyMinute) admit(now time.Time) bool {
	next := e.next.Load()
	return now.UnixNano() >= next && e.next.CompareAndSwap(next, now.Add(time.Minute).UnixNano())
}

// answeredIn reports whether the bot replied in the topic thread.
func (a *Account) answeredIn(ctx context.Context, thread string) bool {
	if a.opts.Sent == nil {
		return false
	}
	ok, err := a.opts.Sent.WasSent(ctx, ChannelID, a.opts.ID, threadKey(thread))
	return err == nil && ok
}

// SentByBot reports whether id is one of the bot's messages: the ones it
// sent are recorded in the store, so the answer is always known.
func (a *Account) SentByBot(ctx context.Context, _ msg.Peer, id msg.MessageID) (mine, known bool) {
	if a.opts.Sent == nil || id == "" {
		return false, true
	}
	ok, err := a.opts.Sent.WasSent(ctx, ChannelID, a.opts.ID, id)
	return err == nil && ok, true
}

// maxSeenKeys bounds the keys remembered in memory (three a message):
// past it the oldest are forgotten first, and the store, when there is
// one, still knows them.
const maxSeenKeys = 1 << 19

// seenKeys remembers claimed keys for a while, as 16-byte hashes in a map
// and in a queue in the order they were claimed, so forgetting the
// expired ones costs nothing per claim beyond them.
type seenKeys struct {
	mu    sync.Mutex
	ttl   time.Duration
	max   int
	keys  map[[16]byte]int64 // hash → when claimed, in Unix nanoseconds
	queue []seenEntry
	head  int
}

type seenEntry struct {
	key [16]byte
	at  int64
}

func newSeenKeys(ttl time.Duration, max int) *seenKeys {
	return &seenKeys{ttl: ttl, max: max, keys: map[[16]byte]int64{}}
}

func seenHash(k string) [16]byte {
	sum := sha256.Sum256([]byte(k))
	return [16]byte(sum[:16])
}

// claim records keys at now; false when any is remembered.
func (s *seenKeys) claim(keys []string, now time.Time) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	t := now.UnixNano()
	s.forgetLocked(t)
	fresh := true
	for _, k := range keys {
		h := seenHash(k)
		if at, ok := s.keys[h]; ok && t-at <= int64(s.ttl) {
			// Remembered from its first claim: the platform's retries
			// are counted from its first push.
			fresh = false
			continue
		}
		s.keys[h] = t
		s.queue = append(s.queue, seenEntry{h, t})
	}
	return fresh
}

// fresh reports whether key is not remembered at now, without claiming it.
func (s *seenKeys) fresh(key string, now time.Time) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	at, ok := s.keys[seenHash(key)]
	return !ok || now.UnixNano()-at > int64(s.ttl)
}

// release forgets keys claimed by an event that was not taken in.
func (s *seenKeys) release(keys []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, k := range keys {
		delete(s.keys, seenHash(k))
	}
}

// forgetLocked drops the entries older than the ttl, and the oldest past
// the bound.
func (s *seenKeys) forgetLocked(now int64) {
	for s.head < len(s.queue) {
		e := s.queue[s.head]
		if now-e.at <= int64(s.ttl) && len(s.keys) < s.max {
			break
		}
		if s.keys[e.key] == e.at {
			delete(s.keys, e.key) // not claimed again since
		}
		s.queue[s.head] = seenEntry{}
		s.head++
	}
	if s.head > 1024 && s.head*2 > len(s.queue) {
		n := copy(s.queue, s.queue[s.head:])
		clear(s.queue[n:])
		s.queue, s.head = s.queue[:n], 0
	}
}

// maxDirectChats bounds the direct chats whose chat ids are remembered.
const maxDirectChats = 4096

// directChats remembers the chat id of direct chats (a p2p chat is
// addressed by its user, but the APIs that read it want its chat id) and
// the user of each, as messages show them.
type directChats struct {
	mu     sync.Mutex
	max    int
	byChat map[string]string // chat id → user open_id
	byUser map[string]string
}

func newDirectChats(max int) *directChats {
	return &directChats{max: max, byChat: map[string]string{}, byUser: map[string]string{}}
}

// learn records that chatID is the direct chat with user.
func (d *directChats) learn(chatID, user string) {
	if chatID == "" || user == "" {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.byChat[chatID] == user {
		return
	}
	for len(d.byChat) >= d.max {
		for c, u := range d.byChat {
			delete(d.byChat, c)
			delete(d.byUser, u)
			break
		}
	}
	d.byChat[chatID] = user
	d.byUser[user] = chatID
}

// user returns the user of the direct chat chatID, if known.
func (d *directChats) user(chatID string) (string, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	u, ok := d.byChat[chatID]
	return u, ok
}

// chat returns the chat id of the direct chat with user, if known.
func (d *directChats) chat(user string) (string, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	c, ok := d.byUser[user]
	return c, ok
}

// peerOf is the peer of the chat chatID: the user of a direct chat seen
// before, else the chat as a group.
func (a *Account) peerOf(chatID string) msg.Peer {
	if u, ok := a.direct.user(chatID); ok {
		return msg.Peer{Kind: msg.Direct, ID: u}
	}
	return msg.Peer{Kind: msg.Group, ID: chatID}
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
