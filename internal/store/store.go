// Package store defines pincer's persistence: sessions and their reset
// history, transcripts, the inbound message log and its views, dedup
// keys, buffered messages, the turn journal, the outbox, the ids of the
// messages the bot sent and the model tokens spent per day.
// Implementations live in subpackages and must pass the storetest
// conformance suite.
package store

import (
	"context"
	"errors"
	"time"

	"github.com/pincerbot/pincer/internal/msg"
)

// ErrNotFound is returned when a session or message does not exist.
var ErrNotFound = errors.New("store: not found")

// Store is the persistence every pincer component shares. All methods are
// safe for concurrent use.
type Store interface {
	Sessions
	Transcripts
	InboundLog
	Dedup
	Buffers
	SentLog
	Journal
	Outbox
	TokenUse
	// AdmitTurn claims key for ttl and, when the claim succeeds, records
	// the turn in the journal under key (when turn is not nil), in one
	// step: admitted is false for a key already claimed, and an admitted
	// turn is either finished or resumable, never lost. What consume names
	// is taken out of the receive buffers in the same step, admitted or
	// not, so a batch is either handed on or still buffered, never both.
	AdmitTurn(ctx context.Context, key string, ttl time.Duration, turn []byte, consume Consumed) (admitted bool, err error)
	// Probe writes to the store and reports whether it could: a read-only
	// file, a full disk or a removed directory fail here.
	Probe(ctx context.Context) error
	// Close releases the store.
	Close() error
}

// Session is one conversation with an agent, identified by its key
// (for example "agent:main:webchat:direct:b1").
type Session struct {
	Key     string
	AgentID string
	// ModelOverride is a provider/model ref set by /model; empty for none.
	ModelOverride string
	// Generation counts resets; transcripts belong to one generation.
	Generation int
	// Options are per-session settings made by commands (thinking level,
	// queue mode), by name. Never nil on a session read from a store.
	Options   map[string]string
	CreatedAt time.Time
	UpdatedAt time.Time
}

// Reset records one session reset.
type Reset struct {
	// Generation is the generation the reset started.
	Generation int
	At         time.Time
	Reason     string
}

// Sessions stores sessions.
type Sessions interface {
	// OpenSession returns the session for key, creating it for agentID when
	// it does not exist; created reports which happened.
	OpenSession(ctx context.Context, key, agentID string) (s Session, created bool, err error)
	// OpenWithTranscript is OpenSession that also returns the current
	// generation's turns (none for a new session), read in the same step.
	OpenWithTranscript(ctx context.Context, key, agentID string) (s Session, created bool, turns []Turn, err error)
	// Session returns the session for key or ErrNotFound.
	Session(ctx context.Context, key string) (Session, error)
	// SetModelOverride sets or (with "") clears the session's model.
	SetModelOverride(ctx context.Context, key, model string) error
	// SetSessionOption sets (or with "" removes) one session option.
	SetSessionOption(ctx context.Context, key, name, value string) error
	// ResetSession starts a new generation with an empty transcript and
	// records the reset. Earlier transcripts are kept.
	ResetSession(ctx context.Context, key, reason string) (Session, error)
	// CompactSession replaces the current transcript with a summary turn
	// followed by keep, as a new generation recorded as a "compact" reset;
	// the full transcript stays in the old generation.
	CompactSession(ctx context.Context, key, summary string, keep []Turn) (Session, error)
	// Resets lists the session's resets, oldest first.
	Resets(ctx context.Context, key string) ([]Reset, error)
}

// Role is the author of a transcript turn.
type Role string

// Roles.
const (
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
	RoleTool      Role = "tool"
	// RoleSummary marks a compaction summary that stands for older turns.
	RoleSummary Role = "summary"
)

// ToolCall is one tool invocation requested by the model.
type ToolCall struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	// Arguments is the JSON object the model produced.
	Arguments string `json:"arguments"`
}

// Turn is one transcript entry.
type Turn struct {
	// Seq orders turns within a session generation; assigned on append.
	Seq       int64
	Role      Role
	Text      string
	ToolCalls []ToolCall
	// ToolCallID links a RoleTool result to its call.
	ToolCallID string
	// Partial marks an assistant reply cut short (shutdown, abort, error).
	Partial bool
	// Images are the staged image files (absolute paths) a user turn
	// showed the model.
	Images []string
	At     time.Time
}

// Transcripts stores the ordered turns of each session's current
// generation.
type Transcripts interface {
	// AppendTurn appends t to the session's current generation and returns
	// it with Seq set, and At set to now when it was zero. The session must
	// exist.
	AppendTurn(ctx context.Context, key string, t Turn) (Turn, error)
	// Transcript returns the current generation's turns in order.
	Transcript(ctx context.Context, key string) ([]Turn, error)
}

// TurnPoster is a Transcripts that can append a turn without waiting
// for it: the append is ordered before every later call the same
// goroutine makes, so a Transcript read afterwards has it; its failure
// goes to the store's health and log instead of the caller. The engine
// posts the user's turns this way, so a message reaches the model one
// round trip to the store sooner.
type TurnPoster interface {
	PostTurn(ctx context.Context, key string, t Turn) error
}

// LoggedMessage is an inbound message as kept in the log.
type LoggedMessage struct {
	// Seq numbers the log's messages in the order they were logged.
	Seq     int64
	Message msg.Message
	// Views are the views of the log that took the message.
	Views    Views
	LoggedAt time.Time
	// Pending: the message's content is still to be completed (see
	// InboundLog.LogInboundPending).
	Pending bool
}

// Views is a set of views of the inbound log. A view holds the messages
// logged into it after its chat's mark (see Mark): the history and digest
// buffers are views, so a message they hold costs one log entry, and what
// they drop from their old end needs no write at all.
type Views uint8

// Views of the inbound log.
const (
	ViewHistory Views = 1 << iota
	ViewDigest
)

// Mark moves the view of one chat past a message: the view no longer
// holds it, nor anything logged before it.
type Mark struct {
	Channel msg.ChannelID
	Account msg.AccountID
	Peer    msg.Peer
	View    Views
	Seq     int64
}

// Consumed is what a turn takes out of the receive buffers.
type Consumed struct {
	// Entries are buffered entries (see Buffers), removed.
	Entries []int64
	// Marks move the log's views past the messages taken.
	Marks []Mark
}

// Empty reports whether c takes nothing.
func (c Consumed) Empty() bool { return len(c.Entries) == 0 && len(c.Marks) == 0 }

// InboundLog keeps every accepted inbound message, numbered in the order
// it was logged.
type InboundLog interface {
	// LogInbound appends m to the log, into views, and returns its number.
	// It may return before the entry is written: reads see it, and it is
	// committed within the store's durability bound; a failure to write
	// it is reported by the store's health. A message logged twice is
	// logged twice (readers see it once).
	LogInbound(ctx context.Context, m msg.Message, views Views) (seq int64, err error)
	// LogInboundBuffered is LogInbound that also stores b (m's entry in a
	// realtime window) in the same write: a crash keeps both or neither,
	// so a message in the log is never missing from its window. It
	// returns the log number and the entry's id.
	LogInboundBuffered(ctx context.Context, m msg.Message, views Views, b Buffered) (seq, id int64, err error)
	// LogInboundPending is LogInbound for a message whose content its
	// channel completes later, off the chat's order (a merged forward to
	// expand): the entry is pending (LoggedMessage.Pending) until
	// CompleteInbound rewrites it.
	LogInboundPending(ctx context.Context, m msg.Message, views Views) (seq int64, err error)
	// CompleteInbound rewrites the entry seq of m's chat with m (its
	// content completed, or as it came when completing it failed) and
	// clears its pending mark. Like LogInbound it may return before the
	// write; one a crash loses leaves the entry pending.
	CompleteInbound(ctx context.Context, seq int64, m msg.Message) error
	// RecentInbound returns up to limit most recent messages of a peer,
	// oldest first, each message id once.
	RecentInbound(ctx context.Context, ch msg.ChannelID, acct msg.AccountID, peer msg.Peer, limit int) ([]LoggedMessage, error)
	// FindInbound returns the newest entry of message id among the last
	// within entries of a peer's chat, and whether there is one.
	FindInbound(ctx context.Context, ch msg.ChannelID, acct msg.AccountID, peer msg.Peer, id msg.MessageID, within int) (LoggedMessage, bool, error)
	// HeldInbound returns what view holds in each chat of channel ch and
	// account acct: the last limit messages logged into it after the
	// chat's mark, by chat and then in log order.
	HeldInbound(ctx context.Context, ch msg.ChannelID, acct msg.AccountID, view Views, limit int) ([]LoggedMessage, error)
	// Advance applies marks (a mark never moves a view back).
	Advance(ctx context.Context, marks ...Mark) error
	// PruneInbound deletes, chat by chat, the oldest entries logged before
	// before that no view holds any more (those up to the earliest of the
	// chat's view marks), and reports how many. What a view still holds
	// is kept whatever its age, and so is everything logged after it.
	PruneInbound(ctx context.Context, before time.Time) (int64, error)
}

// Dedup claims keys for a time, so one event is processed once even across
// restarts.
type Dedup interface {
	// ClaimDedup claims key for ttl. It returns false when the key is
	// already claimed and unexpired.
	ClaimDedup(ctx context.Context, key string, ttl time.Duration) (claimed bool, err error)
	// ReleaseDedup gives up a claim whose event was not taken in after all
	// (pincer was too busy and asked the platform to deliver it again).
	ReleaseDedup(ctx context.Context, key string) error
	// PruneDedup deletes expired keys and reports how many.
	PruneDedup(ctx context.Context) (int64, error)
}

// Buffered is a message held by a realtime window, kept so a restart
// loses nothing that was accepted. (The history and digest buffers are
// views of the inbound log, see Views.)
type Buffered struct {
	// ID identifies the entry; assigned by Buffer.
	ID int64
	// Scope names the pipeline ("onebot/default"), Kind the buffer
	// ("realtime"), Key the buffer within it.
	Scope, Kind, Key string
	Message          msg.Message
	// Trigger is why a realtime entry opened its window, if it did.
	Trigger msg.TriggerReason
	At      time.Time
}

// Buffers keeps the receive buffers' entries.
type Buffers interface {
	// Buffer records entries in one step and returns their ids in order.
	// Like LogInbound, it may return before they are written.
	Buffer(ctx context.Context, entries []Buffered) ([]int64, error)
	// Unbuffer removes entries (trimmed out of their buffer); unknown ids
	// are ignored. Like LogInbound, it may return before the removal is
	// written.
	Unbuffer(ctx context.Context, ids []int64) error
	// BufferedEntries returns the entries of scope in the order they were
	// buffered.
	BufferedEntries(ctx context.Context, scope string) ([]Buffered, error)
}

// SentLog remembers the ids of the messages the bot sent, per channel and
// account, so a reply to one of them is recognised after a restart.
// Entries are kept until pruned; the channel decides how long (the QQ
// channel keeps a week, see onebot.SentRetention).
type SentLog interface {
	// RecordSent records ids as sent by the bot on channel ch as account
	// acct, now. Recording an id again refreshes its time.
	RecordSent(ctx context.Context, ch msg.ChannelID, acct msg.AccountID, ids ...msg.MessageID) error
	// WasSent reports whether id is recorded for ch and acct.
	WasSent(ctx context.Context, ch msg.ChannelID, acct msg.AccountID, id msg.MessageID) (bool, error)
	// PruneSent deletes the ids recorded before before, of every channel
	// and account, and reports how many.
	PruneSent(ctx context.Context, before time.Time) (int64, error)
}

// PendingTurn is an admitted turn that has not finished, kept so that a
// restart resumes it.
type PendingTurn struct {
	// Key is the turn's dedup key.
	Key string
	// Turn is the engine's encoding of the turn.
	Turn []byte
	// Attempts counts the times it was resumed.
	Attempts int
	At       time.Time
}

// Journal keeps admitted turns until they finish (see AdmitTurn).
type Journal interface {
	// PendingTurns lists the unfinished turns, oldest first.
	PendingTurns(ctx context.Context) ([]PendingTurn, error)
	// ResumeTurn counts one more attempt at the turn key and returns the
	// count; 0 for a key not in the journal.
	ResumeTurn(ctx context.Context, key string) (int, error)
	// FinishTurn forgets the turns; unknown keys are ignored.
	FinishTurn(ctx context.Context, keys ...string) error
}

// OutboxState is where a reply on its way stands.
type OutboxState string

// Outbox states.
const (
	// OutboxPending: not yet (wholly) confirmed by the platform.
	OutboxPending OutboxState = "pending"
	// OutboxSent: every part was confirmed.
	OutboxSent OutboxState = "sent"
	// OutboxExpired: given up, too old to make sense.
	OutboxExpired OutboxState = "expired"
	// OutboxFailed: the platform refused it for good.
	OutboxFailed OutboxState = "failed"
)

// OutboxEntry is one reply payload on its way to a chat: stored before it
// is sent, so it survives disconnects and restarts, and kept after it is
// sent, so it is never sent twice.
type OutboxEntry struct {
	// ID identifies the payload ("<turn key>#<n>").
	ID      string
	Channel msg.ChannelID
	// Out is the payload as the channel sends it; Out.Account and Out.Peer
	// say where.
	Out msg.Outbound
	// Sent counts the parts (chunks) the platform confirmed.
	Sent     int
	Attempts int
	State    OutboxState
	// LastError is why the last attempt failed.
	LastError string
	Created   time.Time
	Updated   time.Time
}

// Outbox keeps replies until the platform confirmed them.
type Outbox interface {
	// AddOutbox records e as pending unless an entry with its id exists;
	// added reports which.
	AddOutbox(ctx context.Context, e OutboxEntry) (added bool, err error)
	// UpdateOutbox records an entry's progress.
	UpdateOutbox(ctx context.Context, id string, sent, attempts int, state OutboxState, lastErr string) error
	// PendingOutbox lists the pending entries of a channel account, oldest
	// first.
	PendingOutbox(ctx context.Context, ch msg.ChannelID, acct msg.AccountID) ([]OutboxEntry, error)
	// HasOutbox reports whether an entry whose id starts with prefix exists,
	// in any state.
	HasOutbox(ctx context.Context, prefix string) (bool, error)
	// OutboxEntries lists the entries whose id starts with prefix, in any
	// state, oldest first: what a turn's reply had stored ("<turn key>#").
	OutboxEntries(ctx context.Context, prefix string) ([]OutboxEntry, error)
	// PruneOutbox deletes the entries that are no longer pending and were
	// last updated before t.
	PruneOutbox(ctx context.Context, before time.Time) (int64, error)
}

// TokenCount is the tokens one key (a user or a chat, see TokenUse) spent
// on one day.
type TokenCount struct {
	Key    string
	Tokens int64
}

// TokenUse counts the model tokens (input and output) spent per day by
// key: the limits read it to hold turns over a day's budget, /status and
// the dashboard show it. A day is a "2006-01-02" date in the timezone the
// caller counts days in; keys are the caller's.
type TokenUse interface {
	// AddTokens adds n to the count of each key on day. Like LogInbound
	// it may return before it is written: reads see it, and a failure to
	// write it is reported by the store's health.
	AddTokens(ctx context.Context, day string, n int64, keys ...string) error
	// TokensUsed returns the counts of keys on day; a key with none is
	// left out.
	TokensUsed(ctx context.Context, day string, keys ...string) (map[string]int64, error)
	// TopTokenUse returns the limit largest counts of day among the keys
	// starting with prefix, largest first (ties by key).
	TopTokenUse(ctx context.Context, day, prefix string, limit int) ([]TokenCount, error)
	// PruneTokenUse deletes the counts of the days before before and
	// reports how many.
	PruneTokenUse(ctx context.Context, before string) (int64, error)
}
