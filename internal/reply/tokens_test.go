package reply

import (
	"strings"
	"testing"
	"unicode"
)

func TestStripTokens(t *testing.T) {
	const s, h = "silent", "heartbeat"
	for _, tt := range []struct {
		text, want string
		found      string
	}{
		// The token alone, in any case, with whitespace, repeated.
		{"NO_REPLY", "", s},
		{"  no_reply \n", "", s},
		{"NO_REPLY NO_REPLY", "", s},
		{"NO_REPLY HEARTBEAT_OK", "", s + h},
		// Decorated: markdown, HTML, quotes, brackets, punctuation.
		{"**NO_REPLY", "", s},
		{"**NO_REPLY**", "", s},
		{"_NO_REPLY_", "", s},
		{"`NO_REPLY`", "", s},
		{"~~NO_REPLY~~", "", s},
		{"NO_REPLY.", "", s},
		{"「NO_REPLY」", "", s},
		{"(NO_REPLY)", "", s},
		{"<NO_REPLY>", "", s},
		{"<p><b>NO_REPLY</b></p>", "", s},
		{"HEARTBEAT_OK.", "", h},
		{"```\nNO_REPLY\n```", "", s},
		{"NO_REPLY ...", "", s},
		{"**HEARTBEAT_OK**", "", h},
		{"<code>HEARTBEAT_OK</code>", "", h},
		// A token trailing content.
		{"text **NO_REPLY", "text", s},
		{"reasoning**NO_REPLY", "reasoning", s},
		{"Here is a helpful response.\n\nNO_REPLY", "Here is a helpful response.", s},
		{"Sure, done.\nno_reply ", "Sure, done.", s},
		{"interject.NO_REPLY", "interject.", s},
		{"😄 NO_REPLY", "😄", s},
		{"好的NO_REPLY", "好的", s},
		{"(see below) NO_REPLY", "(see below)", s},
		{"Done. HEARTBEAT_OK", "Done.", h},
		// A token leading content, glued to it or not.
		{"NO_REPLYThe user is saying", "The user is saying", s},
		{"NO_REPLY 👍", "👍", s},
		{"NO_REPLY ok", "ok", s},
		{"NO_REPLY: explanation", "explanation", s},
		{"NO_REPLY好的", "好的", s},
		{"<code>HEARTBEAT_OK</code> all good", "all good", h},
		{"HEARTBEAT_OK nothing new", "nothing new", h},
		{"NO_REPLY ok NO_REPLY", "ok", s},
		// Text: a token in the middle, a word or a name that contains one.
		{"Please NO_REPLY to this", "Please NO_REPLY to this", ""},
		{"a HEARTBEAT_OK b", "a HEARTBEAT_OK b", ""},
		{"Sure XNO_REPLY", "Sure XNO_REPLY", ""},
		{"MY_NO_REPLY", "MY_NO_REPLY", ""},
		{"NO_REPLY_TOKEN is the marker", "NO_REPLY_TOKEN is the marker", ""},
		{"NO_REPLY2", "NO_REPLY2", ""},
		{"**Bold** text", "**Bold** text", ""},
		{"NO", "NO", ""},
		{"", "", ""},
		{"  text stays as it was \n", "text stays as it was \n", ""},
	} {
		got, found := StripTokens(tt.text)
		var f string
		if found.Silent {
			f += s
		}
		if found.Heartbeat {
			f += h
		}
		if got != tt.want || f != tt.found {
			t.Errorf("StripTokens(%q) = %q, %q; want %q, %q", tt.text, got, f, tt.want, tt.found)
		}
	}
}

func TestIsSilent(t *testing.T) {
	for text, want := range map[string]bool{
		"NO_REPLY":                     true,
		"  no_reply \n":                true,
		"NO_REPLY.":                    true,
		"**NO_REPLY**":                 true,
		"NO_REPLY HEARTBEAT_OK":        true,
		"I will answer later NO_REPLY": false, // a real reply that ends with the token
		"Please NO_REPLY to this":      false,
		"HEARTBEAT_OK":                 false,
		"NO":                           false,
		"":                             false,
	} {
		if got := IsSilent(text); got != want {
			t.Errorf("IsSilent(%q) = %v, want %v", text, got, want)
		}
	}
}

func TestOnlyTokens(t *testing.T) {
	for text, want := range map[string]bool{"**HEARTBEAT_OK**": true, "NO_REPLY.": true, "ok HEARTBEAT_OK": false, "": false} {
		if got := OnlyTokens(text); got != want {
			t.Errorf("OnlyTokens(%q) = %v, want %v", text, got, want)
		}
	}
}

func TestMaySilence(t *testing.T) {
	for text, want := range map[string]bool{
		"": true, "N": true, " no_rep": true, "NO_REPLY": true, "**NO_RE": true, "<co": true, "NO_REPLY!": true,
		"NO_REPLY ok": false, "Nope": false, "**Bold": false,
	} {
		if got := MaySilence(text); got != want {
			t.Errorf("MaySilence(%q) = %v, want %v", text, got, want)
		}
	}
}

// FuzzStripTokens: StripTokens never panics, is done in one call (nothing
// it leaves starts or ends with a token), and leaves text without tokens
// as it was, less the whitespace before it.
func FuzzStripTokens(f *testing.F) {
	for _, s := range []string{"NO_REPLY", "text **NO_REPLY", "<code>HEARTBEAT_OK</code> all good", "NO_REPLYThe user", "Please NO_REPLY to this", "「NO_REPLY」", "<b title=NO_REPLY>x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		got, found := StripTokens(text)
		if again, more := StripTokens(got); again != got || more != (Found{}) {
			t.Fatalf("StripTokens(%q) = %q, which still strips to %q", text, got, again)
		}
		if found == (Found{}) && got != strings.TrimLeftFunc(text, unicode.IsSpace) {
			t.Fatalf("StripTokens(%q) = %q with no token found", text, got)
		}
		if !strings.Contains(strings.ToUpper(text), SilentToken) && !strings.Contains(strings.ToUpper(text), HeartbeatToken) && found != (Found{}) {
			t.Fatalf("StripTokens(%q) found %+v", text, found)
		}
		if got != strings.TrimLeftFunc(got, unicode.IsSpace) {
			t.Fatalf("StripTokens(%q) = %q, not trimmed", text, got)
		}
	})
}
