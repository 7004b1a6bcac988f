package wire

import (
	"bytes"
	"strings"
	"unicode/utf8"
)

// DefaultMaxChars is the most characters of a message's text Normalize
// keeps when given no limit; it also bounds the messages read back from
// history, quotes and forwards.
const DefaultMaxChars = 20000

// textPrefix is the text of a text segment cut to limit characters, and
// whether it was cut. Only the part kept is decoded.
func textPrefix(s Segment, limit int) (string, bool) {
	raw := bytes.TrimSpace(s.Data.Get("text"))
	if len(raw) > 0 && raw[0] == '"' {
		end := stringPrefix(raw, limit)
		if end < 0 {
			return s.Str("text"), false // it fits
		}
		prefix := append(raw[:end:end], '"') // a copy of the part kept
		return Segment{Data: Fields{{Key: "text", Value: prefix}}}.Str("text"), true
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
