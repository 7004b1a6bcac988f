package media

import (
	"net/url"
	"strings"
	"unicode"
	"unicode/utf8"
)

// FindLinks returns the http and https URLs in text, in order of first
// appearance and without repeats, at most max of them (all when max is not
// positive). A URL ends at white space, at CJK punctuation (，。！？、；：
// and the closing brackets and quotes among them), at quotes and angle
// brackets, and at a closing ), ] or } that has no opening partner inside
// it, so "(see https://a.example/x)" and "[t](https://a.example)" give
// the bare URL while "https://en.wikipedia.org/wiki/Go_(game)" stays
// whole. Trailing . , ; : ! ? are dropped.
func FindLinks(text string, max int) []string {
	var out []string
	seen := map[string]bool{}
	for text != "" && (max <= 0 || len(out) < max) {
		i := indexScheme(text)
		if i < 0 {
			break
		}
		text = text[i:]
		n := urlEnd(text)
		u := strings.TrimRight(text[:n], ".,;:!?")
		text = text[n:]
		if !validLink(u) || seen[u] {
			continue
		}
		seen[u] = true
		out = append(out, u)
	}
	return out
}

// indexScheme is the index of the first "http://" or "https://" in s,
// in any case, or -1.
func indexScheme(s string) int {
	off := 0
	for {
		i := indexFold(s[off:], "http")
		if i < 0 {
			return -1
		}
		rest := s[off+i+4:]
		if len(rest) > 0 && (rest[0] == 's' || rest[0] == 'S') {
			rest = rest[1:]
		}
		if strings.HasPrefix(rest, "://") {
			return off + i
		}
		off += i + 4
	}
}

// indexFold is strings.Index for an ASCII lower-case needle, ignoring the
// case of s.
func indexFold(s, needle string) int {
	for i := 0; i+len(needle) <= len(s); i++ {
		if strings.EqualFold(s[i:i+len(needle)], needle) {
			return i
		}
	}
	return -1
}

// urlEnd is the length of the URL at the start of s.
func urlEnd(s string) int {
	var paren, bracket, brace int
	for i, r := range s {
		if r == utf8.RuneError || unicode.IsSpace(r) || unicode.IsControl(r) || stopRune(r) {
			return i
		}
		var depth *int
		switch r {
		case '(':
			paren++
		case '[':
			bracket++
		case '{':
			brace++
		case ')':
			depth = &paren
		case ']':
			depth = &bracket
		case '}':
			depth = &brace
		}
		if depth != nil {
			if *depth == 0 {
				return i
			}
			*depth--
		}
	}
	return len(s)
}

// stopRune reports runes that never belong to a URL in chat text.
func stopRune(r rune) bool {
	switch r {
	case '"', '\'', '<', '>', '`', '\\', '^', '|':
		return true
	}
	if r < 0x80 {
		return false
	}
	switch {
	case r >= 0x3000 && r <= 0x303F: // CJK symbols and punctuation: 、。「」『』【】〈〉《》
		return true
	case r >= 0xFF01 && r <= 0xFF0F, r >= 0xFF1A && r <= 0xFF20,
		r >= 0xFF3B && r <= 0xFF40, r >= 0xFF5B && r <= 0xFF65: // full-width punctuation
		return true
	case r >= 0x2010 && r <= 0x206F: // general punctuation: dashes, “”‘’, …
		return true
	case r == 0xFE50 || (r >= 0xFE30 && r <= 0xFE6F): // CJK compatibility and small forms
		return true
	}
	return false
}

// validLink reports whether u parses as an http(s) URL with a host.
func validLink(u string) bool {
	p, err := url.Parse(u)
	if err != nil || p.Host == "" {
		return false
	}
	s := strings.ToLower(p.Scheme)
	return s == "http" || s == "https"
}
