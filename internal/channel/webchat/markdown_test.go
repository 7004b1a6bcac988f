package webchat_test

import (
	"strings"
	"testing"

	"github.com/pincerbot/pincer/internal/channel/webchat"
)

func TestRenderMarkdownDropsRawHTML(t *testing.T) {
	tests := []struct {
		name, in string
		// banned must not appear in the output; shown must (escaped).
		banned []string
		shown  string
	}{
		{"script block", "<script>alert(1)</script>\n\nafter", []string{"<script"}, "&lt;script&gt;alert(1)&lt;/script&gt;"},
		{"inline script", "text <script>alert(1)</script> more", []string{"<script"}, "&lt;script&gt;"},
		{"img onerror", `look <img src=x onerror="alert(1)"> here`, []string{"<img"}, "&lt;img src=x onerror="},
		{"img onerror block", `<img src=x onerror="alert(1)">`, []string{"<img"}, "&lt;img"},
		{"iframe", "<iframe src=\"https://evil.example\"></iframe>", []string{"<iframe"}, "&lt;iframe"},
		{"javascript link", "[click](javascript:alert(1))", []string{"javascript:", "<a"}, "click"},
		{"javascript link, mixed case", "[click](JaVaScRiPt:alert(1))", []string{"<a", "alert(1)\""}, "click"},
		{"javascript autolink", "<javascript:alert(1)>", []string{"<a"}, "javascript:alert(1)"},
		{"data link", "[x](data:text/html;base64,PHNjcmlwdD4=)", []string{"<a"}, "x"},
		{"relative link", "[home](/api/session)", []string{"<a"}, "home"},
		{"image", "![cat](javascript:alert(1))", []string{"<img", "<a"}, "cat"},
		{"remote image", "![cat](https://img.example/cat.png)", []string{"<img"}, `<a href="https://img.example/cat.png"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := webchat.RenderMarkdown(tt.in)
			for _, b := range tt.banned {
				if strings.Contains(strings.ToLower(got), strings.ToLower(b)) {
					t.Errorf("output has %q:\n%s", b, got)
				}
			}
			if !strings.Contains(got, tt.shown) {
				t.Errorf("output lacks %q:\n%s", tt.shown, got)
			}
		})
	}
}

func TestRenderMarkdownKeepsSafeLinks(t *testing.T) {
	tests := []struct{ in, want string }{
		{"[docs](https://example.com/a?b=1)", `<a href="https://example.com/a?b=1" target="_blank" rel="noopener noreferrer nofollow">docs</a>`},
		{"see http://example.com now", `<a href="http://example.com" target="_blank" rel="noopener noreferrer nofollow">http://example.com</a>`},
		{"see www.example.com now", `<a href="http://www.example.com" target="_blank" rel="noopener noreferrer nofollow">www.example.com</a>`},
		{"mail <me@example.com>", `<a href="mailto:me@example.com" target="_blank" rel="noopener noreferrer nofollow">me@example.com</a>`},
		{"[mail](mailto:me@example.com)", `<a href="mailto:me@example.com"`},
	}
	for _, tt := range tests {
		if got := webchat.RenderMarkdown(tt.in); !strings.Contains(got, tt.want) {
			t.Errorf("RenderMarkdown(%q) =\n%s\nwant it to contain\n%s", tt.in, got, tt.want)
		}
	}
}

func TestRenderMarkdownTableAndCode(t *testing.T) {
	in := "Here:\n\n| Name | Qty |\n|:-----|----:|\n| apple | 3 |\n| pear | 10 |\n\n" +
		"```go\nfunc main() { fmt.Println(\"<b>hi</b>\") }\n```\n\n" +
		"- one\n- **two** and *three* and `code` and ~~gone~~\n"
	got := webchat.RenderMarkdown(in)
	for _, want := range []string{
		"<table>", "<th align=\"left\">Name</th>", "<td align=\"right\">10</td>",
		`<pre><code class="language-go">func main() { fmt.Println(&quot;&lt;b&gt;hi&lt;/b&gt;&quot;) }`,
		"<ul>", "<li><strong>two</strong> and <em>three</em> and <code>code</code> and <del>gone</del></li>",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "style=") {
		t.Errorf("inline styles break the page's Content-Security-Policy:\n%s", got)
	}
}
