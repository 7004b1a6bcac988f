package reply

import (
	"slices"
	"testing"

	"github.com/pincerbot/pincer/internal/msg"
)

func TestSplitMedia(t *testing.T) {
	for _, tt := range []struct {
		name, in, rest string
		refs           []string
	}{
		{"none", "just text", "just text", nil},
		{"caption and image", "Here is the chart.\nMEDIA: /ws/chart.png", "Here is the chart.", []string{"/ws/chart.png"}},
		{"media only", "MEDIA: `/ws/a.pdf`", "", []string{"/ws/a.pdf"}},
		{"indented, quoted, repeated", "  MEDIA: \"/ws/a b.png\"\nok\nMEDIA: </ws/a b.png>", "ok", []string{"/ws/a b.png"}},
		{"url and file uri", "MEDIA: https://example.com/x.jpg?s=1\nMEDIA: file:///tmp/y.mp3", "", []string{"https://example.com/x.jpg?s=1", "file:///tmp/y.mp3"}},
		{"in a fence it is an example", "Write:\n```\nMEDIA: /path\n```", "Write:\n```\nMEDIA: /path\n```", nil},
		{"mid-line is text", "say MEDIA: /x.png here", "say MEDIA: /x.png here", nil},
		{"lower case is text", "media: /x.png", "media: /x.png", nil},
		{"empty directive is text", "MEDIA:", "MEDIA:", nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			rest, refs := SplitMedia(tt.in)
			if rest != tt.rest || !slices.Equal(refs, tt.refs) {
				t.Errorf("SplitMedia(%q) = %q, %q; want %q, %q", tt.in, rest, refs, tt.rest, tt.refs)
			}
		})
	}
}

func FuzzSplitMedia(f *testing.F) {
	f.Add("a\nMEDIA: /x.png\n```\nMEDIA: y\n```")
	f.Add("MEDIA:``")
	f.Fuzz(func(t *testing.T, s string) {
		rest, refs := SplitMedia(s)
		if len(rest) > len(s) {
			t.Fatalf("rest longer than input")
		}
		for _, r := range refs {
			if r == "" {
				t.Fatalf("empty ref from %q", s)
			}
			_ = msg.MediaKindOf(r)
		}
	})
}
