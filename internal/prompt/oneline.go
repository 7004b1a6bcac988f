package prompt

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// LineBreak is what OneLine writes for a line break.
const LineBreak = " ↵ "

// OneLine renders a text that must stay on one line of a block — a quoted
// message, a node of a merged forward — with each run of line breaks (and
// the spaces around it) shown as LineBreak. A line of the text then never
// starts a line of the block, so it cannot read as another node, another
// speaker, the block's end or what follows the block. Every line break
// Unicode knows counts (CR, LF, VT, FF, NEL, U+2028, U+2029).
func OneLine(s string) string {
	s = strings.TrimSpace(s)
	if strings.IndexFunc(s, isBreak) < 0 {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	held := -1     // where the spaces not yet written start in s, or -1
	broke := false // a line break among them
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if unicode.IsSpace(r) {
			if held < 0 {
				held = i
			}
			broke = broke || isBreak(r)
			i += size
			continue
		}
		if held >= 0 {
			if broke {
				b.WriteString(LineBreak)
			} else {
				b.WriteString(s[held:i])
			}
			held, broke = -1, false
		}
		b.WriteString(s[i : i+size]) // as it was, valid or not
		i += size
	}
	return b.String()
}

func isBreak(r rune) bool {
	switch r {
	case '\n', '\r', '\v', '\f', '\u0085', '\u2028', '\u2029':
		return true
	}
	return false
}
