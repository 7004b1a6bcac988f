package wire

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"
	"time"

	"github.com/pincerbot/pincer/internal/msg"
)

// maxInlineDepth bounds how deep inline forward content is decoded; the
// quote resolver applies the user's own, smaller budgets on top.
const maxInlineDepth = 8

// ForwardMessages decodes the messages of a merged forward in any of the
// shapes implementations use: a get_forward_msg answer whose nodes are
// under messages, message, nodes or nodeList, or a bare node array (the
// inline content NapCat puts in a forward segment). Each node may be a
// spec node ({type:"node", data:{user_id, nickname, content}}), a
// go-cqhttp/LLOneBot node ({sender, time, content}) or a full message
// event (NapCat, SnowLuma). A go-cqhttp node whose content is itself a
// node list becomes a message holding one forward segment with those
// messages inline. Nodes that cannot be read are skipped.
func ForwardMessages(raw json.RawMessage, self ID) []msg.Message {
	return forwardMessages(raw, 0, self)
}

func forwardMessages(raw json.RawMessage, depth int, self ID) []msg.Message {
	if depth > maxInlineDepth {
		return nil
	}
	nodes := nodeList(raw)
	out := make([]msg.Message, 0, len(nodes))
	for _, n := range nodes {
		if m, ok := forwardNode(n, depth, self); ok {
			out = append(out, m)
		}
	}
	return out
}

// nodeList finds the node array of an answer or takes raw as one.
func nodeList(raw json.RawMessage) []json.RawMessage {
	raw = bytes.TrimSpace(raw)
	var list []json.RawMessage
	if len(raw) > 0 && raw[0] == '[' {
		_ = json.Unmarshal(raw, &list)
		return list
	}
	var container map[string]json.RawMessage
	if json.Unmarshal(raw, &container) != nil {
		return nil
	}
	for _, key := range []string{"messages", "message", "nodes", "nodeList"} {
		if v, ok := container[key]; ok && json.Unmarshal(v, &list) == nil && list != nil {
			return list
		}
	}
	return nil
}

// node is the union of the three node shapes; every field is optional.
type node struct {
	Type       string          `json:"type"`
	Data       json.RawMessage `json:"data"`
	Sender     json.RawMessage `json:"sender"`
	UserID     json.RawMessage `json:"user_id"`
	Time       json.RawMessage `json:"time"`
	MessageID  json.RawMessage `json:"message_id"`
	Message    json.RawMessage `json:"message"`
	Content    json.RawMessage `json:"content"`
	RawMessage string          `json:"raw_message"`
}

type nodeData struct {
	UserID   json.RawMessage `json:"user_id"`
	Uin      json.RawMessage `json:"uin"`
	Nickname string          `json:"nickname"`
	Name     string          `json:"name"`
	Content  json.RawMessage `json:"content"`
	Time     json.RawMessage `json:"time"`
}

// ForwardNode decodes one message leniently, as a node of a merged
// forward is read (see ForwardMessages): a get_msg answer and an entry of
// a history answer are read this way too. Fields that are missing or
// mis-shaped stay unknown where they can; false when raw cannot be read
// as a node at all.
func ForwardNode(raw json.RawMessage, self ID) (msg.Message, bool) {
	return forwardNode(raw, 0, self)
}

func forwardNode(raw json.RawMessage, depth int, self ID) (msg.Message, bool) {
	var n node
	if json.Unmarshal(raw, &n) != nil {
		return msg.Message{}, false
	}
	var d nodeData
	if len(n.Data) > 0 {
		_ = json.Unmarshal(n.Data, &d) // a mis-shaped data object leaves the fields unknown
	}
	var sender Sender
	if len(n.Sender) > 0 && json.Unmarshal(n.Sender, &sender) != nil {
		sender = Sender{}
	}
	if sender.UserID == 0 {
		sender.UserID = LenientID(n.UserID)
	}
	if sender.UserID == 0 {
		sender.UserID = LenientID(d.UserID)
	}
	if sender.UserID == 0 {
		sender.UserID = LenientID(d.Uin)
	}
	if sender.Nickname == "" {
		sender.Nickname = d.Nickname
	}
	if sender.Nickname == "" {
		sender.Nickname = d.Name
	}
	m := msg.Message{
		Channel: ChannelID,
		ID:      msg.MessageID(nonZero(LenientID(n.MessageID))),
		Sender:  msg.Sender{Name: sender.displayName(0)},
	}
	if sender.UserID != 0 {
		m.Sender.ID = msg.UserID(sender.UserID.String())
	}
	if sender.UserID == 0 && sender.Card == "" && sender.Nickname == "" {
		m.Sender.Name = ""
	}
	if t := LenientID(n.Time); t > 0 {
		m.Time = time.Unix(int64(t), 0)
	} else if t := LenientID(d.Time); t > 0 {
		m.Time = time.Unix(int64(t), 0)
	}
	content := n.Message
	for _, alt := range []json.RawMessage{n.Content, d.Content} {
		if len(bytes.TrimSpace(content)) == 0 || bytes.Equal(bytes.TrimSpace(content), []byte("null")) {
			content = alt
		}
	}
	if isNodeList(content) {
		// go-cqhttp: a node whose only element is a forward carries the
		// nested nodes as its content, with no id; it gets one made up
		// from that content, so it is expanded like any other forward.
		id := inlineForwardID(content)
		m.Segments = []msg.Segment{{Kind: msg.SegForward, ID: string(id), Forward: forwardMessages(content, depth+1, self)}}
		m.ForwardIDs = []msg.ForwardID{id}
		m.Text = placeholderForward
		return m, true
	}
	segs, err := parseMessage(content, false)
	if err != nil || (len(segs) == 0 && n.RawMessage != "") {
		segs = parseCQ(n.RawMessage)
	}
	fill(&m, segs, depth, self)
	return m, true
}

// inlineForwardPrefix starts the ids pincer gives forwards that arrive
// inline without an id of their own (go-cqhttp's nested node lists). No
// implementation's resId or message id contains a colon, so these never
// collide with a real id, and they are never sent to get_forward_msg.
const inlineForwardPrefix = "inline:"

// IsInlineForward reports whether id is one pincer made up for inline
// content.
func IsInlineForward(id msg.ForwardID) bool {
	return strings.HasPrefix(string(id), inlineForwardPrefix)
}

// inlineForwardID is the id of inline forward content: the prefix and a
// short hash of the content with insignificant whitespace removed, so the
// same content always gets the same id (and the visited set of a quote
// resolution sees a repeat as one).
func inlineForwardID(content json.RawMessage) msg.ForwardID {
	var compact bytes.Buffer
	if json.Compact(&compact, content) != nil {
		compact.Reset()
		compact.Write(content)
	}
	sum := sha256.Sum256(compact.Bytes())
	return msg.ForwardID(inlineForwardPrefix + hex.EncodeToString(sum[:8]))
}

func nonZero(id ID) string {
	if id == 0 {
		return ""
	}
	return id.String()
}

// isNodeList tells a list of forward nodes from a list of segments.
func isNodeList(raw json.RawMessage) bool {
	var list []map[string]json.RawMessage
	if json.Unmarshal(raw, &list) != nil || len(list) == 0 {
		return false
	}
	first := list[0]
	if _, ok := first["sender"]; ok {
		return true
	}
	var typ string
	_ = json.Unmarshal(first["type"], &typ)
	return typ == "node"
}
