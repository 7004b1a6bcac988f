package msg

// MediaKind classifies outbound media so a channel picks the right upload.
type MediaKind string

// Media kinds.
const (
	MediaImage MediaKind = "image"
	MediaAudio MediaKind = "audio"
	MediaVideo MediaKind = "video"
	MediaFile  MediaKind = "file"
)

// Media is one outbound attachment, by URL or local path.
type Media struct {
	Kind MediaKind
	URL  string
	Name string
}

// Outbound is one reply payload for a channel to deliver.
type Outbound struct {
	// ID identifies the payload for delivery: the same id is delivered at
	// most once ("<turn key>#<n>" for a turn's replies); empty for none.
	ID      string `json:",omitempty"`
	Account AccountID
	Peer    Peer
	Text    string
	Media   []Media
	// ReplyTo quotes this message when the channel supports quoting.
	ReplyTo MessageID
	// Answers is the inbound message the payload answers, set by the
	// channel's replier, so that what its delivery waits for (a chat's send
	// gap) shows in that message's trace; empty for payloads that answer
	// none (operator sends, heartbeats).
	Answers MessageID `json:",omitempty"`
	// IsError marks an error notice; channels never convert mentions in it.
	IsError bool
	// NoMentions forbids turning @names into real mentions: digests and
	// summaries repeat chat text that must not ping anyone.
	NoMentions bool
	// Mentionable lists the people the agent was shown (the senders of the
	// batch and of its history), oldest first: only they may be mentioned
	// by name. Nil means the payload answers no conversation (an operator
	// send, a heartbeat): no mention is rewritten at all.
	Mentionable []Sender
	// IsReasoning marks model reasoning; most channels suppress it.
	IsReasoning bool
	// ChannelData carries channel-specific options the engine passes through
	// without reading.
	ChannelData map[string]any
}

// Empty reports whether there is nothing to deliver.
func (o *Outbound) Empty() bool {
	for _, r := range o.Text {
		if r != ' ' && r != '\t' && r != '\n' && r != '\r' {
			return false
		}
	}
	return len(o.Media) == 0
}
