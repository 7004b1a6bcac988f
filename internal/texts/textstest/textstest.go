// Package textstest checks pages that speak a locale, for the tests of
// the web chat and the dashboard: that a page holds its locale's texts
// and no other locale's, and that every text its script shows is handed
// to it.
package textstest

import (
	"regexp"
	"strings"
	"testing"

	"github.com/pincerbot/pincer/internal/texts"
)

// CheckPage fails t when page (served in locale) lacks one of want,
// holds not, or holds a field the page's template left unfilled.
func CheckPage(t *testing.T, locale texts.Locale, page string, want []string, not string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(page, w) {
			t.Errorf("locale %q: the page lacks %s", locale, w)
		}
	}
	if strings.Contains(page, not) || strings.Contains(page, "{{") {
		t.Errorf("locale %q: the page holds %q or an unfilled field:\n%s", locale, not, page)
	}
}

// CheckScriptTexts fails t when script names a text of the page's
// (a quoted key under prefix, such as "webchat.") that handed, the keys
// the page gives its script, lacks, or when it names none.
func CheckScriptTexts(t *testing.T, script []byte, prefix string, handed []texts.Key) {
	t.Helper()
	used := regexp.MustCompile(`"(`+regexp.QuoteMeta(prefix)+`[A-Za-z]+)"`).FindAllStringSubmatch(string(script), -1)
	if len(used) == 0 {
		t.Fatal("the script names no texts")
	}
	given := map[string]bool{}
	for _, k := range handed {
		given[string(k)] = true
	}
	for _, u := range used {
		if !given[u[1]] {
			t.Errorf("the script shows %s, which the page does not hand it", u[1])
		}
	}
}
