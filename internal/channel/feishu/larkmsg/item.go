package larkmsg

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
)

// MergeForwardText is the fixed content Feishu gives a merged forward in
// events, in the history list and as the container of a GET: the
// children are not in it.
const MergeForwardText = "Merged and Forwarded Message"

// ExcerptPrefix starts every excerpt of a merged forward (see Expander):
// it tells a forward expanded from its placeholder.
const ExcerptPrefix = "【合并转发"

// Item is one message as the GET (/open-apis/im/v1/messages/:id) and list
// (/open-apis/im/v1/messages) APIs return it.
type Item struct {
	MessageID string `json:"message_id"`
	RootID    string `json:"root_id,omitempty"`
	ParentID  string `json:"parent_id,omitempty"`
	ThreadID  string `json:"thread_id,omitempty"`
	MsgType   string `json:"msg_type"`
	// CreateTime is the creation time in milliseconds since the epoch, as
	// the API sends it (a string; a number is accepted too).
	CreateTime string `json:"create_time"`
	// Deleted is set on recalled messages, whose content is not theirs.
	Deleted bool   `json:"deleted"`
	ChatID  string `json:"chat_id,omitempty"`
	Sender  Sender `json:"sender"`
	Body    Body   `json:"body"`
	// Mentions are the users the content's @_user_N keys stand for.
	Mentions []Mention `json:"mentions,omitempty"`
	// UpperMessageID is, for a child of a merged forward, the id of the
	// forward directly holding it; empty elsewhere.
	UpperMessageID string `json:"upper_message_id,omitempty"`
}

// Sender is who sent an Item.
type Sender struct {
	// ID is an open_id for users (IDType "open_id") and an app_id for bots
	// (IDType "app_id").
	ID     string `json:"id"`
	IDType string `json:"id_type"`
	// SenderType is "user", "app", "anonymous" or "unknown".
	SenderType string `json:"sender_type"`
}

// Body holds an Item's content.
type Body struct {
	// Content is the message content, a JSON document encoded as a string
	// whose shape depends on the message type (the container of a merged
	// forward may hold the bare MergeForwardText instead). When the API
	// sends a JSON value other than a string, Content is that value's text.
	Content string `json:"content"`
}

// Mention is a user a message mentions: the content writes Key
// (@_user_N) where the user is mentioned.
type Mention struct {
	Key string `json:"key"`
	// ID is the user's id, an open_id when IDType is "open_id". Decoding
	// also accepts the event shape, where id is an object of open_id,
	// union_id and user_id: the open_id is taken when present.
	ID     string `json:"id"`
	IDType string `json:"id_type,omitempty"`
	Name   string `json:"name"`
}

// Page is a decoded answer of the GET or list API.
type Page struct {
	// Items are the page's messages; nil when it has none.
	Items []Item
	// HasMore and PageToken continue a list; GET answers leave them empty.
	HasMore   bool
	PageToken string
}

// APIError is a Feishu business error: an answer whose code is not 0.
// Codes that matter when reading messages: 230002 (the bot is not in the
// chat), 230027 (a permission is missing), 230050 (the message is
// invisible to the caller), 230110 (the message was deleted).
type APIError struct {
	Code int
	Msg  string
}

// Error implements error.
func (e *APIError) Error() string {
	if e.Msg == "" {
		return fmt.Sprintf("feishu: code %d", e.Code)
	}
	return fmt.Sprintf("feishu: code %d: %s", e.Code, e.Msg)
}

// DecodeItems decodes the {code, msg, data: {items, has_more,
// page_token}} answer of the message GET or list API. A code other than 0
// is returned as an *APIError; a body that is not a JSON object as a
// decoding error. Decoding is lenient: items that are not objects are
// skipped, numbers are accepted where strings are expected and the other
// way round, and a missing data holds no items.
func DecodeItems(raw []byte) (Page, error) {
	var env struct {
		Code flexString      `json:"code"`
		Msg  flexString      `json:"msg"`
		Data json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(raw, &env); err != nil {
		return Page{}, fmt.Errorf("larkmsg: decode answer: %w", err)
	}
	if env.Code != "" && env.Code != "0" {
		code, err := strconv.Atoi(string(env.Code))
		if err != nil {
			return Page{}, fmt.Errorf("larkmsg: decode answer: code %q is not a number", string(env.Code))
		}
		return Page{}, &APIError{Code: code, Msg: string(env.Msg)}
	}
	var data struct {
		Items     json.RawMessage `json:"items"`
		HasMore   flexBool        `json:"has_more"`
		PageToken flexString      `json:"page_token"`
	}
	if !isObject(env.Data) || json.Unmarshal(env.Data, &data) != nil {
		return Page{}, nil
	}
	p := Page{HasMore: bool(data.HasMore), PageToken: string(data.PageToken)}
	var list []json.RawMessage
	if json.Unmarshal(data.Items, &list) != nil {
		return p, nil
	}
	for _, raw := range list {
		if !isObject(raw) {
			continue
		}
		var it Item
		if json.Unmarshal(raw, &it) == nil {
			p.Items = append(p.Items, it)
		}
	}
	return p, nil
}

// UnmarshalJSON decodes an item leniently: a field of an unexpected JSON
// kind is left empty instead of failing the item.
func (it *Item) UnmarshalJSON(b []byte) error {
	var w struct {
		MessageID      flexString      `json:"message_id"`
		RootID         flexString      `json:"root_id"`
		ParentID       flexString      `json:"parent_id"`
		ThreadID       flexString      `json:"thread_id"`
		MsgType        flexString      `json:"msg_type"`
		CreateTime     flexString      `json:"create_time"`
		Deleted        flexBool        `json:"deleted"`
		ChatID         flexString      `json:"chat_id"`
		Sender         json.RawMessage `json:"sender"`
		Body           json.RawMessage `json:"body"`
		Mentions       json.RawMessage `json:"mentions"`
		UpperMessageID flexString      `json:"upper_message_id"`
	}
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	*it = Item{
		MessageID:      string(w.MessageID),
		RootID:         string(w.RootID),
		ParentID:       string(w.ParentID),
		ThreadID:       string(w.ThreadID),
		MsgType:        string(w.MsgType),
		CreateTime:     string(w.CreateTime),
		Deleted:        bool(w.Deleted),
		ChatID:         string(w.ChatID),
		UpperMessageID: string(w.UpperMessageID),
	}
	if isObject(w.Sender) {
		var s struct {
			ID         flexString `json:"id"`
			IDType     flexString `json:"id_type"`
			SenderType flexString `json:"sender_type"`
		}
		if json.Unmarshal(w.Sender, &s) == nil {
			it.Sender = Sender{ID: string(s.ID), IDType: string(s.IDType), SenderType: string(s.SenderType)}
		}
	}
	if isObject(w.Body) {
		_ = json.Unmarshal(w.Body, &it.Body)
	}
	var mentions []json.RawMessage
	if json.Unmarshal(w.Mentions, &mentions) == nil {
		for _, raw := range mentions {
			var m Mention
			if isObject(raw) && json.Unmarshal(raw, &m) == nil {
				it.Mentions = append(it.Mentions, m)
			}
		}
	}
	return nil
}

// UnmarshalJSON takes content as a string, or the text of any other JSON
// value.
func (b *Body) UnmarshalJSON(data []byte) error {
	var w struct {
		Content json.RawMessage `json:"content"`
	}
	if err := json.Unmarshal(data, &w); err != nil {
		return err
	}
	b.Content = ""
	raw := bytes.TrimSpace(w.Content)
	switch {
	case len(raw) == 0 || string(raw) == "null":
	case raw[0] == '"':
		_ = json.Unmarshal(raw, &b.Content)
	default:
		b.Content = string(raw)
	}
	return nil
}

// UnmarshalJSON accepts id as a string (GET and list answers) or as the
// object of events ({open_id, union_id, user_id}).
func (m *Mention) UnmarshalJSON(data []byte) error {
	var w struct {
		Key    flexString      `json:"key"`
		ID     json.RawMessage `json:"id"`
		IDType flexString      `json:"id_type"`
		Name   flexString      `json:"name"`
	}
	if err := json.Unmarshal(data, &w); err != nil {
		return err
	}
	*m = Mention{Key: string(w.Key), IDType: string(w.IDType), Name: string(w.Name)}
	if isObject(w.ID) {
		var ids struct {
			OpenID  flexString `json:"open_id"`
			UserID  flexString `json:"user_id"`
			UnionID flexString `json:"union_id"`
		}
		_ = json.Unmarshal(w.ID, &ids)
		switch {
		case ids.OpenID != "":
			m.ID, m.IDType = string(ids.OpenID), "open_id"
		case ids.UserID != "":
			m.ID, m.IDType = string(ids.UserID), "user_id"
		case ids.UnionID != "":
			m.ID, m.IDType = string(ids.UnionID), "union_id"
		}
		return nil
	}
	var id flexString
	_ = json.Unmarshal(w.ID, &id)
	m.ID = string(id)
	return nil
}

// flexString decodes a JSON string, or the literal of a number or
// boolean; any other value leaves it empty.
type flexString string

func (s *flexString) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	*s = ""
	if len(b) == 0 {
		return nil
	}
	switch c := b[0]; {
	case c == '"':
		var v string
		if json.Unmarshal(b, &v) == nil {
			*s = flexString(v)
		}
	case c == '-' || (c >= '0' && c <= '9') || c == 't' || c == 'f':
		*s = flexString(b)
	}
	return nil
}

// flexBool decodes true, false, "true" or "false"; anything else is false.
type flexBool bool

func (v *flexBool) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	*v = string(b) == "true" || string(b) == `"true"`
	return nil
}

func isObject(raw []byte) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) > 0 && raw[0] == '{'
}
