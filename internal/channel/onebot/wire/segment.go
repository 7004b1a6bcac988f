package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"unicode/utf8"

	"github.com/valyala/fastjson"

	"github.com/pincerbot/pincer/internal/jsonstr"
)

// Segment is one OneBot message segment. Data values are kept raw: the
// spec says strings, but implementations send numbers, booleans, objects
// and arrays (a NapCat forward carries its messages inline).
type Segment struct {
	Type string `json:"type"`
	Data Fields `json:"data"`
}

// Str returns a data field as a string: a JSON string as is, a number or
// boolean as written, anything else (or a missing field) as "".
func (s Segment) Str(key string) string {
	raw := bytes.TrimSpace(s.Data.Get(key))
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
	return Segment{Type: "text", Data: Fields{{Key: "text", Value: quote(text)}}}
}

// NewSegment returns a segment with string data.
func NewSegment(typ string, kv ...string) Segment {
	s := Segment{Type: typ, Data: make(Fields, 0, len(kv)/2)}
	for i := 0; i+1 < len(kv); i += 2 {
		s.Data.Set(kv[i], quote(kv[i+1]))
	}
	return s
}

// quote encodes s as a JSON string, byte for byte as an encoding/json
// Encoder with HTML escaping off writes it (<, > and & as they are).
// Every text a reply sends is quoted, and the Encoder's reflection was
// most of what building a send cost.
func quote(s string) json.RawMessage {
	return jsonstr.Append(make([]byte, 0, len(s)+2), s, false)
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
