package reply

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Tokens the agent uses to talk to the engine rather than to the user.
const (
	// SilentToken, as the whole reply, means "say nothing".
	SilentToken = "NO_REPLY"
	// HeartbeatToken acknowledges a heartbeat with nothing to report.
	HeartbeatToken = "HEARTBEAT_OK"
)

// controlTokens are the tokens recognised at the edges of a reply.
var controlTokens = [...]string{SilentToken, HeartbeatToken}

// Found tells which tokens StripTokens took out of a text.
type Found struct {
	// Silent: a SilentToken.
	Silent bool
	// Heartbeat: a HeartbeatToken.
	Heartbeat bool
}

func (f *Found) add(token string) {
	if token == SilentToken {
		f.Silent = true
	} else {
		f.Heartbeat = true
	}
}

// StripTokens removes the control tokens (NO_REPLY, HEARTBEAT_OK, in any
// case) that start or end text, again and again until none is left,
// together with their decoration: the markdown marks, HTML tags, quotes,
// brackets and punctuation around them ("**NO_REPLY**", "<code>HEARTBEAT_OK
// </code>", "HEARTBEAT_OK.", "「NO_REPLY」"), and the whitespace between
// them and the rest. The rest starts with no whitespace; whitespace ending
// it stays unless a token went with it. A token at the start may be glued to the text
// after it ("NO_REPLYThe user is saying" keeps "The user is saying"). A
// token in the middle of the text is text ("Please NO_REPLY to this"), and
// so is one that is part of a longer word or name ("XNO_REPLY",
// "NO_REPLY_TOKEN", "NO_REPLY2"). When a token went and nothing but
// decoration is left, nothing is.
func StripTokens(text string) (string, Found) {
	var found Found
	text = strings.TrimLeftFunc(text, unicode.IsSpace)
	for {
		before := text
		for {
			n, token, st := leadingToken(text, true)
			if st != matchYes {
				break
			}
			found.add(token)
			text = strings.TrimLeftFunc(text[n:], unicode.IsSpace)
		}
		for {
			at, token, ok := trailingToken(text, 0)
			if !ok {
				break
			}
			found.add(token)
			text = text[:at]
		}
		if text == before {
			break
		}
	}
	if found != (Found{}) && onlyDecoration(text, true) {
		// What is left is the tokens' decoration ("```\nNO_REPLY\n```").
		text = ""
	}
	return text, found
}

// IsSilent reports whether text is nothing but the silent token, more than
// once or beside the heartbeat token perhaps, with its decoration (see
// StripTokens). A real reply that merely ends with the token is not silent.
func IsSilent(text string) bool {
	rest, found := StripTokens(text)
	return rest == "" && found.Silent
}

// OnlyTokens reports whether text is nothing but control tokens: it says
// nothing to the user.
func OnlyTokens(text string) bool {
	rest, found := StripTokens(text)
	return rest == "" && found != Found{}
}

// MaySilence reports whether text, a reply still streaming, could yet turn
// out to say nothing: it is empty, blank, or only a token or a piece of one
// with its decoration so far. Streamed blocks hold back until it cannot, so
// "NO" never leaks as a message of its own.
func MaySilence(text string) bool {
	for {
		text = strings.TrimLeftFunc(text, unicode.IsSpace)
		n, _, st := leadingToken(text, false)
		switch st {
		case matchMore:
			return true
		case matchYes:
			text = text[n:]
		default:
			return false
		}
	}
}

type match int

const (
	matchNo   match = iota // not a token
	matchMore              // the bytes that follow decide
	matchYes
)

// leadingToken reads a control token at the start of s (which starts with
// no whitespace): the decoration and whitespace before it, the token, and
// the decoration glued after it. It returns the length read and the token.
// With final unset s may go on, and what cannot be decided yet is
// matchMore.
func leadingToken(s string, final bool) (int, string, match) {
	i := 0
	for i < len(s) {
		if r, size := utf8.DecodeRuneInString(s[i:]); unicode.IsSpace(r) {
			i += size
			continue
		}
		n, st := decoration(s[i:], final)
		if st == matchMore {
			return 0, "", matchMore
		}
		if st == matchNo {
			break
		}
		i += n
	}
	if i == len(s) {
		if final {
			return 0, "", matchNo
		}
		return 0, "", matchMore
	}
	var token string
	for _, t := range controlTokens {
		rest := s[i:]
		if len(rest) < len(t) {
			if !final && foldEqual(rest, t[:len(rest)]) {
				return 0, "", matchMore
			}
			continue
		}
		if foldEqual(rest[:len(t)], t) {
			token = t
			break
		}
	}
	if token == "" {
		return 0, "", matchNo
	}
	k := i + len(token)
	if k == len(s) {
		if final {
			return k, token, matchYes
		}
		return 0, "", matchMore // "NO_REPLY2" is a name
	}
	switch c := s[k]; {
	case c >= '0' && c <= '9':
		return 0, "", matchNo
	case c == '_':
		u := k
		for u < len(s) && s[u] == '_' {
			u++
		}
		if u == len(s) && !final {
			return 0, "", matchMore
		}
		if u < len(s) && isWordByte(s[u]) {
			return 0, "", matchNo // NO_REPLY_TOKEN
		}
	case isWordByte(c):
		return k, token, matchYes // glued to the text after it
	}
	for k < len(s) {
		n, st := decoration(s[k:], final)
		if st == matchMore {
			return 0, "", matchMore
		}
		if st == matchNo {
			return k, token, matchYes
		}
		k += n
	}
	if final {
		return k, token, matchYes
	}
	return 0, "", matchMore
}

// trailingToken finds the control token that ends s: the first one
// followed by nothing but decoration and whitespace, and standing alone
// (neither it nor the markdown mark glued before it continues a word). It
// returns where the token with its whitespace and the opening decoration
// glued before it starts. prev is the byte before s (0 for none).
func trailingToken(s string, prev byte) (int, string, bool) {
	for p := 0; p < len(s); p++ {
		token := tokenAt(s, p)
		if token == "" {
			continue
		}
		if !onlyDecoration(s[p+len(token):], true) {
			continue
		}
		if at, ok := zoneStart(s, p, prev); ok {
			return at, token, true
		}
	}
	return 0, "", false
}

// tokenAt returns the control token at s[p:], or "".
func tokenAt(s string, p int) string {
	for _, t := range controlTokens {
		if len(s)-p >= len(t) && foldEqual(s[p:p+len(t)], t) {
			return t
		}
	}
	return ""
}

// zoneStart returns where the token at p starts with the opening
// decoration glued before it and the whitespace before that, unless the
// token continues a word: no decoration, or one that starts with '_',
// right after a letter or digit.
func zoneStart(s string, p int, prev byte) (int, bool) {
	q := openingRun(s, p)
	before := prev
	if q > 0 {
		before = s[q-1]
	}
	if isWordByte(before) && (q == p || s[q] == '_') {
		return 0, false
	}
	return len(strings.TrimRightFunc(s[:q], unicode.IsSpace)), true
}

// onlyDecoration reports whether s is nothing but decoration and
// whitespace; with final unset, a piece of decoration may end it.
func onlyDecoration(s string, final bool) bool {
	for i := 0; i < len(s); {
		if r, size := utf8.DecodeRuneInString(s[i:]); unicode.IsSpace(r) {
			i += size
			continue
		}
		n, st := decoration(s[i:], final)
		switch st {
		case matchNo:
			return false
		case matchMore:
			return true
		}
		i += n
	}
	return true
}

// decoration reads one piece of decoration at the start of s: an HTML tag
// (<code>, </b>, <span class="x">), a markdown mark, a quote, a bracket or
// a punctuation mark.
func decoration(s string, final bool) (int, match) {
	c := s[0]
	if c == '<' {
		n, st := htmlTag(s)
		if st == matchYes {
			return n, matchYes
		}
		if st == matchMore && !final {
			return 0, matchMore
		}
		return 1, matchYes // a bare angle bracket
	}
	if c < utf8.RuneSelf {
		if strings.IndexByte(asciiDecoration, c) >= 0 {
			return 1, matchYes
		}
		return 0, matchNo
	}
	if !utf8.FullRuneInString(s) {
		if final {
			return 0, matchNo
		}
		return 0, matchMore
	}
	r, size := utf8.DecodeRuneInString(s)
	if unicode.IsPunct(r) {
		return size, matchYes
	}
	return 0, matchNo
}

// asciiDecoration are the ASCII marks that may decorate a token: markdown
// emphasis, code, strike-through, heading, quote and list marks, quotes,
// brackets and punctuation.
const asciiDecoration = "*_~`#>-+=|\"'()[]{}.,!?;:"

// asciiOpening are the ASCII marks that may open a decoration glued before
// a token that ends a reply ("text **NO_REPLY"): sentence punctuation
// there belongs to the text ("Done.NO_REPLY" keeps "Done.").
const asciiOpening = "*_~`\"'([{<"

// openingRun returns where the opening decoration glued before p starts:
// opening marks, quotes and brackets, and opening HTML tags.
func openingRun(s string, p int) int {
	for p > 0 {
		c := s[p-1]
		if c == '>' {
			lt := strings.LastIndexByte(s[:p-1], '<')
			if lt < 0 || s[lt+1] == '/' {
				return p
			}
			if n, st := htmlTag(s[lt:p]); st != matchYes || n != p-lt {
				return p
			}
			p = lt
			continue
		}
		if c < utf8.RuneSelf {
			if strings.IndexByte(asciiOpening, c) < 0 {
				return p
			}
			p--
			continue
		}
		r, size := utf8.DecodeLastRuneInString(s[:p])
		if !unicode.In(r, unicode.Ps, unicode.Pi) {
			return p
		}
		p -= size
	}
	return p
}

// maxHTMLTag bounds an HTML tag read as decoration.
const maxHTMLTag = 64

// htmlTag reads an HTML tag at the start of s (which starts with '<'):
// <name>, </name>, <name/> or <name attributes>.
func htmlTag(s string) (int, match) {
	j := 1
	if j < len(s) && s[j] == '/' {
		j++
	}
	name := j
	for j < len(s) && j < maxHTMLTag && (isLetter(s[j]) || j > name && s[j] >= '0' && s[j] <= '9') {
		j++
	}
	if j == len(s) {
		return 0, matchMore
	}
	if j == name {
		return 0, matchNo
	}
	switch s[j] {
	case '>':
		return j + 1, matchYes
	case '/':
		if j+1 == len(s) {
			return 0, matchMore
		}
		if s[j+1] == '>' {
			return j + 2, matchYes
		}
	case ' ', '\t', '\n', '\r':
		k := strings.IndexAny(s[j:min(len(s), maxHTMLTag)], "<>")
		switch {
		case k < 0 && len(s) < maxHTMLTag:
			return 0, matchMore
		case k >= 0 && s[j+k] == '>':
			return j + k + 1, matchYes
		}
	}
	return 0, matchNo
}

// foldEqual compares s with an ASCII token, ignoring ASCII case.
func foldEqual(s, token string) bool {
	if len(s) != len(token) {
		return false
	}
	for i := 0; i < len(s); i++ {
		a, b := s[i], token[i]
		if a >= 'a' && a <= 'z' {
			a -= 'a' - 'A'
		}
		if b >= 'a' && b <= 'z' {
			b -= 'a' - 'A'
		}
		if a != b {
			return false
		}
	}
	return true
}

func isWordByte(b byte) bool {
	return b == '_' || b >= '0' && b <= '9' || isLetter(b)
}

func isLetter(b byte) bool { return b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' }
