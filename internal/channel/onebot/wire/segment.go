package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"unicode/utf8"

	"github.com/valyala/fastjson"
)

// Segment is one OneBot message segment. Data values are kept raw: the
// spec says strings, but implementations send numbers, booleans, objects
// and arrays (a NapCat forward carries its messages inline).
type Segment struct {
	Type string                     `json:"type"`
	Data map[string]json.RawMessage `json:"data"`
}

// Str returns a data field as a string: a JSON string as is, a number or
// boolean as written, anything else (or a missing field) as "".
func (s Segment) Str(key string) string {
	raw := bytes.TrimSpace(s.Data[key])
	if len(raw) == 0 {
		return ""
	}
	switch raw[0] {
	case '"':
		if len(raw) >= 2 && raw[len(raw)-1] == '"' && bytes.IndexByte(raw, '\\') < 0 && utf8.Valid(raw) {
			return string(raw[1 : len(raw)-1]) // no escapes: the text as is
		}
		var v string
		if json.Unmarshal(raw, &v) == nil {
			return v
		}
	case '{', '[', 'n':
		return ""
	default:
		return string(raw)
	}
	return ""
}

// textSegment returns a text segment.
func textSegment(text string) Segment {
	return Segment{Type: "text", Data: map[string]json.RawMessage{"text": quote(text)}}
}

// NewSegment returns a segment with string data.
func NewSegment(typ string, kv ...string) Segment {
	s := Segment{Type: typ, Data: map[string]json.RawMessage{}}
	for i := 0; i+1 < len(kv); i += 2 {
		s.Data[kv[i]] = quote(kv[i+1])
	}
	return s
}

// quote encodes s as a JSON string, byte for byte as an encoding/json
// Encoder with HTML escaping off writes it (FuzzQuote holds the two
// together): control characters, quotes and backslashes escaped, invalid
// UTF-8 as \ufffd, U+2028 and U+2029 escaped for JavaScript, and <, >
// and & as they are. Every text a reply sends is quoted, and the
// Encoder's reflection was most of what building a send cost.
func quote(s string) json.RawMessage {
	return appendQuoted(make([]byte, 0, len(s)+2), s)
}

// appendQuoted appends s to dst as quote encodes it.
func appendQuoted(dst []byte, s string) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		b := s[i]
		if b < utf8.RuneSelf {
			if b >= 0x20 && b != '"' && b != '\\' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch b {
			case '"', '\\':
				dst = append(dst, '\\', b)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hex[b>>4], hex[b&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hex[r&0xf])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// errBadMessage reports a message field that is neither a segment array,
// a single segment nor a string.
var errBadMessage = errors.New("onebot: message is not a segment array, segment or string")

// parseMessage decodes a message field in any of its forms: a segment
// array, a single segment object, or a CQ-code string. Elements that are
// not segments are skipped. valid says raw is known to be valid JSON (a
// part of a frame already checked whole), which spares a second check.
func parseMessage(raw json.RawMessage, valid bool) ([]Segment, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return nil, nil
	}
	switch raw[0] {
	case '"':
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, fmt.Errorf("onebot: message string: %w", err)
		}
		return parseCQ(s), nil
	case '{':
		var seg Segment
		if err := json.Unmarshal(raw, &seg); err != nil || seg.Type == "" {
			return nil, errBadMessage
		}
		return []Segment{seg}, nil
	case '[':
		// One pass when every element is a usual segment object.
		if valid || fastjson.ValidateBytes(raw) == nil {
			if segs, ok := segmentsFast(raw); ok {
				return segs, nil
			}
		}
		var elems []json.RawMessage
		if err := json.Unmarshal(raw, &elems); err != nil {
			return nil, fmt.Errorf("onebot: message array: %w", err)
		}
		segs := make([]Segment, 0, len(elems))
		for _, e := range elems {
			var seg Segment
			if json.Unmarshal(e, &seg) == nil && seg.Type != "" {
				segs = append(segs, seg)
			}
		}
		return segs, nil
	}
	return nil, errBadMessage
}
