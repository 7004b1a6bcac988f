package onebot

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
)

func TestChunkText(t *testing.T) {
	tests := []struct {
		name  string
		text  string
		limit int
		want  []string
	}{
		{"fits whole with newlines", "a\nb\nc", 10, []string{"a\nb\nc"}},
		{"whitespace only", " \n\t ", 10, nil},
		{"break after the last newline", "line one\nline two\nline three", 20, []string{"line one\nline two\n", "line three"}},
		{"break at the limit", "abcdefghij", 4, []string{"abcd", "efgh", "ij"}},
		{"characters, not bytes", "你好世界你好", 4, []string{"你好世界", "你好"}},
		{"never inside a CQ code", "hi [CQ:at,qq=123] there", 8, []string{"hi ", "[CQ:at,qq=123]", " there"}},
		{"an unclosed code is text", "[CQ:abcdefgh", 5, []string{"[CQ:a", "bcdef", "gh"}},
		{"a code longer than the limit stays whole", "[CQ:image,file=abcdefghij]x", 5, []string{"[CQ:image,file=abcdefghij]", "x"}},
	}
	for _, tt := range tests {
		if diff := cmp.Diff(tt.want, chunkText(tt.text, tt.limit)); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tt.name, diff)
		}
	}
}

func FuzzChunkText(f *testing.F) {
	f.Add("hi [CQ:at,qq=1] there\nnext", 5)
	f.Add("[CQ:abcdefgh", 5)
	f.Fuzz(func(t *testing.T, text string, limit int) {
		if limit < 1 || limit > 10000 || !utf8.ValidString(text) {
			return
		}
		chunks := chunkText(text, limit)
		joined := strings.Join(chunks, "")
		if strings.TrimSpace(text) != "" && strings.TrimSpace(joined) == "" {
			t.Fatalf("text lost: %q", text)
		}
		if !strings.Contains(text, strings.TrimSpace(joined)) && len(chunks) == 1 {
			t.Fatalf("chunk %q not from %q", joined, text)
		}
		if joined != text && strings.TrimSpace(joined) != strings.TrimSpace(text) && len(chunks) > 0 {
			// Only whitespace-only chunks may be dropped.
			if strings.Join(strings.Fields(joined), "") != strings.Join(strings.Fields(text), "") {
				t.Fatalf("chunks %q lose text of %q", chunks, text)
			}
		}
	})
}
