package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/pincerbot/pincer/internal/jsonstr"
)

// Fields is a segment's data: its keys and their raw JSON values, in the
// order the frame had them (or they were set in). It stands for a JSON
// object, and reads, decodes and encodes as a map of the keys to their
// values would: a key appears once (the last of a repeated key wins), the
// keys are encoded in sorted order, and nil Fields are JSON's null where
// empty ones are {}. A slice costs a segment one small allocation where a
// map cost several hundred bytes.
type Fields []Field

// Field is one key of a segment's data and its raw JSON value.
type Field struct {
	Key   string
	Value json.RawMessage
}

// Get returns the value of key; nil when there is none.
func (f Fields) Get(key string) json.RawMessage {
	v, _ := f.Lookup(key)
	return v
}

// Lookup returns the value of key, and whether there is one. Should key
// be there more than once (in Fields written out by hand), the last one
// counts, as in a JSON object decoded into a map.
func (f Fields) Lookup(key string) (json.RawMessage, bool) {
	for i := len(f) - 1; i >= 0; i-- {
		if f[i].Key == key {
			return f[i].Value, true
		}
	}
	return nil, false
}

// Set sets the value of key: in its place when it is there already (the
// place of the last one, as Lookup reads), else after the others.
func (f *Fields) Set(key string, v json.RawMessage) {
	s := *f
	for i := len(s) - 1; i >= 0; i-- {
		if s[i].Key == key {
			s[i].Value = v
			return
		}
	}
	*f = append(s, Field{Key: key, Value: v})
}

// dedupeSmall is the most fields dedupe compares pairwise; more are
// indexed by a map, so that a frame with a huge data object costs time in
// proportion to its size.
const dedupeSmall = 16

// dedupe returns f with each key once: where the key was first, with the
// value it had last, as setting the fields in turn would leave them. It
// reuses f's array.
func (f Fields) dedupe() Fields {
	if len(f) <= dedupeSmall {
		dup := false
		for i := 1; i < len(f) && !dup; i++ {
			for j := range i {
				if f[j].Key == f[i].Key {
					dup = true
					break
				}
			}
		}
		if !dup {
			return f
		}
	}
	at := make(map[string]int, len(f))
	out := f[:0]
	for _, field := range f {
		if i, ok := at[field.Key]; ok {
			out[i].Value = field.Value
			continue
		}
		at[field.Key] = len(out)
		out = append(out, field)
	}
	clear(f[len(out):])
	return out
}

// sorted returns the fields in the order encoding/json writes a map's
// keys (sorted), each key once with the value Lookup gives. It is f
// itself when f is in that order already.
func (f Fields) sorted() Fields {
	inOrder := true
	for i := 1; i < len(f) && inOrder; i++ {
		inOrder = f[i-1].Key < f[i].Key // a repeated key is not in order
	}
	if inOrder {
		return f
	}
	s := slices.Clone(f)
	slices.SortStableFunc(s, func(a, b Field) int { return strings.Compare(a.Key, b.Key) })
	out := s[:0]
	for i, field := range s {
		if i+1 < len(s) && s[i+1].Key == field.Key {
			continue // the last one wins
		}
		out = append(out, field)
	}
	return out
}

// MarshalJSON implements json.Marshaler: a JSON object, its keys in
// sorted order and each value compacted, or null for nil Fields, as
// encoding/json writes a map[string]json.RawMessage. HTML's <, > and &
// are left to the encoder, which escapes them (or not) as it did in the
// map. A value that is not valid JSON is an error; a nil value is null.
func (f Fields) MarshalJSON() ([]byte, error) {
	if f == nil {
		return []byte("null"), nil
	}
	n := 2
	for _, field := range f {
		n += len(field.Key) + len(field.Value) + 8
	}
	var b bytes.Buffer
	b.Grow(n)
	b.WriteByte('{')
	for i, field := range f.sorted() {
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(jsonstr.Append(b.AvailableBuffer(), field.Key, false))
		b.WriteByte(':')
		if field.Value == nil {
			b.WriteString("null")
			continue
		}
		if err := json.Compact(&b, field.Value); err != nil {
			return nil, err
		}
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// errBadData reports segment data that is not valid JSON, given to
// Fields.UnmarshalJSON other than by encoding/json (which checks first).
var errBadData = errors.New("onebot: segment data is not valid JSON")

// UnmarshalJSON implements json.Unmarshaler, as encoding/json decodes a
// map[string]json.RawMessage: null makes f nil; an object's members are
// added to those f has (as a map's would be), a repeated key's last value
// winning; anything else is an error. The values are copied.
func (f *Fields) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if !json.Valid(b) {
		return errBadData
	}
	switch b[0] {
	case 'n':
		*f = nil
		return nil
	case '{':
	default:
		return &json.UnmarshalTypeError{Value: jsonKind(b[0]), Type: reflect.TypeFor[Fields]()}
	}
	count, size := 0, 0
	for _, value := range members(b) {
		count++
		size += len(value)
	}
	out := slices.Grow(*f, count)
	if out == nil {
		out = Fields{} // {} is an empty object, not null
	}
	// The values share one buffer, each capped at its end so none grows
	// into the next.
	buf := make([]byte, 0, size)
	for key, value := range members(b) {
		start := len(buf)
		buf = append(buf, value...)
		out = append(out, Field{Key: decodeKey(key), Value: buf[start:len(buf):len(buf)]})
	}
	*f = out.dedupe()
	return nil
}

// decodeKey is the string the JSON string key (quotes included) stands
// for, as encoding/json decodes it.
func decodeKey(key []byte) string {
	k := key[1 : len(key)-1]
	if bytes.IndexByte(k, '\\') < 0 && utf8.Valid(k) {
		return intern(k)
	}
	var s string
	_ = json.Unmarshal(key, &s) // valid JSON: checked whole
	return s
}

// jsonKind names the kind of JSON value that starts with c, as
// json.UnmarshalTypeError does.
func jsonKind(c byte) string {
	switch c {
	case '"':
		return "string"
	case '[':
		return "array"
	case 't', 'f':
		return "bool"
	}
	return "number"
}
