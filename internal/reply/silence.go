package reply

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// SilenceFilter passes streamed reply text on while holding back what may
// yet turn out to be a control token (see StripTokens) with its
// decoration: the start of the text until it is known not to be one
// ("**NO_RE…", "<code>HEART…"), and a tail that may become one trailing
// real content ("Sure! NO_", "text **", "HEARTBEAT_OK."). So a live view
// never shows a token or a piece of one, not even "NO" or "**" for a
// moment, and what it shows in the end, for any split of the text, is
// StripTokens of the whole text. Use one filter per model call.
type SilenceFilter struct {
	all  strings.Builder // every piece pushed
	held string
	// started: the start of the text is known not to be a token; held is
	// then the tail.
	started bool
	// shown is the text passed on.
	shown strings.Builder
	// last is the last byte passed on, which tells a standalone token
	// from the end of a longer word.
	last  byte
	found Found
}

// Push adds a streamed piece and returns the text that is safe to show now.
func (f *SilenceFilter) Push(delta string) string {
	f.all.WriteString(delta)
	buf := f.held + delta
	for !f.started {
		buf = strings.TrimLeftFunc(buf, unicode.IsSpace)
		n, _, st := leadingToken(buf, false)
		switch st {
		case matchMore:
			f.held = buf
			return ""
		case matchYes:
			buf = buf[n:]
		default:
			f.started = true
		}
	}
	cut := tailStart(buf, f.last)
	f.held = buf[cut:]
	out := buf[:cut]
	if out != "" {
		f.shown.WriteString(out)
		f.last = out[len(out)-1]
	}
	return out
}

// End closes the call and returns the rest of what it has to show: what
// was held back, less the tokens. silent reports a call whose whole text
// was the silent token (with its decoration, or beside the heartbeat
// token).
func (f *SilenceFilter) End() (rest string, silent bool) {
	text, found := StripTokens(f.all.String())
	f.found = found
	f.held = ""
	shown := f.shown.String()
	if !strings.HasPrefix(text, shown) {
		// Not expected: what was shown is the start of the stripped
		// text. Nothing more is shown rather than something wrong.
		return "", false
	}
	rest = text[len(shown):]
	f.shown.WriteString(rest)
	return rest, text == "" && found.Silent
}

// Found tells which tokens End took out of the call's text.
func (f *SilenceFilter) Found() Found { return f.found }

// tailStart returns the offset in s from which the text may still become
// control tokens ending the reply, with the opening decoration glued
// before them and the whitespace before that: what must not be shown yet.
// That is trailing whitespace, a piece of a token or opening decoration
// (or a piece of it) at the end, and tokens followed by nothing but
// decoration, whitespace, more tokens and such an end. prev is the byte
// shown before s (0 for none).
func tailStart(s string, prev byte) int {
	// An incomplete last character may be whitespace: it waits with the
	// whitespace before it.
	end := len(s)
	if end > 0 && !utf8.FullRuneInString(s[lastRuneStart(s):]) {
		end = lastRuneStart(s)
	}
	cut := len(strings.TrimRightFunc(s[:end], unicode.IsSpace))
	try := func(p int) {
		if at, ok := zoneStart(s, p, prev); ok {
			cut = min(cut, at)
		}
	}
	// A piece of a token at the end.
	for _, t := range controlTokens {
		for k := 1; k < len(t) && k <= len(s); k++ {
			if foldEqual(s[len(s)-k:], t[:k]) {
				try(len(s) - k)
			}
		}
	}
	// Opening decoration at the end, the last piece perhaps incomplete:
	// a token may follow it.
	if lt := strings.LastIndexByte(s, '<'); lt >= 0 {
		if _, st := htmlTag(s[lt:]); st == matchMore {
			end = lt
		}
	}
	if q := openingRun(s, end); q < len(s) {
		before := prev
		if q > 0 {
			before = s[q-1]
		}
		if !(isWordByte(before) && s[q] == '_') {
			cut = min(cut, len(strings.TrimRightFunc(s[:q], unicode.IsSpace)))
		}
	}
	// Whole tokens, each followed by decoration and whitespace up to the
	// next one or to what is held already; found from the last one back,
	// so each stretch between tokens is read once.
	var at []int
	for p := 0; p < len(s); p++ {
		if tokenAt(s, p) != "" {
			at = append(at, p)
		}
	}
	held := cut
	ok := make([]bool, len(at))
	for i := len(at) - 1; i >= 0; i-- {
		x, j := at[i]+len(tokenAt(s, at[i])), i+1
		for {
			for j < len(at) && at[j] < x {
				j++
			}
			if x >= held {
				ok[i] = true
				break
			}
			if j < len(at) && at[j] == x {
				ok[i] = ok[j]
				break
			}
			if r, size := utf8.DecodeRuneInString(s[x:]); unicode.IsSpace(r) {
				x += size
				continue
			}
			n, st := decoration(s[x:], false)
			if st != matchYes {
				ok[i] = st == matchMore
				break
			}
			x += n
		}
	}
	for i, p := range at {
		if ok[i] {
			try(p)
		}
	}
	return cut
}

// lastRuneStart returns where the last (perhaps incomplete) UTF-8
// sequence of s starts.
func lastRuneStart(s string) int {
	for i := len(s) - 1; i >= 0 && i >= len(s)-utf8.UTFMax; i-- {
		if utf8.RuneStart(s[i]) {
			return i
		}
	}
	return len(s) - 1
}
