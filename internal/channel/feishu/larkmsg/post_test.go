package larkmsg

import (
	"slices"
	"testing"
)

// TestPostImageKeys: the images of a post are its img elements' keys, in
// order and once each, from the locale that is read; media, bad keys and
// content that is not a post give none.
func TestPostImageKeys(t *testing.T) {
	for _, c := range []struct {
		content string
		want    []string
	}{
		{`{"title":"t","content":[[{"tag":"img","image_key":"img_a"},{"tag":"text","text":"x"}],[{"tag":"img","image_key":"img_b"},{"tag":"img","image_key":"img_a"}]]}`, []string{"img_a", "img_b"}},
		{`{"en_us":{"content":[[{"tag":"img","image_key":"img_en"}]]},"zh_cn":{"content":[[{"tag":"img","image_key":"img_zh"}]]}}`, []string{"img_zh"}},
		{`{"zh_cn":{"content":[]},"en_us":{"content":[[{"tag":"img","image_key":"img_en"}]]}}`, []string{"img_en"}},
		{`{"content":[{"tag":"img","image_key":"img_flat"}]}`, []string{"img_flat"}},
		{`{"content":[[{"tag":"media","file_key":"file_v","image_key":"img_cover"},{"tag":"img","image_key":" "},{"tag":"img"}]]}`, nil},
		{`not json`, nil},
	} {
		if got := PostImageKeys(c.content); !slices.Equal(got, c.want) {
			t.Errorf("%s: %q, want %q", c.content, got, c.want)
		}
	}
}
