package reply

import (
	"testing"

	"github.com/pincerbot/pincer/internal/msg"
)

func TestNormalize(t *testing.T) {
	long := make([]rune, HeartbeatAckMaxChars+1)
	for i := range long {
		long[i] = 'x'
	}
	tests := []struct {
		name     string
		n        Normalizer
		in       msg.Outbound
		want     string
		wantSkip SkipReason
	}{
		{"plain", Normalizer{}, msg.Outbound{Text: "hi"}, "hi", ""},
		{"silent", Normalizer{}, msg.Outbound{Text: " NO_REPLY "}, "", SkipSilent},
		{"silent then heartbeat", Normalizer{}, msg.Outbound{Text: "NO_REPLY HEARTBEAT_OK"}, "", SkipSilent},
		{"silent twice", Normalizer{}, msg.Outbound{Text: "NO_REPLY NO_REPLY"}, "", SkipSilent},
		{"silent suffix is a real reply", Normalizer{}, msg.Outbound{Text: "Here you go. NO_REPLY"}, "Here you go.", ""},
		{"silent keeps media", Normalizer{}, msg.Outbound{Text: "NO_REPLY", Media: []msg.Media{{URL: "a.ogg"}}}, "", ""},
		{"empty", Normalizer{}, msg.Outbound{Text: " \n"}, "", SkipEmpty},
		{"reasoning suppressed", Normalizer{}, msg.Outbound{Text: "thinking", IsReasoning: true}, "", SkipReasoning},
		{"reasoning allowed", Normalizer{AllowReasoning: true}, msg.Outbound{Text: "thinking", IsReasoning: true}, "thinking", ""},
		{"heartbeat ack", Normalizer{Heartbeat: true}, msg.Outbound{Text: "HEARTBEAT_OK"}, "", SkipHeartbeat},
		{"heartbeat ack with short note", Normalizer{Heartbeat: true}, msg.Outbound{Text: "All quiet. HEARTBEAT_OK"}, "", SkipHeartbeat},
		{"heartbeat token at start", Normalizer{Heartbeat: true}, msg.Outbound{Text: "HEARTBEAT_OK nothing new"}, "", SkipHeartbeat},
		{"heartbeat with a long report", Normalizer{Heartbeat: true}, msg.Outbound{Text: "HEARTBEAT_OK " + string(long)}, string(long), ""},
		{"heartbeat token in the middle is text", Normalizer{Heartbeat: true}, msg.Outbound{Text: "a HEARTBEAT_OK b"}, "a HEARTBEAT_OK b", ""},
		{"stray heartbeat token outside heartbeats", Normalizer{}, msg.Outbound{Text: "Done. HEARTBEAT_OK"}, "Done.", ""},
		{"bare heartbeat token outside heartbeats", Normalizer{}, msg.Outbound{Text: "HEARTBEAT_OK"}, "", SkipEmpty},
		{"decorated silent", Normalizer{}, msg.Outbound{Text: "**NO_REPLY**"}, "", SkipSilent},
		{"a leading silent token is stripped", Normalizer{}, msg.Outbound{Text: "NO_REPLY ok"}, "ok", ""},
		{"a token in the middle is text", Normalizer{}, msg.Outbound{Text: "Please NO_REPLY to this"}, "Please NO_REPLY to this", ""},
		{"punctuated heartbeat ack", Normalizer{Heartbeat: true}, msg.Outbound{Text: "HEARTBEAT_OK."}, "", SkipHeartbeat},
		{"bold heartbeat ack", Normalizer{Heartbeat: true}, msg.Outbound{Text: "**HEARTBEAT_OK**"}, "", SkipHeartbeat},
		{"heartbeat ack in a code tag", Normalizer{Heartbeat: true}, msg.Outbound{Text: "<code>HEARTBEAT_OK</code> all good"}, "", SkipHeartbeat},
		{"heartbeat token in a code tag outside heartbeats", Normalizer{}, msg.Outbound{Text: "<code>HEARTBEAT_OK</code> all good"}, "all good", ""},
		{"prefix", Normalizer{Prefix: "[{provider}/{model} {thinkingLevel}] ", Vars: PrefixVars{Model: "m", Provider: "p", ThinkingLevel: "low"}}, msg.Outbound{Text: "hi"}, "[p/m low] hi", ""},
		{"no prefix on errors", Normalizer{Prefix: "bot: "}, msg.Outbound{Text: "failed", IsError: true}, "failed", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var skipped SkipReason
			n := tt.n
			n.OnSkip = func(r SkipReason, _ msg.Outbound) { skipped = r }
			got, ok := n.Normalize(KindFinal, tt.in)
			if skipped != tt.wantSkip || ok != (tt.wantSkip == "") {
				t.Fatalf("skip = %q ok = %v, want skip %q", skipped, ok, tt.wantSkip)
			}
			if ok && got.Text != tt.want {
				t.Errorf("text = %q, want %q", got.Text, tt.want)
			}
		})
	}
}

// TestNormalizeKeepsRepeatedBlocks: a reply that repeats itself (a song's
// chorus) keeps every block; only a repeated delivery is dropped — a final
// that says again what the blocks said, or a second identical final.
func TestNormalizeKeepsRepeatedBlocks(t *testing.T) {
	var n Normalizer
	for i, text := range []string{"Chorus: la la la", "Verse two", "Chorus: la la la"} {
		if _, ok := n.Normalize(KindBlock, msg.Outbound{Text: text}); !ok {
			t.Errorf("block %d (%q) was dropped", i+1, text)
		}
	}
	if _, ok := n.Normalize(KindFinal, msg.Outbound{Text: "Chorus: la la la\n\nVerse two\nChorus: la la la"}); ok {
		t.Error("a final repeating the streamed blocks must not be delivered again")
	}
	var f Normalizer
	if _, ok := f.Normalize(KindFinal, msg.Outbound{Text: "same"}); !ok {
		t.Fatal("first final dropped")
	}
	if _, ok := f.Normalize(KindFinal, msg.Outbound{Text: " same\n"}); ok {
		t.Error("the same final must be delivered once per turn")
	}
	if _, ok := f.Normalize(KindFinal, msg.Outbound{Text: "other"}); !ok {
		t.Error("a different final must pass")
	}
}

func FuzzNormalize(f *testing.F) {
	f.Add("NO_REPLY", true)
	f.Add("NO_REPLY NO_REPLY", false)
	f.Add("HEARTBEAT_OK NO_REPLY", false)
	f.Add("x HEARTBEAT_OK", false)
	f.Add("<code>HEARTBEAT_OK</code> all good", true)
	f.Add("text **NO_REPLY", false)
	f.Fuzz(func(t *testing.T, text string, heartbeat bool) {
		n := Normalizer{Heartbeat: heartbeat}
		got, ok := n.Normalize(KindFinal, msg.Outbound{Text: text})
		if !ok {
			return
		}
		if rest, found := StripTokens(got.Text); got.Text == "" || found != (Found{}) || rest != got.Text {
			t.Fatalf("Normalize(%q) delivered %q, with a token at an edge", text, got.Text)
		}
	})
}
