package reply

import (
	"strings"
	"testing"
)

func TestSilenceFilter(t *testing.T) {
	for _, tt := range []struct {
		name   string
		deltas []string
		shown  []string // what each Push and then End returned
		silent bool
	}{
		{"the token alone never shows", []string{"NO", "_RE", "PLY"}, []string{"", "", "", ""}, true},
		{"with whitespace and any case", []string{" \nno_re", "ply\n"}, []string{"", "", ""}, true},
		{"a trailing token is held, then dropped", []string{"Sure!", " NO_", "REPLY"}, []string{"Sure!", "", "", ""}, false},
		{"a repeated token too", []string{"Hi NO_REPLY", " NO_REPLY "}, []string{"Hi", "", ""}, false},
		{"right after CJK text", []string{"好的", "NO_REPLY"}, []string{"好的", "", ""}, false},
		{"a token in the middle is text", []string{"Please NO_REPLY", " to this"}, []string{"Please", " NO_REPLY to this", ""}, false},
		{"a word that only starts like it", []string{"I said no", "thing"}, []string{"I said", " nothing", ""}, false},
		{"a prefix at the end is released", []string{"I said no"}, []string{"I said", " no"}, false},
		{"part of a longer word", []string{"Sure XNO_RE", "PLY"}, []string{"Sure XNO_RE", "PLY", ""}, false},
		{"trailing whitespace waits for more", []string{"a ", "b"}, []string{"a", " b", ""}, false},
		{"trailing whitespace after punctuation waits", []string{"a. ", "b"}, []string{"a.", " b", ""}, false},
		{"leading whitespace is not shown", []string{"\n\n", "hi"}, []string{"", "hi", ""}, false},
		// Decorated tokens: no mark, tag or punctuation of theirs shows.
		{"bold token alone", []string{"**", "NO_", "REPLY"}, []string{"", "", "", ""}, true},
		{"bold token after text", []string{"text *", "*NO_RE", "PLY"}, []string{"text", "", "", ""}, false},
		{"a punctuated heartbeat token", []string{"HEARTBEAT_", "OK", "."}, []string{"", "", "", ""}, false},
		{"a bold heartbeat token", []string{"**HEARTBEAT_OK*", "*"}, []string{"", "", ""}, false},
		{"a token in a code tag, then content", []string{"<co", "de>HEARTBEAT_OK</co", "de> all", " good"}, []string{"", "", "all", " good", ""}, false},
		{"a token glued to the text after it", []string{"NO_REPLY", "The user", " is saying"}, []string{"", "The user", " is saying", ""}, false},
		{"a token then an emoji", []string{"NO_REPLY", " 👍"}, []string{"", "👍", ""}, false},
		{"a token then a word", []string{"NO_REPLY ", "ok"}, []string{"", "ok", ""}, false},
		{"bold text is held only until it is text", []string{"**", "Bold** text"}, []string{"", "**Bold** text", ""}, false},
		{"a wide space split before a trailing token", []string{"ok NO_\xe3", "\x80\x80NO_REPLY"}, []string{"ok NO_", "", ""}, false},
		{"a token in a code fence", []string{"```\nNO_", "REPLY\n``", "`"}, []string{"", "", "", ""}, true},
		{"a name that starts with the token", []string{"NO_REPLY", "_TOKEN is it"}, []string{"", "NO_REPLY_TOKEN is it", ""}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var f SilenceFilter
			var got []string
			for _, d := range tt.deltas {
				got = append(got, f.Push(d))
			}
			rest, silent := f.End()
			got = append(got, rest)
			if strings.Join(got, "\x00") != strings.Join(tt.shown, "\x00") || silent != tt.silent {
				t.Errorf("got %q silent %v, want %q silent %v", got, silent, tt.shown, tt.silent)
			}
		})
	}
}

// FuzzSilenceFilter: however the text is split, what the filter shows is
// StripTokens of the whole text, so no token that starts or ends the reply
// ever shows, not even for a moment, and what it shows at any time is the
// start of what it shows in the end.
func FuzzSilenceFilter(f *testing.F) {
	for _, s := range []string{
		"Sure! NO_REPLY", "NO_REPLY", "NO_REPLY NO_REPLY", "hello no_reply world", "  \n",
		"**NO_REPLY", "text **NO_REPLY", "HEARTBEAT_OK.", "NO_REPLYThe user is saying", "NO_REPLY 👍",
		"NO_REPLY ok", "**HEARTBEAT_OK**", "<code>HEARTBEAT_OK</code> all good", "Please NO_REPLY to this",
		"「好的」NO_REPLY", "x <b title=\"NO_REPLY\">NO_REPLY", "NO_REPLY_NO_REPLY", "a_ *NO_REPLY", "```\nNO_REPLY\n```",
	} {
		f.Add(s, uint8(3))
	}
	f.Fuzz(func(t *testing.T, text string, step uint8) {
		n := int(step%7) + 1
		var f SilenceFilter
		var shown strings.Builder
		for i := 0; i < len(text); i += n {
			shown.WriteString(f.Push(text[i:min(i+n, len(text))]))
		}
		rest, silent := f.End()
		shown.WriteString(rest)
		want, found := StripTokens(text)
		if shown.String() != want {
			t.Errorf("shown %q, want %q", shown.String(), want)
		}
		if silent != (want == "" && found.Silent) {
			t.Errorf("silent %v for %q", silent, text)
		}
	})
}

// tokenVocabulary are the pieces FuzzSilenceFilterPieces builds replies of:
// tokens, their pieces, decoration, words and whitespace.
var tokenVocabulary = []string{
	"NO_REPLY", "HEARTBEAT_OK", "no_reply", "NO_", "REPLY", "HEART", "BEAT_OK", "_", "__", "*", "**", "~~", "`", "```",
	"<code>", "</code>", "<b>", "</b>", "<", ">", "<span class=\"x\">", ".", "!", ":", "。", "「", "」", "(", ")", "\"",
	" ", "\n", "\n\n", "\u3000", "ok", "X", "2", "好的", "👍", "Please", "The",
}

// FuzzSilenceFilterPieces: replies made of tokens, decoration and words,
// split anywhere, show what StripTokens of the whole reply is.
func FuzzSilenceFilterPieces(f *testing.F) {
	f.Add([]byte{5, 0, 32}, uint8(1))
	f.Add([]byte{34, 32, 9, 0}, uint8(2))
	f.Add([]byte{14, 1, 15, 32, 34}, uint8(3))
	f.Fuzz(func(t *testing.T, picks []byte, step uint8) {
		var b strings.Builder
		for _, p := range picks {
			b.WriteString(tokenVocabulary[int(p)%len(tokenVocabulary)])
		}
		text := b.String()
		n := int(step%11) + 1
		var f SilenceFilter
		var shown strings.Builder
		for i := 0; i < len(text); i += n {
			shown.WriteString(f.Push(text[i:min(i+n, len(text))]))
		}
		rest, _ := f.End()
		shown.WriteString(rest)
		if want, _ := StripTokens(text); shown.String() != want {
			t.Errorf("%q: shown %q, want %q", text, shown.String(), want)
		}
	})
}
