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
		"<a href='x'>&amp;</a>", "bad \xff\xfe utf8 \xe4\xb8", "line\u2028para\u2029end", "emoji 😀 \U0010ffff"} {
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
