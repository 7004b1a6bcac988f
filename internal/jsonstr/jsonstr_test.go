package jsonstr

import (
	"bytes"
	"encoding/json"
	"testing"
)

// FuzzAppend: Append writes any string, valid UTF-8 or not, as the very
// bytes encoding/json writes for it, with HTML escaping on and off.
func FuzzAppend(f *testing.F) {
	for _, s := range []string{"", "plain", "中文，全角标点。", `"quoted" \back\`, "\x00\x01\b\f\n\r\t\x1f\x7f",
		"<a href='x'>&amp;</a>", "bad \xff\xfe utf8 \xe4\xb8", "line\u2028para\u2029end", "emoji 😀 \U0010ffff",
		// Three-byte leads at the edges of the fast path: overlong,
		// surrogate, U+2028 and U+2029, the last three-byte runes, cut short.
		"\xe0\x80\x80 \xe0\xa0\x80", "\xed\xa0\x80 \xed\x9f\xbf", "\xe2\x80\xa8\xe2\x80\xa9\xe2\x80\xaa", "\xef\xbf\xbf\xee\x80\x80",
		"\xe1\x80", "末\xe4\xb8", "\xe5\xad\x97\x80"} {
		f.Add(s, true)
		f.Add(s, false)
	}
	f.Fuzz(func(t *testing.T, s string, html bool) {
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(html)
		if err := enc.Encode(s); err != nil {
			t.Fatal(err)
		}
		want := bytes.TrimSuffix(b.Bytes(), []byte("\n"))
		if got := Append([]byte("x"), s, html); !bytes.Equal(got[1:], want) || got[0] != 'x' {
			t.Fatalf("Append(%q, html %v) = %s, want x%s", s, html, got, want)
		}
	})
}

// BenchmarkAppend appends a line of Chinese group chat with full-width
// punctuation, and one of English.
func BenchmarkAppend(b *testing.B) {
	for name, s := range map[string]string{
		"chinese": "[群聊 某某(12345)]: 明天几点集合？还有谁去？我八点以后有空，你们呢……“东门”见！",
		"english": "[group someone(12345)]: what time do we meet tomorrow? who else is coming? \"east gate\"",
	} {
		b.Run(name, func(b *testing.B) {
			dst := make([]byte, 0, 4*len(s))
			b.SetBytes(int64(len(s)))
			for b.Loop() {
				dst = Append(dst[:0], s, false)
			}
		})
	}
}
