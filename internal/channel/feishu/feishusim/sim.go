// Package feishusim is a simulated Feishu/Lark open platform served over
// HTTP: the endpoints a self-built bot app uses, at the real API's paths
// and with its JSON ({code, msg, data}), tenant tokens, error codes,
// uuid idempotency, size limits, merge_forward expansion and paging, and
// CardKit's streaming cards (card entities, their streamed text with its
// sequences and uuids, their settings, and the messages that show them). A
// test points the official SDK at it (lark.WithOpenBaseUrl), and a
// developer can serve it to try pincer without a Feishu tenant. The
// simulator also plays the platform's side of event delivery: by webhook
// it posts schema 2.0 events, encrypted and signed as the platform does;
// over the long connection it hands out the WebSocket URL and client
// configuration at endpoint discovery, speaks the SDK's protobuf frames
// (ping and pong, event frames, the client's acknowledgements), delivers
// again what was not acknowledged, and drops or refuses connections on
// request.
//
// State is set up and inspected through a goroutine-safe Go API (AddUser,
// AddChat, AddMessage, Sent, Uploads, Reactions, Cards, Calls), faults are
// scripted per path (FailNext, QueueFault) or switched on
// (SetSendRateLimit, RefuseCardKit), and requests are held to play a slow
// platform (Hold). The
// package does not import testing, so the pincer binary can link it.
package feishusim

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"
)

// Default identities used when Options leaves them empty.
const (
	DefaultAppID             = "cli_sim0000000000000"
	DefaultAppSecret         = "sim-app-secret"
	DefaultBotOpenID         = "ou_sim00000000000000000000000b07"
	DefaultBotName           = "Pincer Sim"
	DefaultTenantKey         = "sim0tenant0key00"
	DefaultVerificationToken = "sim-verification-token"
)

// DefaultTokenTTL is how long a tenant token lives unless Options.TokenTTL
// says otherwise; the platform's expire is 7200 seconds.
const DefaultTokenTTL = 2 * time.Hour

// DefaultMaxCalls is how many recent requests Calls keeps unless
// Options.MaxCalls says otherwise.
const DefaultMaxCalls = 4096

// Options configures a Sim. Zero fields take the Default… values.
type Options struct {
	// AppID and AppSecret are the credentials the token endpoint accepts.
	AppID     string
	AppSecret string
	// BotOpenID and BotName are what GET /open-apis/bot/v3/info reports.
	BotOpenID string
	BotName   string
	// TenantKey appears in senders, mentions and event headers.
	TenantKey string
	// VerificationToken goes into every event (header.token) and URL
	// verification request (token).
	VerificationToken string
	// EncryptKey, when set, makes PostEvent encrypt bodies and sign
	// requests as the platform does. Empty means plaintext and unsigned.
	EncryptKey string
	// TokenTTL is the tenant token lifetime (the expire field and when
	// the simulator stops accepting it). Zero means DefaultTokenTTL.
	TokenTTL time.Duration
	// Now is the simulator's clock: token expiry, uuid windows, the rate
	// limiter and the time stamps of new messages. Nil means time.Now.
	Now func() time.Time
	// MaxCalls bounds the request log Calls reads (the oldest entries are
	// dropped). Zero means DefaultMaxCalls; negative keeps none.
	MaxCalls int
	// LongConn configures the long connection (endpoint discovery at
	// PathWSEndpoint, the WebSocket at PathWSConnect, PushEvent).
	LongConn LongConn
}

// ChatKind is a chat's type as events report it in chat_type.
type ChatKind string

// Chat kinds.
const (
	ChatP2P        ChatKind = "p2p"
	ChatGroup      ChatKind = "group"
	ChatTopicGroup ChatKind = "topic_group"
)

// Sender types of messages.
const (
	SenderUser = "user"
	SenderApp  = "app"
)

// Mention is one @ in a message: Key is the placeholder in the content
// (@_user_1), ID the mentioned user's (or bot's) open_id.
type Mention struct {
	Key  string
	ID   string
	Name string
}

// Message is a message the simulator knows, as AddMessage takes it and
// Message returns it. Empty fields take defaults noted on each.
type Message struct {
	// ID is the message_id; empty means the simulator picks one.
	ID string
	// ChatID is the chat the message was posted in. Required for a
	// top-level message; children of a merge_forward have none.
	ChatID string
	// MsgType is the msg_type; empty means "text".
	MsgType string
	// Content is body.content as the platform serves it by default: for
	// interactive messages the degraded projection. It is stored as
	// given, not validated, so malformed content can be tested. Empty for
	// a merge_forward means the platform's fixed placeholder.
	Content string
	// CardContent is the card as its sender wrote it, served for
	// interactive messages when card_msg_content_type is
	// user_card_content or raw_card_content. Empty means Content.
	CardContent string
	// SenderID is the sender's open_id, or an app_id (cli_…) for bots.
	// Empty in a p2p chat means the chat's user.
	SenderID string
	// SenderType is "user" or "app"; empty means "app" for an app_id
	// sender and "user" otherwise.
	SenderType string
	// CreateTime is when the message was sent; zero means the
	// simulator's clock at AddMessage. UpdateTime zero means CreateTime.
	CreateTime time.Time
	UpdateTime time.Time
	// RootID, ParentID and ThreadID place a reply.
	RootID   string
	ParentID string
	ThreadID string
	// Deleted marks a recalled message: GET serves it with deleted true
	// and a fixed body, and replies to it fail with 230011.
	Deleted bool
	// Updated marks an edited message.
	Updated  bool
	Mentions []Mention
	// Children are the messages a merge_forward holds, in any order; a
	// child may itself be a merge_forward with children.
	Children []Message
	// Resources are the files and images downloadable through this
	// message, by file_key or image_key.
	Resources map[string][]byte
	// UpperMessageID is the merge_forward directly holding this message.
	// The simulator sets it; AddMessage ignores it.
	UpperMessageID string
}

// SentMessage is one message the bot sent, through create or reply.
type SentMessage struct {
	MessageID string
	ChatID    string
	// ReceiveIDType and ReceiveID are the create call's target; empty
	// for replies.
	ReceiveIDType string
	ReceiveID     string
	MsgType       string
	Content       string
	// Key is the image_key (image) or file_key (file, audio, media) the
	// message shows: an upload the bot made (see Upload).
	Key  string
	UUID string
	// ReplyTo is the message replied to; empty for create.
	ReplyTo       string
	ReplyInThread bool
	Time          time.Time
}

// Reaction is one reaction the bot added; a removed reaction stays in the
// list with Removed set, so both halves of a typing receipt can be
// checked.
type Reaction struct {
	ReactionID string
	MessageID  string
	EmojiType  string
	Added      time.Time
	Removed    bool
	RemovedAt  time.Time
}

// Call is one HTTP request the simulator answered.
type Call struct {
	Method string
	Path   string
	Query  string
	// Body is the request body; of an upload only its first 64 KiB (see
	// Uploads for the content).
	Body []byte
	// Token is the bearer token sent, empty when none.
	Token string
	// Status and Code are the HTTP status and the JSON code answered
	// (Code is 0 for non-JSON answers such as downloads).
	Status int
	Code   int
	Time   time.Time
}

type chat struct {
	kind    ChatKind
	p2pUser string
	msgs    []string
}

type record struct {
	m        Message // Children nil; UpperMessageID set
	seq      uint64
	children []string
}

type tokenState struct {
	expires time.Time
	valid   bool
}

type uuidEntry struct {
	messageID string
	at        time.Time
}

// Sim is a simulated Feishu open platform. Create it with New and serve
// Handler; all methods are safe for concurrent use.
type Sim struct {
	opts Options
	now  func() time.Time

	mu        sync.Mutex
	users     map[string]string // open_id -> name
	chats     map[string]*chat
	msgs      map[string]*record
	msgSeq    uint64
	tokens    map[string]*tokenState
	tokenSeq  uint64
	sent      []SentMessage
	uploads   []Upload
	uploadSeq uint64
	uuids     map[string]uuidEntry
	reactions []*Reaction
	reactSeq  uint64
	calls     []Call
	faults    map[string][]Fault
	// holds keep requests waiting (see Hold); they have a lock of their own.
	holds      holds
	oneLevel   map[string]bool
	rateLimit  bool
	sendTimes  map[string][]time.Time
	batchSizes []int
	eventSeq   uint64
	threadSeq  uint64
	logSeq     uint64

	lc *longConns

	cards          map[string]*cardEntity
	cardOrder      []string
	cardSeq        uint64
	cardKitRefused bool
}

// New returns a simulator with no users, chats or messages.
func New(opts Options) *Sim {
	def := func(p *string, v string) {
		if *p == "" {
			*p = v
		}
	}
	def(&opts.AppID, DefaultAppID)
	def(&opts.AppSecret, DefaultAppSecret)
	def(&opts.BotOpenID, DefaultBotOpenID)
	def(&opts.BotName, DefaultBotName)
	def(&opts.TenantKey, DefaultTenantKey)
	def(&opts.VerificationToken, DefaultVerificationToken)
	if opts.TokenTTL <= 0 {
		opts.TokenTTL = DefaultTokenTTL
	}
	if opts.MaxCalls == 0 {
		opts.MaxCalls = DefaultMaxCalls
	}
	now := opts.Now
	if now == nil {
		now = time.Now
	}
	return &Sim{
		opts:      opts,
		now:       now,
		users:     map[string]string{},
		chats:     map[string]*chat{},
		msgs:      map[string]*record{},
		tokens:    map[string]*tokenState{},
		uuids:     map[string]uuidEntry{},
		faults:    map[string][]Fault{},
		oneLevel:  map[string]bool{},
		sendTimes: map[string][]time.Time{},
		lc:        newLongConns(),
	}
}

// Options returns the simulator's options with defaults filled in.
func (s *Sim) Options() Options { return s.opts }

// AddUser adds a user, or renames one: basic_batch reports the name.
func (s *Sim) AddUser(openID, name string) error {
	if openID == "" {
		return errors.New("feishusim: add user: empty open_id")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.users[openID] = name
	return nil
}

// AddChat adds a chat the bot is in, or changes a known chat's kind.
func (s *Sim) AddChat(chatID string, kind ChatKind) error {
	if chatID == "" {
		return errors.New("feishusim: add chat: empty chat_id")
	}
	switch kind {
	case ChatP2P, ChatGroup, ChatTopicGroup:
	default:
		return fmt.Errorf("feishusim: add chat %s: unknown kind %q", chatID, kind)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if c, ok := s.chats[chatID]; ok {
		c.kind = kind
		return nil
	}
	s.chats[chatID] = &chat{kind: kind}
	return nil
}

// AddP2PChat adds the bot's private chat with the user openID: messages
// sent with receive_id_type=open_id to that user land in it, and its
// messages default to that sender.
func (s *Sim) AddP2PChat(chatID, openID string) error {
	if chatID == "" || openID == "" {
		return fmt.Errorf("feishusim: add p2p chat %q with %q: empty id", chatID, openID)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if c, ok := s.chats[chatID]; ok {
		c.kind, c.p2pUser = ChatP2P, openID
		return nil
	}
	s.chats[chatID] = &chat{kind: ChatP2P, p2pUser: openID}
	return nil
}

// AddMessage stores m and its children (all or nothing) and returns its
// message_id. A top-level message needs a known chat; ids must be new.
func (s *Sim) AddMessage(m Message) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.addMessageLocked(m)
}

func (s *Sim) addMessageLocked(m Message) (string, error) {
	c, ok := s.chats[m.ChatID]
	if !ok {
		return "", fmt.Errorf("feishusim: add message %s: unknown chat %q", m.ID, m.ChatID)
	}
	if m.SenderID == "" && c.kind == ChatP2P {
		m.SenderID = c.p2pUser
	}
	// Check the whole tree before storing any of it.
	seen := map[string]bool{}
	if err := s.checkTree(&m, seen, 0); err != nil {
		return "", err
	}
	now := s.now()
	id := s.storeTree(m, "", now)
	c.msgs = append(c.msgs, id)
	return id, nil
}

// maxTreeDepth bounds merge_forward nesting in AddMessage, so a runaway
// structure is an error rather than a stack overflow.
const maxTreeDepth = 64

func (s *Sim) checkTree(m *Message, seen map[string]bool, depth int) error {
	if depth > maxTreeDepth {
		return fmt.Errorf("feishusim: add message: merge_forward nested deeper than %d", maxTreeDepth)
	}
	if m.ID == "" {
		m.ID = s.newMessageIDLocked(seen)
	}
	if _, dup := s.msgs[m.ID]; dup || seen[m.ID] {
		return fmt.Errorf("feishusim: add message: duplicate message_id %q", m.ID)
	}
	seen[m.ID] = true
	if m.MsgType == "" {
		m.MsgType = "text"
	}
	if m.SenderID == "" {
		return fmt.Errorf("feishusim: add message %s: no sender", m.ID)
	}
	if len(m.Children) > 0 && m.MsgType != "merge_forward" {
		return fmt.Errorf("feishusim: add message %s: children on a %s message", m.ID, m.MsgType)
	}
	for i := range m.Children {
		if err := s.checkTree(&m.Children[i], seen, depth+1); err != nil {
			return err
		}
	}
	return nil
}

func (s *Sim) storeTree(m Message, upper string, now time.Time) string {
	if m.SenderType == "" {
		m.SenderType = SenderUser
		if isAppID(m.SenderID) {
			m.SenderType = SenderApp
		}
	}
	if m.CreateTime.IsZero() {
		m.CreateTime = now
	}
	if m.UpdateTime.IsZero() {
		m.UpdateTime = m.CreateTime
	}
	m.UpperMessageID = upper
	if upper != "" {
		m.ChatID = ""
	}
	m.Mentions = slices.Clone(m.Mentions)
	if m.Resources != nil {
		res := make(map[string][]byte, len(m.Resources))
		for k, v := range m.Resources {
			res[k] = slices.Clone(v)
		}
		m.Resources = res
	}
	children := m.Children
	m.Children = nil
	s.msgSeq++
	r := &record{m: m, seq: s.msgSeq}
	s.msgs[m.ID] = r
	for _, ch := range children {
		r.children = append(r.children, s.storeTree(ch, m.ID, now))
	}
	return m.ID
}

func (s *Sim) newMessageIDLocked(taken map[string]bool) string {
	for {
		s.msgSeq++
		id := fmt.Sprintf("om_sim%026x", s.msgSeq)
		if _, dup := s.msgs[id]; !dup && !taken[id] {
			return id
		}
	}
}

// Message returns a stored message with its children, and whether it is
// known.
func (s *Sim) Message(id string) (Message, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.msgs[id]; !ok {
		return Message{}, false
	}
	return s.treeLocked(id, 0), true
}

func (s *Sim) treeLocked(id string, depth int) Message {
	r := s.msgs[id]
	m := r.m
	m.Mentions = slices.Clone(m.Mentions)
	if m.Resources != nil {
		res := make(map[string][]byte, len(m.Resources))
		for k, v := range m.Resources {
			res[k] = slices.Clone(v)
		}
		m.Resources = res
	}
	if depth < maxTreeDepth {
		for _, c := range r.children {
			m.Children = append(m.Children, s.treeLocked(c, depth+1))
		}
	}
	return m
}

// Recall marks a stored message as recalled (deleted: true).
func (s *Sim) Recall(id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.msgs[id]
	if !ok {
		return fmt.Errorf("feishusim: recall: unknown message %q", id)
	}
	r.m.Deleted = true
	return nil
}

// OneLevel makes GET on the merge_forward containerID answer with the
// container and its direct children only, so each nested merge_forward
// needs a GET of its own (the fallback path of a reader).
func (s *Sim) OneLevel(containerID string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.oneLevel[containerID] = true
}

// SetSendRateLimit switches the per-chat send limit on or off: with it
// on, a sixth create or reply to one chat within a second fails with
// 230020, as the platform's 5 QPS per chat limit does.
func (s *Sim) SetSendRateLimit(on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rateLimit = on
	clear(s.sendTimes)
}

// InvalidateTokens makes every tenant token issued so far invalid: calls
// carrying one fail with 99991663 until the client fetches a new token.
func (s *Sim) InvalidateTokens() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, t := range s.tokens {
		t.valid = false
	}
}

// TokensIssued is how many tenant tokens the simulator has handed out.
func (s *Sim) TokensIssued() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return int(s.tokenSeq)
}

// Sent returns the messages the bot sent, oldest first.
func (s *Sim) Sent() []SentMessage {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.sent)
}

// Reactions returns the reactions the bot added, oldest first, removed
// ones included.
func (s *Sim) Reactions() []Reaction {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Reaction, len(s.reactions))
	for i, r := range s.reactions {
		out[i] = *r
	}
	return out
}

// Calls returns the recorded requests to path (the URL path, no query),
// oldest first; an empty path returns all of them.
func (s *Sim) Calls(path string) []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Call
	for _, c := range s.calls {
		if path == "" || c.Path == path {
			c.Body = slices.Clone(c.Body)
			out = append(out, c)
		}
	}
	return out
}

// BasicBatchSizes returns the number of ids in each basic_batch request
// the simulator received, rejected ones included.
func (s *Sim) BasicBatchSizes() []int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.batchSizes)
}

func isAppID(id string) bool { return len(id) > 4 && id[:4] == "cli_" }

// derivedID is a stable stand-in for ids the simulator does not store
// (union_id, user_id), derived from an open_id.
func derivedID(kind, openID string, n int) string {
	sum := sha256.Sum256([]byte(kind + ":" + openID))
	return hex.EncodeToString(sum[:])[:n]
}

// UnionID is the union_id the simulator reports for openID.
func UnionID(openID string) string { return "on_" + derivedID("union", openID, 32) }

// UserID is the user_id the simulator reports for openID.
func UserID(openID string) string { return derivedID("user", openID, 8) }

func ms(t time.Time) string { return strconv.FormatInt(t.UnixMilli(), 10) }
