// Package msg is pincer's channel-neutral domain model: the messages that
// channels decode, the batches the pipeline hands to the engine and the
// outbound payloads the engine hands back. It imports nothing of pincer's and
// no SDK, so every other package can depend on it.
package msg

import (
	"fmt"
	"strings"
	"time"
)

// ChannelID names a channel implementation ("onebot", "feishu", "webchat").
type ChannelID string

// AccountID names one configured account of a channel; "default" when the
// channel has only its top-level account.
type AccountID string

// DefaultAccount is the account id of a channel's top-level settings.
const DefaultAccount AccountID = "default"

// MessageID is a platform message id, kept as a string because platforms
// disagree on its type (OneBot sends int32 or int64, Feishu "om_…").
type MessageID string

// UserID is a platform user id (QQ number, Feishu open_id, web chat browser id).
type UserID string

// ForwardID identifies a merged-forward container that can be fetched.
type ForwardID string

// PeerKind tells a direct (one-to-one) chat from a group chat.
type PeerKind string

// Peer kinds.
const (
	Direct PeerKind = "direct"
	Group  PeerKind = "group"
)

// Peer is the conversation a message belongs to: a group, or the other party
// of a direct chat.
type Peer struct {
	Kind PeerKind
	ID   string
}

// String renders the peer as "group:<id>" or "direct:<id>", the form used in
// logs, allow lists and buffer keys.
func (p Peer) String() string { return string(p.Kind) + ":" + p.ID }

// ParsePeer parses the form produced by Peer.String. The kind "private" is
// accepted as a synonym of "direct", as QQ users write it.
func ParsePeer(s string) (Peer, error) {
	kind, id, ok := strings.Cut(s, ":")
	if !ok || id == "" {
		return Peer{}, fmt.Errorf("peer %q: want <kind>:<id>", s)
	}
	switch strings.ToLower(kind) {
	case "group":
		return Peer{Kind: Group, ID: id}, nil
	case "direct", "private":
		return Peer{Kind: Direct, ID: id}, nil
	}
	return Peer{}, fmt.Errorf("peer %q: unknown kind %q", s, kind)
}

// Sender is who wrote a message. Name is the display name as the platform
// gave it; renderers sanitize it before an agent sees it.
type Sender struct {
	ID    UserID
	Name  string `json:",omitzero"`
	IsBot bool   `json:",omitzero"`
}

// Message is one inbound chat message, normalized by its channel adapter.
// Its JSON (the log, buffers and journal keep it so) leaves out the fields
// it does not use.
type Message struct {
	ID      MessageID
	Channel ChannelID
	Account AccountID
	Peer    Peer
	Sender  Sender
	Time    time.Time
	// Segments is the structured content, in order.
	Segments []Segment `json:",omitzero"`
	// Text is the rendered text of Segments with the channel's placeholders
	// (for example "[图片]"); it is what buffers measure and agents read.
	Text string `json:",omitzero"`
	// Mentions lists the users mentioned with a real mention (never @all).
	Mentions []UserID `json:",omitzero"`
	// AtAll reports an @all / @全体成员 mention. It never counts as a mention
	// of the bot.
	AtAll bool `json:",omitzero"`
	// ReplyTo is the id of the quoted message, if any.
	ReplyTo MessageID `json:",omitzero"`
	// ReplyToSender is the quoted message's author when the platform says
	// so (QQ inserts an @ of them after the quote); empty when unknown.
	ReplyToSender UserID `json:",omitzero"`
	// ForwardIDs lists merged-forward containers carried by the message.
	ForwardIDs []ForwardID `json:",omitzero"`
	// Deferred lists content the channel fills in before a turn reads the
	// message, by references of its own (Feishu: the card as its sender
	// wrote it, which events leave out).
	Deferred []string `json:",omitzero"`
	// Recalled marks a message its sender took back (set when a turn reads
	// it): a batch of nothing else is not answered.
	Recalled bool `json:",omitzero"`
}

// Incomplete reports whether m carries what its channel completes before a
// turn reads it: merged forwards to expand, deferred content.
func (m Message) Incomplete() bool { return len(m.ForwardIDs) > 0 || len(m.Deferred) > 0 }

// Mentioned reports whether user is among the real mentions of m.
func (m *Message) Mentioned(user UserID) bool {
	if user == "" {
		return false
	}
	for _, u := range m.Mentions {
		if u == user {
			return true
		}
	}
	return false
}

// HasImage reports whether the message carries at least one image.
func (m *Message) HasImage() bool {
	for _, s := range m.Segments {
		if s.Kind == SegImage {
			return true
		}
	}
	return false
}
