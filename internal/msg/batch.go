package msg

// BatchKind tells why the engine is asked for a turn.
type BatchKind string

// Batch kinds.
const (
	// Realtime is a burst of messages that triggered the bot.
	Realtime BatchKind = "realtime"
	// Digest is a timed digest of a chat's recent messages.
	Digest BatchKind = "digest"
	// Summary answers a /summary command over fetched history.
	Summary BatchKind = "summary"
)

// TriggerReason says why a message triggered a realtime batch.
type TriggerReason string

// Trigger reasons. TriggerNone marks a group message that triggered only
// because mentions are not required and no keywords are configured.
const (
	TriggerNone        TriggerReason = ""
	TriggerDirect      TriggerReason = "direct"
	TriggerMention     TriggerReason = "mention"
	TriggerReplyToSelf TriggerReason = "reply-to-self"
	TriggerKeyword     TriggerReason = "keyword"
)

// FlushReason says why a batch was flushed.
type FlushReason string

// Flush reasons.
const (
	FlushQuiet       FlushReason = "quiet"
	FlushMaxWindow   FlushReason = "max-window"
	FlushMaxMessages FlushReason = "max-messages"
	FlushMaxChars    FlushReason = "max-chars"
	FlushImmediate   FlushReason = "immediate"
	FlushShutdown    FlushReason = "shutdown"
	FlushInterval    FlushReason = "interval"
	FlushCommand     FlushReason = "command"
)

// Batch is the unit the pipeline hands to the engine.
type Batch struct {
	Kind BatchKind
	// Messages are the batch's own messages, oldest first.
	Messages []Message
	// History holds context messages taken from the peer's history buffer,
	// oldest first; never any of Messages.
	History []Message
	Trigger TriggerReason
	Flush   FlushReason
}

// First returns the first message of the batch, or nil when it is empty.
func (b *Batch) First() *Message {
	if len(b.Messages) == 0 {
		return nil
	}
	return &b.Messages[0]
}

// Last returns the last message of the batch, or nil when it is empty.
func (b *Batch) Last() *Message {
	if len(b.Messages) == 0 {
		return nil
	}
	return &b.Messages[len(b.Messages)-1]
}
