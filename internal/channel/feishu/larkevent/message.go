package larkevent

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
)

// Chat types of MessageReceive.ChatType.
const (
	ChatTypeP2P        = "p2p"
	ChatTypeGroup      = "group"
	ChatTypeTopicGroup = "topic_group"
)

// MessageReceive is an im.message.receive_v1 event, flattened.
type MessageReceive struct {
	// The sender: event.sender.sender_id.{open_id,union_id,user_id},
	// sender_type (user, app, anonymous or unknown) and tenant_key. user_id
	// is there only when the app may read employee ids.
	SenderOpenID    string
	SenderUnionID   string
	SenderUserID    string
	SenderType      string
	SenderTenantKey string

	// MessageID is the message's om_ id. Never empty.
	MessageID string
	// RootID, ParentID and ThreadID are set for replies and for messages
	// in topics only.
	RootID   string
	ParentID string
	ThreadID string
	// CreateTime is when the message was sent, in Unix milliseconds.
	CreateTime int64
	// ChatID is the chat's oc_ id. Never empty.
	ChatID string
	// ChatType is ChatTypeP2P, ChatTypeGroup or ChatTypeTopicGroup.
	ChatType string
	// MessageType is the msg_type: text, post, image, interactive,
	// merge_forward and so on. Never empty.
	MessageType string
	// Content is the message content, itself JSON whose shape depends on
	// MessageType, undecoded.
	Content string
	// Mentions are the users and bots the message mentions, in the order
	// the event lists them.
	Mentions []Mention
}

// Mention is one entry of a message's mentions: Key is the placeholder in
// the content ("@_user_1"), Name the display name at sending time.
type Mention struct {
	Key     string
	OpenID  string
	UnionID string
	UserID  string
	Name    string
}

type wireUserID struct {
	OpenID  string `json:"open_id"`
	UnionID string `json:"union_id"`
	UserID  string `json:"user_id"`
}

type wireReceive struct {
	Sender *struct {
		SenderID   wireUserID `json:"sender_id"`
		SenderType string     `json:"sender_type"`
		TenantKey  string     `json:"tenant_key"`
	} `json:"sender"`
	Message *struct {
		MessageID   string          `json:"message_id"`
		RootID      string          `json:"root_id"`
		ParentID    string          `json:"parent_id"`
		ThreadID    string          `json:"thread_id"`
		CreateTime  json.RawMessage `json:"create_time"`
		ChatID      string          `json:"chat_id"`
		ChatType    string          `json:"chat_type"`
		MessageType string          `json:"message_type"`
		Content     string          `json:"content"`
		Mentions    []struct {
			Key  string     `json:"key"`
			ID   wireUserID `json:"id"`
			Name string     `json:"name"`
		} `json:"mentions"`
	} `json:"message"`
}

// DecodeMessageReceive decodes the event of an im.message.receive_v1
// envelope. It is an error when the envelope is of another type, or the
// event lacks the sender, the message, its id, chat id, message type or
// creation time, or has a chat type other than p2p, group and
// topic_group.
func DecodeMessageReceive(ev Envelope) (MessageReceive, error) {
	if ev.EventType != EventMessageReceive {
		return MessageReceive{}, fmt.Errorf("larkevent: decode %s: event %s is %q", EventMessageReceive, ev.EventID, ev.EventType)
	}
	var w wireReceive
	if err := json.Unmarshal(ev.Event, &w); err != nil {
		return MessageReceive{}, fmt.Errorf("larkevent: decode %s: event %s: %w", EventMessageReceive, ev.EventID, err)
	}
	m, err := w.flatten()
	if err != nil {
		return MessageReceive{}, fmt.Errorf("larkevent: decode %s: event %s: %w", EventMessageReceive, ev.EventID, err)
	}
	return m, nil
}

func (w *wireReceive) flatten() (MessageReceive, error) {
	s, msg := w.Sender, w.Message
	switch {
	case s == nil:
		return MessageReceive{}, errors.New("no sender")
	case msg == nil:
		return MessageReceive{}, errors.New("no message")
	case msg.MessageID == "":
		return MessageReceive{}, errors.New("no message_id")
	case msg.ChatID == "":
		return MessageReceive{}, fmt.Errorf("message %s: no chat_id", msg.MessageID)
	case msg.MessageType == "":
		return MessageReceive{}, fmt.Errorf("message %s: no message_type", msg.MessageID)
	}
	switch msg.ChatType {
	case ChatTypeP2P, ChatTypeGroup, ChatTypeTopicGroup:
	default:
		return MessageReceive{}, fmt.Errorf("message %s: chat_type %q", msg.MessageID, msg.ChatType)
	}
	text, ok, err := numberText(msg.CreateTime)
	if err == nil && !ok {
		err = errors.New("absent")
	}
	var created int64
	if err == nil {
		created, err = parseMillis(text)
	}
	if err != nil {
		return MessageReceive{}, fmt.Errorf("message %s: create_time: %w", msg.MessageID, err)
	}
	m := MessageReceive{
		SenderOpenID:    s.SenderID.OpenID,
		SenderUnionID:   s.SenderID.UnionID,
		SenderUserID:    s.SenderID.UserID,
		SenderType:      s.SenderType,
		SenderTenantKey: s.TenantKey,
		MessageID:       msg.MessageID,
		RootID:          msg.RootID,
		ParentID:        msg.ParentID,
		ThreadID:        msg.ThreadID,
		CreateTime:      created,
		ChatID:          msg.ChatID,
		ChatType:        msg.ChatType,
		MessageType:     msg.MessageType,
		Content:         msg.Content,
	}
	if len(msg.Mentions) > 0 {
		m.Mentions = make([]Mention, len(msg.Mentions))
		for i, x := range msg.Mentions {
			m.Mentions[i] = Mention{Key: x.Key, OpenID: x.ID.OpenID, UnionID: x.ID.UnionID, UserID: x.ID.UserID, Name: x.Name}
		}
	}
	return m, nil
}

// MessageRecalled is an im.message.recalled_v1 event: a message was
// withdrawn, and work queued for it can be dropped.
type MessageRecalled struct {
	// MessageID is the recalled message. Never empty.
	MessageID string
	// ChatID is its chat.
	ChatID string
	// RecallTime is when it was recalled, in Unix milliseconds; 0 when the
	// event does not say.
	RecallTime int64
	// RecallType says who recalled it (message_owner, group_owner,
	// group_manager, enterprise_manager), as the event gives it.
	RecallType string
}

type wireRecalled struct {
	MessageID  string          `json:"message_id"`
	ChatID     string          `json:"chat_id"`
	RecallTime json.RawMessage `json:"recall_time"`
	RecallType string          `json:"recall_type"`
}

// DecodeMessageRecalled decodes the event of an im.message.recalled_v1
// envelope. It is an error when the envelope is of another type or the
// event has no message_id.
func DecodeMessageRecalled(ev Envelope) (MessageRecalled, error) {
	if ev.EventType != EventMessageRecalled {
		return MessageRecalled{}, fmt.Errorf("larkevent: decode %s: event %s is %q", EventMessageRecalled, ev.EventID, ev.EventType)
	}
	var w wireRecalled
	if err := json.Unmarshal(ev.Event, &w); err != nil {
		return MessageRecalled{}, fmt.Errorf("larkevent: decode %s: event %s: %w", EventMessageRecalled, ev.EventID, err)
	}
	if w.MessageID == "" {
		return MessageRecalled{}, fmt.Errorf("larkevent: decode %s: event %s: no message_id", EventMessageRecalled, ev.EventID)
	}
	at, err := decodeMillis(w.RecallTime)
	if err != nil {
		return MessageRecalled{}, fmt.Errorf("larkevent: decode %s: event %s: recall_time: %w", EventMessageRecalled, ev.EventID, err)
	}
	return MessageRecalled{MessageID: w.MessageID, ChatID: w.ChatID, RecallTime: at, RecallType: w.RecallType}, nil
}

// contentKeyVersion starts what ContentKey hashes, so that keys of a
// different recipe never equal these.
const contentKeyVersion = "larkevent content key v1"

// ContentKey is the key that recognises a message pushed again under a
// fresh message_id: the lower-case hex SHA-256 (64 characters) of the
// sender's open_id, the chat, the creation time, the SHA-256 of the
// content, the root id and the thread id. Each field is length-prefixed,
// so no two different messages share the input; the key holds none of
// the fields in the clear. Two deliveries of one message have the same
// key; messages that differ in any of those fields have different keys.
func ContentKey(m MessageReceive) string {
	content := sha256.Sum256([]byte(m.Content))
	h := sha256.New()
	writeField(h, contentKeyVersion)
	writeField(h, m.SenderOpenID)
	writeField(h, m.ChatID)
	var created [8]byte
	binary.BigEndian.PutUint64(created[:], uint64(m.CreateTime))
	h.Write(created[:])
	h.Write(content[:])
	writeField(h, m.RootID)
	writeField(h, m.ThreadID)
	var sum [sha256.Size]byte
	return hex.EncodeToString(h.Sum(sum[:0]))
}

func writeField(h hash.Hash, s string) {
	var n [8]byte
	binary.BigEndian.PutUint64(n[:], uint64(len(s)))
	h.Write(n[:])
	h.Write([]byte(s))
}
