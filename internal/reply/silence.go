package reply

import (
	"strings"
	"unicode"
)

// SilenceFilter passes streamed reply text on while holding back a tail
// that may yet turn out to be the silent token: the whole text so far, or a
// token trailing real content ("Sure! NO_REPLY"). So a live view never
// shows "NO_REPLY", not even as "NO" for a moment, and a reply that ends
// with the token shows only its content. Use one filter per model call.
type SilenceFilter struct {
	held   string
	passed bool
	// last is the last byte passed on, which tells a standalone token
	// from the end of a longer word.
	last byte
}

// Push adds a streamed piece and returns the text that is safe to show now.
func (f *SilenceFilter) Push(delta string) string {
	buf := f.held + delta
	cut := silentTail(buf, f.last)
	// A token may be repeated ("NO_REPLY NO_REPLY"): hold every one.
	for cut < len(buf) {
		next := silentTail(buf[:cut], f.last)
		if next == cut {
			break
		}
		cut = next
	}
	f.held = buf[cut:]
	out := buf[:cut]
	if !f.passed {
		// Nothing shown yet: leading whitespace waits with the rest.
		out = strings.TrimLeftFunc(out, unicode.IsSpace)
		if out == "" {
			f.held = buf
			return ""
		}
	} else if out == "" {
		return ""
	}
	f.passed = true
	f.last = out[len(out)-1]
	return out
}

// End closes the call and returns what was still held back, unless it is
// the silent token (with its surrounding whitespace), which is dropped.
// silent reports a call whose whole text was the token.
func (f *SilenceFilter) End() (rest string, silent bool) {
	rest, f.held = f.held, ""
	if stripped := StripSilentToken(rest); stripped != rest && strings.TrimSpace(stripped) == "" {
		return "", !f.passed
	} else {
		rest = stripped
	}
	if !f.passed {
		rest = strings.TrimLeftFunc(rest, unicode.IsSpace)
	}
	if rest != "" {
		f.passed = true
	}
	return rest, false
}

// silentTail returns the offset in s from which the text may still become
// a standalone silent token at the end: trailing whitespace (a token may
// follow it), and a trailing word that is a prefix of the token
// (case-insensitive) and stands alone, with the whitespace before it. prev
// is the byte shown before s (0 for none).
func silentTail(s string, prev byte) int {
	end := len(strings.TrimRightFunc(s, unicode.IsSpace))
	start := end
	for start > 0 {
		b := s[start-1]
		if !(b == '_' || b >= 'A' && b <= 'Z' || b >= 'a' && b <= 'z') {
			break
		}
		start--
	}
	word := s[start:end]
	if word == "" {
		return end // only whitespace may follow: hold it
	}
	if len(word) > len(SilentToken) || !strings.EqualFold(word, SilentToken[:len(word)]) {
		return end // a token may still follow the whitespace
	}
	before := prev
	if start > 0 {
		before = s[start-1]
	}
	if isWordByte(before) {
		return end // "XNO" is a word of its own, not the token
	}
	return len(strings.TrimRightFunc(s[:start], unicode.IsSpace))
}
