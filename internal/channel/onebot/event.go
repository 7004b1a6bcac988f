package onebot

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/pincerbot/pincer/internal/msg"
	"github.com/pincerbot/pincer/internal/prompt"
)

// ChannelID is the QQ channel's id.
const ChannelID msg.ChannelID = "onebot"

// PlaceholderGroup is the fake group id NapCat and LLOneBot give messages
// inside merged forwards; it is never a real group.
const PlaceholderGroup ID = 284840486

// Sender is the sender object of a message event.
type Sender struct {
	UserID   ID     `json:"user_id"`
	Nickname string `json:"nickname"`
	Card     string `json:"card"`
	Role     string `json:"role"`
}

// Event is a OneBot event, with the fields of message events.
type Event struct {
	Time        ID              `json:"time"`
	SelfID      ID              `json:"self_id"`
	PostType    string          `json:"post_type"`
	MessageType string          `json:"message_type"`
	SubType     string          `json:"sub_type"`
	MessageID   ID              `json:"message_id"`
	UserID      ID              `json:"user_id"`
	GroupID     ID              `json:"group_id"`
	Message     json.RawMessage `json:"message"`
	RawMessage  string          `json:"raw_message"`
	Sender      Sender          `json:"sender"`
	// MetaEventType is set on meta events (lifecycle, heartbeat).
	MetaEventType string `json:"meta_event_type"`
	// Interval is a heartbeat's announced interval in milliseconds.
	Interval int64 `json:"interval"`

	// rawMessage is the raw_message value, still encoded, of a large
	// frame whose RawMessage was left undecoded: it is read only when the
	// segments are unusable.
	rawMessage json.RawMessage
}

// HeartbeatInterval is the interval a heartbeat event announces, converted
// without overflow (at most MaxHeartbeat); false when ev is not a heartbeat
// or announces no positive interval.
func (ev Event) HeartbeatInterval() (time.Duration, bool) {
	if ev.PostType != "meta_event" || ev.MetaEventType != "heartbeat" || ev.Interval <= 0 {
		return 0, false
	}
	if ev.Interval > MaxHeartbeat.Milliseconds() {
		return MaxHeartbeat, true
	}
	return time.Duration(ev.Interval) * time.Millisecond, true
}

// Reasons a message event does not become a message.
var (
	// ErrNotMessage: the event is a notice, request or meta event.
	ErrNotMessage = errors.New("onebot: not a message event")
	// ErrSelf: the bot's own message (message_sent, or sent by self_id).
	ErrSelf = errors.New("onebot: the bot's own message")
	// ErrPlaceholder: a message of the placeholder group, which only
	// exists inside merged forwards.
	ErrPlaceholder = errors.New("onebot: placeholder group")
)

// DecodeEvent decodes one event frame. The Message of a frame of
// largeFrame bytes or more is a sub-slice of frame, and its RawMessage is
// left empty (ToMessage reads it from frame when it needs it): frame must
// not change while the event is in use.
func DecodeEvent(frame []byte) (Event, error) {
	if len(frame) >= largeFrame {
		p, err := decodeLarge(frame)
		return p.Event, err
	}
	var ev Event
	if err := json.Unmarshal(frame, &ev); err != nil {
		return ev, fmt.Errorf("onebot: event: %w", err)
	}
	return ev, nil
}

// largeFrame is the size from which a frame is decoded without copying
// its message (decodeLarge); smaller ones take the fast decoder.
const largeFrame = 64 << 10

// probe is what a frame is decoded into: an event, or the fields that
// make it an action's answer.
type probe struct {
	Event
	Echo    json.RawMessage `json:"echo"`
	Status  json.RawMessage `json:"status"`
	Retcode json.RawMessage `json:"retcode"`
}

// decodeLarge decodes a frame with encoding/json, which copies no more of
// it than the fields it fills, and leaves message and raw_message encoded
// where they are: an event's Message is a sub-slice of frame, and its
// raw_message is kept for ToMessage to read if it must.
func decodeLarge(frame []byte) (probe, error) {
	var p struct {
		probe
		// These shadow the event's fields of the same names.
		Message    skipped       `json:"message"`
		RawMessage skippedString `json:"raw_message"`
	}
	if err := json.Unmarshal(frame, &p); err != nil {
		return probe{}, fmt.Errorf("onebot: event: %w", err)
	}
	if p.PostType != "" {
		p.Event.Message = member(frame, "message")
		if raw := member(frame, "raw_message"); !bytes.Equal(raw, []byte("null")) {
			p.Event.rawMessage = raw
		}
	}
	return p.probe, nil
}

// skipped takes any JSON value and keeps none of it.
type skipped struct{}

func (skipped) UnmarshalJSON([]byte) error { return nil }

// skippedString takes a JSON string (or null) and keeps none of it;
// anything else is an error, as it is for a string field.
type skippedString struct{}

func (skippedString) UnmarshalJSON(b []byte) error {
	if len(b) > 0 && (b[0] == '"' || b[0] == 'n') {
		return nil
	}
	return errRawMessage
}

var errRawMessage = errors.New("onebot: raw_message is not a string")

// DisplayName is the sender's name as shown to the agent: the group card,
// else the nickname, else the QQ number; sanitized.
func (s Sender) DisplayName(fallback ID) string {
	for _, n := range []string{s.Card, s.Nickname} {
		if name := prompt.Sanitize(n); name != "" {
			return name
		}
	}
	if s.UserID != 0 {
		return s.UserID.String()
	}
	return fallback.String()
}

// Inbound bounds what one inbound message brings to the agent. The zero
// value is the defaults.
type Inbound struct {
	// MaxChars is the most characters of one message's text that reach the
	// agent; the rest is cut and TruncatedMarker appended. DefaultMaxChars
	// when 0.
	MaxChars int
}

// DefaultMaxChars is Inbound.MaxChars when unset; it also bounds the
// messages read back from history, quotes and forwards.
const DefaultMaxChars = 20000

// TruncatedMarker ends the text of a message that was cut.
const TruncatedMarker = "（已截断）"

func (in Inbound) maxChars() int {
	if in.MaxChars <= 0 {
		return DefaultMaxChars
	}
	return in.MaxChars
}

// ToMessage is Normalize with the default Inbound limits.
func (ev Event) ToMessage(account msg.AccountID, self ID) (msg.Message, error) {
	return ev.Normalize(account, self, Inbound{})
}

// Normalize turns a message event into a msg.Message of account. self is
// the bot's QQ number when known (0 otherwise). The bot's own messages and
// placeholder-group messages are refused. The text is cut to in.MaxChars
// characters, and so are the segments: the part cut off is never decoded,
// so no copy of a huge message outlives this call, and nothing in the
// message refers to the memory of the frame.
func (ev Event) Normalize(account msg.AccountID, self ID, in Inbound) (msg.Message, error) {
	switch ev.PostType {
	case "message":
	case "message_sent":
		return msg.Message{}, ErrSelf
	default:
		return msg.Message{}, ErrNotMessage
	}
	if self == 0 {
		self = ev.SelfID
	}
	if self != 0 && ev.UserID == self {
		return msg.Message{}, ErrSelf
	}
	m := msg.Message{
		ID: msg.MessageID(ev.MessageID.String()), Channel: ChannelID, Account: account,
		Sender: msg.Sender{ID: msg.UserID(ev.UserID.String()), Name: strings.Clone(ev.Sender.DisplayName(ev.UserID))},
		Time:   time.Unix(int64(ev.Time), 0),
	}
	switch ev.MessageType {
	case "group":
		if ev.GroupID == PlaceholderGroup {
			return msg.Message{}, ErrPlaceholder
		}
		m.Peer = msg.Peer{Kind: msg.Group, ID: ev.GroupID.String()}
	case "private":
		m.Peer = msg.Peer{Kind: msg.Direct, ID: ev.UserID.String()}
	default:
		return msg.Message{}, fmt.Errorf("onebot: unknown message_type %q", ev.MessageType)
	}
	limit := in.maxChars()
	segs, cut, err := segmentsOf(ev.Message, limit)
	if err != nil || fillFrom(&m, &segs, 0, self, limit, cut) == 0 {
		if raw := ev.raw(); raw != "" {
			m.Segments, m.Mentions, m.ForwardIDs, m.ReplyTo, m.AtAll = nil, nil, nil, "", false
			raw, cut := cutCQ(raw, limit)
			fillFrom(&m, &segments{list: ParseCQ(raw)}, 0, self, limit, cut)
		}
	}
	return m, nil
}

// raw is the event's raw_message, decoded now if the frame was large.
func (ev Event) raw() string {
	if ev.RawMessage != "" || ev.rawMessage == nil {
		return ev.RawMessage
	}
	var s string
	_ = json.Unmarshal(ev.rawMessage, &s)
	return s
}

// segments are a message's segments, read one at a time: from a list, or
// from an encoded segment array (streamSegments).
type segments struct {
	list  []Segment
	array elements
}

// next returns the next segment, false when there is none.
func (s *segments) next() (Segment, bool) {
	if len(s.list) > 0 {
		seg := s.list[0]
		s.list = s.list[1:]
		return seg, true
	}
	for {
		elem, ok := s.array.next()
		if !ok {
			return Segment{}, false
		}
		if seg, ok := segmentOf(elem); ok {
			return seg, true
		}
	}
}

// segmentsOf reads a message field as ParseMessage does (a segment array,
// one segment, or a CQ-code string). A large one is read one segment at a
// time (streamSegments), so that the reader may stop early and no text is
// copied whole. A CQ-code string is cut to about limit characters first
// (cut reports that it was).
func segmentsOf(raw json.RawMessage, limit int) (segs segments, cut bool, err error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) > 0 && raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return segments{}, false, fmt.Errorf("onebot: message string: %w", err)
		}
		s, cut = cutCQ(s, limit)
		return segments{list: ParseCQ(s)}, cut, nil
	}
	if len(raw) >= largeFrame {
		segs, err := streamSegments(raw)
		return segs, false, err
	}
	all, err := ParseMessage(raw)
	return segments{list: all}, false, err
}

// streamSegments reads a segment array, or one segment, as ParseMessage
// does (but with encoding/json throughout), one segment at a time; a text
// segment's text is left encoded where it is, for textPrefix.
func streamSegments(raw json.RawMessage) (segments, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return segments{}, nil
	}
	if !json.Valid(raw) {
		return segments{}, fmt.Errorf("onebot: message: %w", ErrBadMessage)
	}
	switch raw[0] {
	case '[':
		return segments{array: newElements(raw)}, nil
	case '{':
		if seg, ok := segmentOf(raw); ok {
			return segments{list: []Segment{seg}}, nil
		}
	}
	return segments{}, ErrBadMessage
}

// segmentOf decodes one element of a segment array (valid JSON) as
// encoding/json would, false when it is not a segment. A text segment
// keeps its text encoded: a sub-slice of elem.
func segmentOf(elem []byte) (Segment, bool) {
	var typ, data []byte
	fields := 0
	for key, value := range members(elem) {
		switch {
		case keyIs(key, "type", true):
			typ, fields = value, fields+1
		case keyIs(key, "data", true):
			data, fields = value, fields+1
		}
	}
	// A repeated field is left to encoding/json, which merges data objects.
	if fields == 2 && string(typ) == `"text"` && len(data) > 0 && data[0] == '{' {
		var text []byte
		for key, value := range members(data) {
			if keyIs(key, "text", false) {
				text = value
			}
		}
		seg := Segment{Type: "text", Data: map[string]json.RawMessage{}}
		if text != nil {
			seg.Data["text"] = text
		}
		return seg, true
	}
	var seg Segment
	if json.Unmarshal(elem, &seg) != nil || seg.Type == "" {
		return Segment{}, false
	}
	return seg, true
}

// Fill converts segments into m's segments, rendered text, mentions,
// reply id and forward ids. self is the bot's QQ number (0 when unknown).
// The at that QQ inserts after a reply segment (of the quoted message's
// author) is dropped, so a reply does not read as a mention of that
// person. An at of the bot there is kept: the user typed it, or QQ put it
// there because the quoted message is the bot's, and either way the
// message speaks to the bot. The text is cut to DefaultMaxChars.
func Fill(m *msg.Message, segs []Segment, self ID) { fill(m, segs, 0, self) }

func fill(m *msg.Message, segs []Segment, depth int, self ID) {
	fillFrom(m, &segments{list: segs}, depth, self, DefaultMaxChars, false)
}

// fillFrom is Fill reading segs until limit characters are rendered: the
// segment that does not fit is cut (text) or dropped (anything else), the
// segments after it are not read, and TruncatedMarker ends the text, as it
// does when short says segs were cut short already. It returns how many
// segments it read.
func fillFrom(m *msg.Message, segs *segments, depth int, self ID, limit int, short bool) int {
	var b strings.Builder
	left := limit
	afterReply, cut := false, false
	n := 0
	for s, ok := segs.next(); ok; s, ok = segs.next() {
		n++
		var seg msg.Segment
		if s.Type == "text" {
			text, more := textPrefix(s, left)
			seg, cut = msg.Text(text), more
		} else {
			seg = convert(s, depth, self)
		}
		if afterReply {
			afterReply = false
			if seg.Kind == msg.SegAt && !seg.AtAll && (self == 0 || seg.Target != msg.UserID(self.String())) {
				continue
			}
		}
		text := Render(seg)
		size := utf8.RuneCountInString(text)
		if size > left {
			cut = true // a placeholder or mention that does not fit
			break
		}
		left -= size
		switch seg.Kind {
		case msg.SegReply:
			if m.ReplyTo == "" {
				m.ReplyTo = msg.MessageID(seg.ID)
			}
			afterReply = true
		case msg.SegAt:
			if seg.AtAll {
				m.AtAll = true
			} else if seg.Target != "" {
				m.Mentions = append(m.Mentions, seg.Target)
			}
		case msg.SegForward:
			if seg.ID != "" {
				m.ForwardIDs = append(m.ForwardIDs, msg.ForwardID(seg.ID))
			}
		}
		m.Segments = append(m.Segments, seg)
		b.WriteString(text)
		if cut {
			break
		}
	}
	m.Text = strings.TrimSpace(b.String())
	if cut || short {
		m.Text += TruncatedMarker
	}
	return n
}

// textPrefix is the text of a text segment cut to limit characters, and
// whether it was cut. Only the part kept is decoded.
func textPrefix(s Segment, limit int) (string, bool) {
	raw := bytes.TrimSpace(s.Data["text"])
	if len(raw) > 0 && raw[0] == '"' {
		end := stringPrefix(raw, limit)
		if end < 0 {
			return s.Str("text"), false // it fits
		}
		prefix := append(raw[:end:end], '"') // a copy of the part kept
		return Segment{Data: map[string]json.RawMessage{"text": prefix}}.Str("text"), true
	}
	text := s.Str("text") // a number or boolean: short
	if utf8.RuneCountInString(text) > limit {
		return cutChars(text, limit), true
	}
	return text, false
}

// stringPrefix returns where, in the encoded JSON string raw, its first
// limit characters end (each escape sequence, surrogate pairs included, and
// each byte that is not UTF-8, decode to one character); -1 when the string
// has no more than limit characters, or does not end.
func stringPrefix(raw []byte, limit int) int {
	i, n := 1, 0
	for i < len(raw) {
		c := raw[i]
		if c == '"' {
			return -1
		}
		if n == limit {
			return i
		}
		switch {
		case c == '\\' && i+1 < len(raw) && raw[i+1] == 'u':
			if i+12 <= len(raw) && isHighSurrogate(raw[i+2:i+6]) && raw[i+6] == '\\' && raw[i+7] == 'u' && isLowSurrogate(raw[i+8:i+12]) {
				i += 12
			} else {
				i += 6
			}
		case c == '\\':
			i += 2
		default:
			_, size := utf8.DecodeRune(raw[i:])
			i += size
		}
		n++
	}
	return -1
}

// isHighSurrogate and isLowSurrogate read four hex digits of a \u escape.
func isHighSurrogate(hex []byte) bool { return surrogate(hex, 'd', "89ab") }
func isLowSurrogate(hex []byte) bool  { return surrogate(hex, 'd', "cdef") }

func surrogate(hex []byte, first byte, second string) bool {
	return len(hex) == 4 && hex[0]|0x20 == first && strings.IndexByte(second, hex[1]|0x20) >= 0 && isHex(hex[2]) && isHex(hex[3])
}

func isHex(c byte) bool {
	c |= 0x20
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f'
}

// cutChars returns the first n characters of s.
func cutChars(s string, n int) string {
	i := 0
	for range n {
		if i >= len(s) {
			break
		}
		_, size := utf8.DecodeRuneInString(s[i:])
		i += size
	}
	return s[:i]
}

// cutCQ cuts a CQ-code string once it holds more than limit characters,
// each code counting as one and each entity (&#91; …) as one, and says
// whether it did; what is kept renders to at least limit+1 characters
// unless codes render to nothing.
func cutCQ(s string, limit int) (string, bool) {
	n := 0
	for i := 0; i < len(s); n++ {
		if n > limit {
			return s[:i], true
		}
		if strings.HasPrefix(s[i:], "[CQ:") {
			if end := strings.IndexByte(s[i:], ']'); end >= 0 {
				i += end + 1
				continue
			}
		}
		if s[i] == '&' {
			if entity := entityLen(s[i:]); entity > 0 {
				i += entity
				continue
			}
		}
		_, size := utf8.DecodeRuneInString(s[i:])
		i += size
	}
	return s, false
}

// entityLen is the length of the CQ entity s starts with, 0 if none.
func entityLen(s string) int {
	for _, e := range []string{"&amp;", "&#91;", "&#93;", "&#44;"} {
		if strings.HasPrefix(s, e) {
			return len(e)
		}
	}
	return 0
}

// convert converts a segment other than text.
func convert(s Segment, depth int, self ID) msg.Segment {
	switch s.Type {
	case "at":
		qq := s.Str("qq")
		if qq == "all" {
			return msg.Segment{Kind: msg.SegAt, AtAll: true}
		}
		return msg.Segment{Kind: msg.SegAt, Target: msg.UserID(qq), Name: prompt.Sanitize(s.Str("name"))}
	case "reply":
		return msg.Segment{Kind: msg.SegReply, ID: s.Str("id")}
	case "image":
		return msg.Segment{Kind: msg.SegImage, URL: s.Str("url"), ID: s.Str("file")}
	case "record":
		return msg.Segment{Kind: msg.SegVoice, URL: s.Str("url"), ID: s.Str("file")}
	case "video":
		return msg.Segment{Kind: msg.SegVideo, URL: s.Str("url"), ID: s.Str("file")}
	case "face":
		return msg.Segment{Kind: msg.SegFace, ID: s.Str("id")}
	case "file":
		return msg.Segment{Kind: msg.SegFile, URL: s.Str("url"), ID: s.Str("file_id"), Name: s.Str("name")}
	case "forward":
		seg := msg.Segment{Kind: msg.SegForward, ID: s.Str("id")}
		if content, ok := s.Data["content"]; ok {
			// NapCat sends nested forwards inline; their ids cannot be
			// fetched, so the content is the only way in. Content without
			// an id gets one made up from it, so it is still found.
			seg.Forward = forwardMessages(content, depth+1, self)
			if seg.ID == "" && seg.Forward != nil {
				seg.ID = string(inlineForwardID(content))
			}
		}
		return seg
	}
	return msg.Segment{Kind: msg.SegOther, Type: strings.Clone(s.Type)}
}

// Placeholders of non-text segments in rendered text.
const (
	PlaceholderImage   = "[图片]"
	PlaceholderVoice   = "[语音]"
	PlaceholderFace    = "[表情]"
	PlaceholderVideo   = "[视频]"
	PlaceholderFile    = "[文件]"
	PlaceholderForward = "[合并转发]"
	AtAllText          = "@全体成员"
)

// Render is a segment's text as the agent reads it. Reply segments render
// as nothing: quotes are resolved separately.
func Render(s msg.Segment) string {
	switch s.Kind {
	case msg.SegText:
		return s.Text
	case msg.SegAt:
		if s.AtAll {
			return AtAllText
		}
		if s.Name != "" {
			return "@" + s.Name
		}
		return "@" + string(s.Target)
	case msg.SegReply:
		return ""
	case msg.SegImage:
		return PlaceholderImage
	case msg.SegVoice:
		return PlaceholderVoice
	case msg.SegFace:
		return PlaceholderFace
	case msg.SegVideo:
		return PlaceholderVideo
	case msg.SegFile:
		return PlaceholderFile
	case msg.SegForward:
		return PlaceholderForward
	}
	return "[" + prompt.Sanitize(s.Type) + "]"
}
