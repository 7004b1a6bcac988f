package wire

import (
	"bytes"
	"encoding/binary"
	"strconv"
	"sync"
	"unicode/utf8"

	"github.com/valyala/fastjson"
)

// The usual frame is decoded by a parser that needs no reflection and
// keeps no type cache (fastjson), after a strict syntax check. A frame is
// usual when its strings are valid UTF-8 without unpaired surrogate
// escapes (which encoding/json replaces with U+FFFD), and every field the
// decoding reads appears once, spelled as the protocol spells it (which
// encoding/json would match case-insensitively, the last one winning).
// Any other frame is left to encoding/json, which decides what it means:
// the fast path is only ever a faster way to the same result (a
// differential fuzz test holds it to that).

// parsers are shared by every goroutine that decodes.
var parsers fastjson.ParserPool

// decodeFast decodes a frame as Classify does; ok is false when the frame
// is not usual or not valid JSON, for encoding/json to decide.
func decodeFast(frame []byte) (p probe, ok bool) {
	if !usual(frame) || fastjson.ValidateBytes(frame) != nil {
		return probe{}, false
	}
	parser := parsers.Get()
	defer parsers.Put(parser)
	v, err := parser.ParseBytes(frame)
	if err != nil {
		return probe{}, false
	}
	obj, err := v.Object()
	if err != nil {
		return probe{}, false
	}
	ok = true
	var seen uint32
	obj.Visit(func(key []byte, v *fastjson.Value) {
		if !ok {
			return
		}
		f := probeField(key)
		if f < 0 {
			ok = plainKey(key)
			return
		}
		if seen&(1<<f) != 0 {
			ok = false
			return
		}
		seen |= 1 << f
		ok = p.set(f, v)
	})
	if !ok {
		return probe{}, false
	}
	return p, true
}

// The fields a probe reads.
const (
	fTime = iota
	fSelfID
	fPostType
	fMessageType
	fSubType
	fMessageID
	fUserID
	fGroupID
	fMessage
	fRawMessage
	fSender
	fMetaEventType
	fNoticeType
	fInterval
	fEcho
	fStatus
	fRetcode
	fData
	fWording
	fMsg
)

// probeField returns the field key names, -1 for another key.
func probeField(key []byte) int {
	switch string(key) {
	case "time":
		return fTime
	case "self_id":
		return fSelfID
	case "post_type":
		return fPostType
	case "message_type":
		return fMessageType
	case "sub_type":
		return fSubType
	case "message_id":
		return fMessageID
	case "user_id":
		return fUserID
	case "group_id":
		return fGroupID
	case "message":
		return fMessage
	case "raw_message":
		return fRawMessage
	case "sender":
		return fSender
	case "meta_event_type":
		return fMetaEventType
	case "notice_type":
		return fNoticeType
	case "interval":
		return fInterval
	case "echo":
		return fEcho
	case "status":
		return fStatus
	case "retcode":
		return fRetcode
	case "data":
		return fData
	case "wording":
		return fWording
	case "msg":
		return fMsg
	}
	return -1
}

// plainKey reports a key no field name can match case-insensitively: one
// of lower-case ASCII letters, digits and punctuation.
func plainKey(key []byte) bool {
	for _, c := range key {
		if c >= utf8.RuneSelf || ('A' <= c && c <= 'Z') {
			return false
		}
	}
	return true
}

// set fills field f from v, as encoding/json would; false when that is
// not certain.
func (p *probe) set(f int, v *fastjson.Value) bool {
	ev := &p.Event
	switch f {
	case fTime:
		return setID(&ev.Time, v)
	case fSelfID:
		return setID(&ev.SelfID, v)
	case fMessageID:
		return setID(&ev.MessageID, v)
	case fUserID:
		return setID(&ev.UserID, v)
	case fGroupID:
		return setID(&ev.GroupID, v)
	case fPostType:
		return setString(&ev.PostType, v)
	case fMessageType:
		return setString(&ev.MessageType, v)
	case fSubType:
		return setString(&ev.SubType, v)
	case fRawMessage:
		return setString(&ev.RawMessage, v)
	case fMetaEventType:
		return setString(&ev.MetaEventType, v)
	case fNoticeType:
		return setString(&ev.NoticeType, v)
	case fInterval:
		switch v.Type() {
		case fastjson.TypeNull:
			return true
		case fastjson.TypeNumber:
			n, err := strconv.ParseInt(string(v.MarshalTo(nil)), 10, 64)
			ev.Interval = n
			return err == nil
		}
		return false
	case fSender:
		return setSender(&ev.Sender, v)
	case fMessage:
		// A segment array is decoded now, from the parsed frame; anything
		// else is kept encoded for segmentsOf.
		if segs, ok := segmentsOfValue(v); ok {
			ev.segs, ev.decoded = segs, true
			return true
		}
		ev.Message = v.MarshalTo(nil)
	case fEcho:
		p.Echo = v.MarshalTo(nil)
	case fStatus:
		p.Status = v.MarshalTo(nil)
	case fRetcode:
		p.Retcode = v.MarshalTo(nil)
	case fData:
		p.Data = v.MarshalTo(nil)
	case fWording:
		p.Wording = v.MarshalTo(nil)
	case fMsg:
		p.Msg = v.MarshalTo(nil)
	}
	return true
}

// setID decodes an id as ID.UnmarshalJSON does; false on an error.
func setID(id *ID, v *fastjson.Value) bool {
	// The usual forms, an integer or a string of one, without an
	// allocation; the rest (null, "", 1.7e9) as UnmarshalJSON reads them.
	switch v.Type() {
	case fastjson.TypeNumber:
		if n, err := v.Int64(); err == nil {
			*id = ID(n)
			return true
		}
	case fastjson.TypeString:
		if n, err := strconv.ParseInt(string(v.GetStringBytes()), 10, 64); err == nil {
			*id = ID(n)
			return true
		}
	}
	switch v.Type() {
	case fastjson.TypeNumber, fastjson.TypeString, fastjson.TypeNull:
		return id.UnmarshalJSON(v.MarshalTo(nil)) == nil
	}
	return false
}

// setString decodes a string field: a JSON string, or null for none.
func setString(s *string, v *fastjson.Value) bool {
	switch v.Type() {
	case fastjson.TypeString:
		*s = intern(v.GetStringBytes())
		return true
	case fastjson.TypeNull:
		return true
	}
	return false
}

// intern is b as a string, without an allocation for the words every
// event repeats: its post, message and sub type, a sender's role, a
// segment's type and the keys of the usual segments' data.
func intern(b []byte) string {
	switch string(b) {
	case "message":
		return "message"
	case "group":
		return "group"
	case "private":
		return "private"
	case "normal":
		return "normal"
	case "friend":
		return "friend"
	case "member":
		return "member"
	case "admin":
		return "admin"
	case "owner":
		return "owner"
	case "text":
		return "text"
	case "at":
		return "at"
	case "reply":
		return "reply"
	case "face":
		return "face"
	case "image":
		return "image"
	case "notice":
		return "notice"
	case "meta_event":
		return "meta_event"
	case "heartbeat":
		return "heartbeat"
	case "message_sent":
		return "message_sent"
	case "qq":
		return "qq"
	case "id":
		return "id"
	case "name":
		return "name"
	case "file":
		return "file"
	case "url":
		return "url"
	case "summary":
		return "summary"
	case "sub_type":
		return "sub_type"
	case "file_size":
		return "file_size"
	case "raw":
		return "raw"
	case "resultId":
		return "resultId"
	case "chainCount":
		return "chainCount"
	case "content":
		return "content"
	case "data":
		return "data"
	case "":
		return ""
	}
	return string(b)
}

// setSender decodes a sender object (or null, for none).
func setSender(s *Sender, v *fastjson.Value) bool {
	switch v.Type() {
	case fastjson.TypeNull:
		return true
	case fastjson.TypeObject:
	default:
		return false
	}
	ok := true
	var seen [4]bool
	v.GetObject().Visit(func(key []byte, v *fastjson.Value) {
		if !ok {
			return
		}
		f := -1
		switch string(key) {
		case "user_id":
			f = 0
		case "nickname":
			f = 1
		case "card":
			f = 2
		case "role":
			f = 3
		default:
			ok = plainKey(key)
			return
		}
		if seen[f] {
			ok = false
			return
		}
		seen[f] = true
		switch f {
		case 0:
			ok = setID(&s.UserID, v)
		case 1:
			ok = setString(&s.Nickname, v)
		case 2:
			ok = setString(&s.Card, v)
		case 3:
			ok = setString(&s.Role, v)
		}
	})
	return ok
}

// segmentsFast decodes a segment array as the usual frame is decoded;
// ok is false when any element is not a usual segment object, for
// encoding/json to decide. raw must be valid JSON.
func segmentsFast(raw []byte) (segs []Segment, ok bool) {
	if !usual(raw) {
		return nil, false
	}
	parser := parsers.Get()
	defer parsers.Put(parser)
	v, err := parser.ParseBytes(raw)
	if err != nil {
		return nil, false
	}
	return segmentsOfValue(v)
}

// segmentsOfValue decodes a parsed segment array; ok is false when v is
// not an array of usual segment objects.
func segmentsOfValue(v *fastjson.Value) (segs []Segment, ok bool) {
	elems, err := v.Array()
	if err != nil {
		return nil, false
	}
	// The segments' data values are written to a scratch buffer, then
	// copied to one of the size they came to, each capped at its end so
	// none grows into the next.
	scratch := scratches.Get().(*[]byte)
	defer putScratch(scratch)
	buf := (*scratch)[:0]
	segs = make([]Segment, 0, len(elems))
	for _, e := range elems {
		mark := len(buf)
		seg, ok := segmentFast(e, &buf)
		if !ok {
			*scratch = buf
			return nil, false
		}
		if seg.Type == "" {
			buf = buf[:mark] // left out, its values too
			continue
		}
		segs = append(segs, seg)
	}
	*scratch = buf
	values := make([]byte, len(buf))
	copy(values, buf)
	for i := range segs {
		data := segs[i].Data
		for j := range data {
			n := len(data[j].Value)
			data[j].Value, values = values[:n:n], values[n:]
		}
		segs[i].Data = data.dedupe()
	}
	return segs, true
}

// scratches are the scratch buffers of segmentsOfValue.
var scratches = sync.Pool{New: func() any { return new([]byte) }}

// maxScratch is the largest scratch buffer kept for another message; a
// bigger one is left to the garbage collector.
const maxScratch = 64 << 10

// putScratch returns a scratch buffer to scratches, unless it is huge.
func putScratch(b *[]byte) {
	if cap(*b) <= maxScratch {
		scratches.Put(b)
	}
}

// segmentFast decodes a segment object; its data values are appended to
// buf, and its fields hold them there until segmentsOfValue copies them.
func segmentFast(e *fastjson.Value, buf *[]byte) (seg Segment, ok bool) {
	obj, err := e.Object()
	if err != nil {
		return seg, false
	}
	ok = true
	var seenType, seenData bool
	obj.Visit(func(key []byte, v *fastjson.Value) {
		if !ok {
			return
		}
		switch string(key) {
		case "type":
			ok = !seenType && setString(&seg.Type, v)
			seenType = true
		case "data":
			ok = !seenData && setData(&seg, v, buf)
			seenData = true
		default:
			ok = plainKey(key)
		}
	})
	return seg, ok
}

// setData decodes a segment's data object into its fields (null for
// none), sized once for the keys it has. The values are appended to buf
// and the fields left pointing into it, a repeated key not yet dropped:
// segmentsOfValue copies the values out, then deduplicates. The usual
// keys are not allocated anew (intern).
func setData(seg *Segment, v *fastjson.Value, buf *[]byte) bool {
	switch v.Type() {
	case fastjson.TypeNull:
		return true
	case fastjson.TypeObject:
	default:
		return false
	}
	obj := v.GetObject()
	data := make(Fields, 0, obj.Len())
	obj.Visit(func(key []byte, v *fastjson.Value) {
		start := len(*buf)
		*buf = v.MarshalTo(*buf)
		data = append(data, Field{Key: intern(key), Value: (*buf)[start:]})
	})
	seg.Data = data
	return true
}

// usual reports JSON text whose strings decode the same with any decoder:
// valid UTF-8, no control character in a string (which fastjson lets
// through and encoding/json refuses), and every \u escape of a surrogate
// half part of a pair. Compact JSON, what implementations send, has no
// control character at all, which is checked eight bytes at a time.
func usual(b []byte) bool {
	if !utf8.Valid(b) {
		return false
	}
	if hasControl(b) {
		return stringsUsual(b)
	}
	for {
		i := bytes.IndexByte(b, '\\')
		if i < 0 || i+1 >= len(b) {
			return true
		}
		if b[i+1] != 'u' {
			b = b[i+2:] // an escaped character, perhaps a backslash
			continue
		}
		n, ok := escapeUsual(b[i:])
		if !ok {
			return false
		}
		b = b[i+n:]
	}
}

// hasControl reports whether b holds a byte below 0x20.
func hasControl(b []byte) bool {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	for len(b) >= 8 {
		w := binary.LittleEndian.Uint64(b)
		if (w-0x20*ones)&^w&highs != 0 {
			return true
		}
		b = b[8:]
	}
	for _, c := range b {
		if c < 0x20 {
			return true
		}
	}
	return false
}

// stringsUsual is usual for text with control characters, which may
// stand between tokens but not in a string.
func stringsUsual(b []byte) bool {
	inString := false
	for i := 0; i < len(b); i++ {
		switch c := b[i]; {
		case c == '"':
			inString = !inString
		case !inString:
		case c < 0x20:
			return false
		case c == '\\':
			if i+1 >= len(b) {
				return true // not valid JSON: the strict check says so
			}
			if b[i+1] != 'u' {
				i++ // an escaped character, perhaps a quote or a backslash
				continue
			}
			n, ok := escapeUsual(b[i:])
			if !ok {
				return false
			}
			i += n - 1
		}
	}
	return true
}

// escapeUsual reads the \u escape at the start of b: false when it is not
// one encoding/json and fastjson decode alike; n is how many bytes it
// (and the low half that must follow a high one) takes.
func escapeUsual(b []byte) (n int, ok bool) {
	r, ok := hex4(b[2:])
	switch {
	case !ok:
		return 0, false // not valid JSON: let the strict decoder say so
	case 0xD800 <= r && r < 0xDC00:
		// A high half must be followed by a low half.
		rest := b[6:]
		if len(rest) < 6 || rest[0] != '\\' || rest[1] != 'u' {
			return 0, false
		}
		if lo, ok := hex4(rest[2:]); !ok || lo < 0xDC00 || lo >= 0xE000 {
			return 0, false
		}
		return 12, true
	case 0xDC00 <= r && r < 0xE000:
		return 0, false // a low half alone
	}
	return 6, true
}

// hex4 reads four hex digits.
func hex4(b []byte) (rune, bool) {
	if len(b) < 4 {
		return 0, false
	}
	n, err := strconv.ParseUint(string(b[:4]), 16, 16)
	return rune(n), err == nil
}
