package onebot

import (
	"bytes"
	"encoding/json"
	"slices"
	"strconv"
	"strings"

	"github.com/pincerbot/pincer/internal/channel/onebot/wire"
)

// messageParams are the params of send_group_msg and send_private_msg:
// the chat and the message. They encode to the very bytes encoding/json
// gives for the map {target.key: target.id, "message": message} (keys
// sorted, <, > and & escaped, each data value compacted), but without
// reflecting over maps and interfaces, which cost most of a send's own
// CPU; TestMessageParamsEncodeAsTheMap holds the two to the same bytes.
type messageParams struct {
	target  chatTarget
	message []wire.Segment
}

// asMap is the params as the map they stand for.
func (p messageParams) asMap() map[string]any {
	return map[string]any{p.target.key: p.target.id, "message": p.message}
}

// size estimates the params' encoded size.
func (p messageParams) size() int {
	n := 32
	for _, s := range p.message {
		n += 24 + len(s.Type)
		for _, f := range s.Data {
			n += 4 + len(f.Key) + len(f.Value)
		}
	}
	return n
}

// MarshalJSON implements json.Marshaler.
func (p messageParams) MarshalJSON() ([]byte, error) {
	return p.appendJSON(nil)
}

// appendJSON appends the params' JSON to dst. What it cannot write
// itself (a key or type that needs escapes, a data value that is not
// compact valid JSON) is left to encoding/json.
func (p messageParams) appendJSON(dst []byte) ([]byte, error) {
	if !plainKey(p.target.key) {
		return p.marshalMap(dst)
	}
	orig := len(dst)
	dst = append(dst, '{')
	if p.target.key < "message" {
		dst = p.appendTarget(dst)
		dst = append(dst, ',')
	}
	dst = append(dst, `"message":`...)
	if p.message == nil {
		dst = append(dst, "null"...)
	} else {
		dst = append(dst, '[')
		var fields []wire.Field
		for i, s := range p.message {
			if i > 0 {
				dst = append(dst, ',')
			}
			var ok bool
			if dst, fields, ok = appendSegment(dst, s, fields); !ok {
				return p.marshalMap(dst[:orig])
			}
		}
		dst = append(dst, ']')
	}
	if p.target.key > "message" {
		dst = append(dst, ',')
		dst = p.appendTarget(dst)
	}
	return append(dst, '}'), nil
}

func (p messageParams) appendTarget(dst []byte) []byte {
	dst = append(dst, '"')
	dst = append(dst, p.target.key...)
	dst = append(dst, `":`...)
	return strconv.AppendInt(dst, p.target.id, 10)
}

func (p messageParams) marshalMap(dst []byte) ([]byte, error) {
	b, err := json.Marshal(p.asMap())
	if err != nil {
		return nil, err
	}
	return append(dst, b...), nil
}

// appendSegment appends s as encoding/json writes a wire.Segment (its
// data's keys sorted), with fields as scratch space for sorting them;
// false when it must be left to encoding/json.
func appendSegment(dst []byte, s wire.Segment, fields []wire.Field) ([]byte, []wire.Field, bool) {
	if !plainKey(s.Type) {
		return dst, fields, false
	}
	dst = append(dst, `{"type":"`...)
	dst = append(dst, s.Type...)
	dst = append(dst, `","data":`...)
	if s.Data == nil {
		return append(dst, "null}"...), fields, true
	}
	fields = append(fields[:0], s.Data...)
	for _, f := range fields {
		if !plainKey(f.Key) {
			return dst, fields, false
		}
	}
	slices.SortFunc(fields, func(a, b wire.Field) int { return strings.Compare(a.Key, b.Key) })
	dst = append(dst, '{')
	for i, f := range fields {
		if i > 0 {
			if f.Key == fields[i-1].Key {
				return dst, fields, false // a key set twice: which one counts is encoding/json's to say
			}
			dst = append(dst, ',')
		}
		dst = append(dst, '"')
		dst = append(dst, f.Key...)
		dst = append(dst, `":`...)
		if f.Value == nil {
			dst = append(dst, "null"...)
			continue
		}
		var ok bool
		if dst, ok = appendCompactHTML(dst, f.Value); !ok {
			return dst, fields, false
		}
	}
	return append(dst, "}}"...), fields, true
}

// appendCompactHTML appends raw as encoding/json writes a RawMessage: as
// it is when it is a JSON string with nothing to escape for HTML, which a
// segment's values almost always are; else compacted with <, >, &, U+2028
// and U+2029 escaped. false when raw is not valid JSON.
func appendCompactHTML(dst, raw []byte) ([]byte, bool) {
	if plainString(raw) {
		return append(dst, raw...), true
	}
	var compact bytes.Buffer
	if json.Compact(&compact, raw) != nil {
		return dst, false
	}
	var escaped bytes.Buffer
	json.HTMLEscape(&escaped, compact.Bytes())
	return append(dst, escaped.Bytes()...), true
}

// plainString reports a JSON string literal, quotes and all, that
// encoding/json would copy as it is: well formed (every escape one JSON
// knows, no control character; its bytes are not checked as UTF-8), and
// without <, >, & or the line and paragraph separators it escapes.
func plainString(raw []byte) bool {
	if len(raw) < 2 || raw[0] != '"' || raw[len(raw)-1] != '"' {
		return false
	}
	s := raw[1 : len(raw)-1]
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c < 0x20 || c == '"' || c == '<' || c == '>' || c == '&':
			return false
		case c == '\\':
			if i+1 >= len(s) {
				return false
			}
			i++
			switch s[i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if i+4 >= len(s) {
					return false
				}
				for _, h := range s[i+1 : i+5] {
					if !('0' <= h && h <= '9' || 'a' <= h && h <= 'f' || 'A' <= h && h <= 'F') {
						return false
					}
				}
				i += 4
			default:
				return false
			}
		case c == 0xE2 && i+2 < len(s) && s[i+1] == 0x80 && s[i+2]&^1 == 0xA8:
			return false
		}
	}
	return true
}

// plainKey reports a string encoding/json writes between quotes as it is
// (printable ASCII without quotes, backslashes or HTML's <, > and &).
func plainKey(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			return false
		}
	}
	return true
}

// appendRequest appends the frame of an action, as json.Marshal writes
// a wire.Request; false when it must be left to json.Marshal.
func appendRequest(dst []byte, action, echo string, p messageParams) ([]byte, bool) {
	if !plainKey(action) || !plainKey(echo) {
		return dst, false
	}
	dst = append(dst, `{"action":"`...)
	dst = append(dst, action...)
	dst = append(dst, `","echo":"`...)
	dst = append(dst, echo...)
	dst = append(dst, `","params":`...)
	dst, err := p.appendJSON(dst)
	if err != nil {
		return dst, false
	}
	return append(dst, '}'), true
}
