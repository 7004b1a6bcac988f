package reply

import (
	"strings"
	"testing"
	"unicode"
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
		{"a token in the middle is text", []string{"NO_REPLY", " is a token"}, []string{"", "NO_REPLY is a token", ""}, false},
		{"a word that only starts like it", []string{"I said no", "thing"}, []string{"I said", " nothing", ""}, false},
		{"a prefix at the end is released", []string{"I said no"}, []string{"I said", " no"}, false},
		{"part of a longer word", []string{"XNO_RE", "PLY"}, []string{"XNO_RE", "PLY", ""}, false},
		{"trailing whitespace waits for more", []string{"a ", "b"}, []string{"a", " b", ""}, false},
		{"trailing whitespace after punctuation waits", []string{"a. ", "b"}, []string{"a.", " b", ""}, false},
		{"leading whitespace is not shown", []string{"\n\n", "hi"}, []string{"", "hi", ""}, false},
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
// what a whole-message delivery of it would send, and the token never
// leaks.
func FuzzSilenceFilter(f *testing.F) {
	f.Add("Sure! NO_REPLY", uint8(3))
	f.Add("NO_REPLY", uint8(1))
	f.Add("NO_REPLY NO_REPLY", uint8(5))
	f.Add("hello no_reply world", uint8(2))
	f.Add("  \n", uint8(1))
	f.Fuzz(func(t *testing.T, text string, step uint8) {
		n := int(step%7) + 1
		var f SilenceFilter
		var shown strings.Builder
		for i := 0; i < len(text); i += n {
			shown.WriteString(f.Push(text[i:min(i+n, len(text))]))
		}
		rest, silent := f.End()
		shown.WriteString(rest)
		want := StripSilentToken(text)
		if strings.TrimSpace(want) == "" {
			want = ""
		}
		want = strings.TrimLeftFunc(want, unicode.IsSpace)
		if shown.String() != want {
			t.Errorf("shown %q, want %q", shown.String(), want)
		}
		if stripped := StripSilentToken(text); silent != (stripped != text && strings.TrimSpace(stripped) == "") {
			t.Errorf("silent %v for %q", silent, text)
		}
	})
}
