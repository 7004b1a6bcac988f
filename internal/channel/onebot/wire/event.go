package wire

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/pincerbot/pincer/internal/msg"
	"github.com/pincerbot/pincer/internal/prompt"
)

// ChannelID is the QQ channel's id, which the messages decoded here carry.
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
	Time        ID     `json:"time"`
	SelfID      ID     `json:"self_id"`
	PostType    string `json:"post_type"`
	MessageType string `json:"message_type"`
	SubType     string `json:"sub_type"`
	MessageID   ID     `json:"message_id"`
	UserID      ID     `json:"user_id"`
	GroupID     ID     `json:"group_id"`
	// Message is the message field, valid JSON: it is only ever set by
	// decoding a frame that was checked whole.
	Message    json.RawMessage `json:"message"`
	RawMessage string          `json:"raw_message"`
	Sender     Sender          `json:"sender"`
	// MetaEventType is set on meta events (lifecycle, heartbeat).
	MetaEventType string `json:"meta_event_type"`
	// NoticeType is set on notices (group_recall, friend_recall, …).
	NoticeType string `json:"notice_type"`
	// Interval is a heartbeat's announced interval in milliseconds.
	Interval int64 `json:"interval"`

	// rawMessage is the raw_message value, still encoded, of a large
	// frame whose RawMessage was left undecoded: it is read only when the
	// segments are unusable.
	rawMessage json.RawMessage
	// decoded: the message field was a segment array the frame's decoding
	// decoded already, into segs (and Message is empty).
	segs    []Segment
	decoded bool
}

// Reasons a message event does not become a message.
var (
	// ErrNotMessage: the event is a notice, request or meta event.
	ErrNotMessage = errors.New("onebot: not a message event")
	// ErrSelf: the bot's own message (message_sent, or sent by self_id).
	ErrSelf = errors.New("onebot: the bot's own message")
	// errPlaceholder: a message of the placeholder group, which only
	// exists inside merged forwards.
	errPlaceholder = errors.New("onebot: placeholder group")
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

// displayName is the sender's name as shown to the agent: the group card,
// else the nickname, else the QQ number; sanitized.
func (s Sender) displayName(fallback ID) string {
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

// ToMessage is Normalize with the default limit, DefaultMaxChars.
func (ev Event) ToMessage(account msg.AccountID, self ID) (msg.Message, error) {
	return ev.Normalize(account, self, 0)
}

// Normalize turns a message event into a msg.Message of account. self is
// the bot's QQ number when known (0 otherwise). The bot's own messages and
// placeholder-group messages are refused. The text is cut to maxChars
// characters (DefaultMaxChars when it is not positive), and so are the
// segments: the part cut off is never decoded,
// so no copy of a huge message outlives this call, and nothing in the
// message refers to the memory of the frame.
func (ev Event) Normalize(account msg.AccountID, self ID, maxChars int) (msg.Message, error) {
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
		Sender: msg.Sender{ID: msg.UserID(ev.UserID.String()), Name: strings.Clone(ev.Sender.displayName(ev.UserID))},
		Time:   time.Unix(int64(ev.Time), 0),
	}
	switch ev.MessageType {
	case "group":
		if ev.GroupID == PlaceholderGroup {
			return msg.Message{}, errPlaceholder
		}
		m.Peer = msg.Peer{Kind: msg.Group, ID: ev.GroupID.String()}
	case "private":
		m.Peer = msg.Peer{Kind: msg.Direct, ID: ev.UserID.String()}
	default:
		return msg.Message{}, fmt.Errorf("onebot: unknown message_type %q", ev.MessageType)
	}
	limit := maxChars
	if limit <= 0 {
		limit = DefaultMaxChars
	}
	segs, cut, err := ev.segments(limit)
	if err != nil || fillFrom(&m, &segs, 0, self, limit, cut) == 0 {
		if raw := ev.raw(); raw != "" {
			m.Segments, m.Mentions, m.ForwardIDs, m.ReplyTo, m.AtAll = nil, nil, nil, "", false
			raw, cut := cutCQ(raw, limit)
			fillFrom(&m, &segments{list: parseCQ(raw)}, 0, self, limit, cut)
		}
	}
	return m, nil
}

// segments returns the event's message segments (see segmentsOf).
func (ev Event) segments(limit int) (segments, bool, error) {
	if ev.decoded {
		return segments{list: ev.segs}, false, nil
	}
	return segmentsOf(ev.Message, limit)
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

// fill converts segments into m's segments, rendered text, mentions,
// reply id and forward ids; depth is how deep in inline forwards they
// are. self is the bot's QQ number (0 when unknown).
// The at that QQ inserts after a reply segment (of the quoted message's
// author) is dropped, so a reply does not read as a mention of that
// person. An at of the bot there is kept: the user typed it, or QQ put it
// there because the quoted message is the bot's, and either way the
// message speaks to the bot. The text is cut to DefaultMaxChars.
func fill(m *msg.Message, segs []Segment, depth int, self ID) {
	fillFrom(m, &segments{list: segs}, depth, self, DefaultMaxChars, false)
}

// fillFrom is fill reading segs until limit characters are rendered: the
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
				// QQ's @ of the quoted message's author: not a mention, but
				// it says whose message is quoted.
				if self != 0 {
					m.ReplyToSender = seg.Target
				}
				continue
			}
		}
		text := render(seg)
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
		if m.Segments == nil {
			m.Segments = make([]msg.Segment, 0, 1+segs.left())
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
		seg := msg.Segment{Kind: msg.SegForward, ID: forwardID(s)}
		if content, ok := s.Data.Lookup("content"); ok {
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

// forwardID is the id of a forward segment: its "id", else "res_id",
// else "forward_id" (LLOneBot and older go-cqhttp forks put the resId
// there). The id, whichever key held it, is what get_forward_msg is asked
// for.
func forwardID(s Segment) string {
	for _, key := range []string{"id", "res_id", "forward_id"} {
		if id := s.Str(key); id != "" {
			return id
		}
	}
	return ""
}

// Placeholders of non-text segments in rendered text, and the marker that
// ends a text that was cut.
const (
	placeholderImage   = "[图片]"
	placeholderVoice   = "[语音]"
	placeholderFace    = "[表情]"
	placeholderVideo   = "[视频]"
	placeholderFile    = "[文件]"
	placeholderForward = "[合并转发]"
	atAllText          = "@全体成员"
	// TruncatedMarker ends the text of a message that was cut, as it ends
	// a transcript line cut to fit.
	TruncatedMarker = prompt.TruncatedMarker
)

// render is a segment's text as the agent reads it. Reply segments render
// as nothing: quotes are resolved separately.
func render(s msg.Segment) string {
	switch s.Kind {
	case msg.SegText:
		return s.Text
	case msg.SegAt:
		if s.AtAll {
			return atAllText
		}
		if s.Name != "" {
			return "@" + s.Name
		}
		return "@" + string(s.Target)
	case msg.SegReply:
		return ""
	case msg.SegImage:
		return placeholderImage
	case msg.SegVoice:
		return placeholderVoice
	case msg.SegFace:
		return placeholderFace
	case msg.SegVideo:
		return placeholderVideo
	case msg.SegFile:
		return placeholderFile
	case msg.SegForward:
		return placeholderForward
	}
	return "[" + prompt.Sanitize(s.Type) + "]"
}
