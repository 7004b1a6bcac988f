// Package jsonstr appends strings to a buffer as JSON strings, byte for
// byte as encoding/json writes them, for the encoders written by hand on
// pincer's hot paths (a message's log entry, a reply's send) where
// encoding/json's reflection was most of the cost.
package jsonstr

import "unicode/utf8"

const hex = "0123456789abcdef"

// Append appends s to dst as a JSON string, as encoding/json writes it:
// quotes, backslashes and control characters escaped (\b, \f, \n, \r and
// \t by name, the rest as \u00XX), invalid UTF-8 as \ufffd, U+2028 and
// U+2029 escaped, and, with html (json.Marshal's default, an Encoder's
// unless SetEscapeHTML(false)), <, > and & as \u003c, \u003e and \u0026.
func Append(dst []byte, s string, html bool) []byte {
	safe := &plain
	if html {
		safe = &plainHTML
	}
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		b := s[i]
		if safe[b] {
			i++
			continue
		}
		if b < utf8.RuneSelf {
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
		// Three bytes, the most of Chinese text (and its full-width
		// punctuation), checked here without decoding: a lead byte E1–EC or
		// EE–EF with two continuation bytes is always a valid rune, and
		// never U+2028 or U+2029 (E2 80 A8, E2 80 A9), which E2 may start.
		if b >= 0xe1 && b <= 0xef && b != 0xed && b != 0xe2 && i+2 < len(s) && s[i+1]&0xc0 == 0x80 && s[i+2]&0xc0 == 0x80 {
			i += 3
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

// plain and plainHTML tell the bytes written as they are: printable
// ASCII but the quote and the backslash (and, for plainHTML, <, > and &).
// A byte of a multi-byte rune is not in them.
var plain, plainHTML = func() (p, h [256]bool) {
	for b := 0x20; b < utf8.RuneSelf; b++ {
		p[b] = b != '"' && b != '\\'
		h[b] = p[b] && b != '<' && b != '>' && b != '&'
	}
	return p, h
}()
