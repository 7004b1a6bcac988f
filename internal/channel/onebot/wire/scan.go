package wire

import (
	"bytes"
	"encoding/json"
	"iter"
)

// A few reads of JSON that a decoder has already validated: the members
// of an object and the elements of an array, as sub-slices of the input.
// A huge message is read through them, so its text is never copied whole
// (see Event.Normalize). On input that is not valid JSON they stop early;
// they never panic.

// isSpace reports whether c is JSON white space.
func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// skipSpace returns the index of the first byte at or after i that is not
// JSON white space.
func skipSpace(b []byte, i int) int {
	for i < len(b) && isSpace(b[i]) {
		i++
	}
	return i
}

// skipString returns the index just past the JSON string that starts at
// b[i], a quote; -1 when it does not end.
func skipString(b []byte, i int) int {
	for j := i + 1; j < len(b); j++ {
		switch b[j] {
		case '\\':
			j++
		case '"':
			return j + 1
		}
	}
	return -1
}

// skipValue returns the index just past the JSON value that starts at
// b[i]; -1 when there is none.
func skipValue(b []byte, i int) int {
	if i >= len(b) {
		return -1
	}
	switch b[i] {
	case '"':
		return skipString(b, i)
	case '{', '[':
		depth := 0
		for j := i; j < len(b); j++ {
			switch b[j] {
			case '"':
				if j = skipString(b, j); j < 0 {
					return -1
				}
				j-- // the loop steps past the closing quote
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return j + 1
				}
			}
		}
		return -1
	case ',', ':', '}', ']':
		return -1
	}
	j := i
	for j < len(b) && !isSpace(b[j]) && b[j] != ',' && b[j] != ':' && b[j] != '}' && b[j] != ']' {
		j++
	}
	return j
}

// elements reads the elements of a JSON array one at a time.
type elements struct {
	b []byte
	i int // where the next element starts; len(b) when there is none
}

// newElements starts reading the array b (nothing, if b is not one).
func newElements(b []byte) elements {
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '[' {
		return elements{}
	}
	return elements{b: b, i: skipSpace(b, i+1)}
}

// next returns the next element, false when there is none.
func (e *elements) next() ([]byte, bool) {
	if e.i >= len(e.b) || e.b[e.i] == ']' {
		return nil, false
	}
	end := skipValue(e.b, e.i)
	if end < 0 {
		e.i = len(e.b)
		return nil, false
	}
	elem := e.b[e.i:end]
	if e.i = skipSpace(e.b, end); e.i < len(e.b) && e.b[e.i] == ',' {
		e.i = skipSpace(e.b, e.i+1)
	}
	return elem, true
}

// members yields the members of the JSON object b: each key as the JSON
// string it is written as (quotes and escapes included), and its value.
func members(b []byte) iter.Seq2[[]byte, []byte] {
	return func(yield func(key, value []byte) bool) {
		i := skipSpace(b, 0)
		if i >= len(b) || b[i] != '{' {
			return
		}
		for i = skipSpace(b, i+1); i < len(b) && b[i] == '"'; {
			kend := skipString(b, i)
			if kend < 0 {
				return
			}
			key := b[i:kend]
			if i = skipSpace(b, kend); i >= len(b) || b[i] != ':' {
				return
			}
			i = skipSpace(b, i+1)
			vend := skipValue(b, i)
			if vend < 0 || !yield(key, b[i:vend]) {
				return
			}
			if i = skipSpace(b, vend); i < len(b) && b[i] == ',' {
				i = skipSpace(b, i+1)
			}
		}
	}
}

// keyIs reports whether the JSON string key names name: exactly, or with
// fold the way encoding/json matches a struct field (ignoring case).
func keyIs(key []byte, name string, fold bool) bool {
	k := key[1 : len(key)-1]
	if bytes.IndexByte(k, '\\') >= 0 {
		var s string
		if json.Unmarshal(key, &s) != nil {
			return false
		}
		k = []byte(s)
	}
	if fold {
		return bytes.EqualFold(k, []byte(name))
	}
	return string(k) == name
}

// member returns the value of the last member of the JSON object b that
// encoding/json would decode into a struct field named name (the last one
// wins there too); nil when there is none.
func member(b []byte, name string) []byte {
	var v []byte
	for key, value := range members(b) {
		if keyIs(key, name, true) {
			v = value
		}
	}
	return v
}
