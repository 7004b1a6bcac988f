package media

import (
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestFindLinks(t *testing.T) {
	for _, c := range []struct {
		text string
		max  int
		want []string
	}{
		{"看看这个https://example.com/a?b=1，很好玩。", 0, []string{"https://example.com/a?b=1"}},
		{"链接：http://a.example/x。还有 https://b.example/y！", 0, []string{"http://a.example/x", "https://b.example/y"}},
		{"(see https://a.example/x).", 0, []string{"https://a.example/x"}},
		{"[t](https://a.example/p)", 0, []string{"https://a.example/p"}},
		{"https://en.wikipedia.org/wiki/Go_(game), ok", 0, []string{"https://en.wikipedia.org/wiki/Go_(game)"}},
		{"<https://a.example/q>", 0, []string{"https://a.example/q"}},
		{`"https://a.example/q"`, 0, []string{"https://a.example/q"}},
		{"「https://a.example/中文路径」【https://b.example】", 0, []string{"https://a.example/中文路径", "https://b.example"}},
		{"（https://a.example/z）", 0, []string{"https://a.example/z"}},
		{"end https://a.example/x?!;:,.", 0, []string{"https://a.example/x"}},
		{"dup https://a.example https://a.example https://b.example", 0, []string{"https://a.example", "https://b.example"}},
		{"HTTPS://A.example/Up", 0, []string{"HTTPS://A.example/Up"}},
		{"https://a.example/1 https://a.example/2 https://a.example/3", 2, []string{"https://a.example/1", "https://a.example/2"}},
		{"ftp://a.example file:///etc http:// https://", 0, nil},
		{"httpx://a https//a http:/a", 0, nil},
		{"no links here", 0, nil},
		{"https://a.example\nhttps://b.example\thttps://c.example", 0, []string{"https://a.example", "https://b.example", "https://c.example"}},
	} {
		got := FindLinks(c.text, c.max)
		if !slices.Equal(got, c.want) {
			t.Errorf("FindLinks(%q, %d) = %q, want %q", c.text, c.max, got, c.want)
		}
	}
}

func FuzzFindLinks(f *testing.F) {
	f.Add("看看https://example.com/a?b=1，很好玩。", 3)
	f.Add("(https://a.example/x_(y)) [z](http://b.example)", 1)
	f.Add("http://\xff\xfe https://a.example/\xe4\xb8", 0)
	f.Fuzz(func(t *testing.T, text string, max int) {
		got := FindLinks(text, max)
		if max > 0 && len(got) > max {
			t.Fatalf("%d links for max %d", len(got), max)
		}
		seen := map[string]bool{}
		for _, l := range got {
			if !utf8.ValidString(l) {
				t.Fatalf("invalid UTF-8: %q", l)
			}
			if seen[l] {
				t.Fatalf("repeated %q", l)
			}
			seen[l] = true
			lower := strings.ToLower(l)
			if !strings.HasPrefix(lower, "http://") && !strings.HasPrefix(lower, "https://") {
				t.Fatalf("not a web link: %q", l)
			}
			if strings.ContainsFunc(l, func(r rune) bool { return r == ' ' || r == '\n' || r == '，' || r == '。' }) {
				t.Fatalf("a link spans a stop: %q", l)
			}
			if !strings.Contains(text, l) {
				t.Fatalf("%q is not in the text", l)
			}
		}
	})
}
