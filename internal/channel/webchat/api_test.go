package webchat

import (
	"strings"
	"testing"

	"github.com/pincerbot/pincer/internal/msg"
)

// TestReplyViewNamesMedia: a reply's media, which the page cannot show,
// are named after the text; URLs become links.
func TestReplyViewNamesMedia(t *testing.T) {
	v := replyView(msg.Outbound{Text: "图在这", Media: []msg.Media{
		{Kind: msg.MediaImage, URL: "/ws/chart.png", Name: "chart.png"},
		{Kind: msg.MediaFile, URL: "https://example.com/r.pdf", Name: "r.pdf"},
	}})
	if v["text"] != "图在这\n\n[image: chart.png]\n\n[file: r.pdf](https://example.com/r.pdf)" {
		t.Errorf("text %q", v["text"])
	}
	if html, _ := v["html"].(string); !strings.Contains(html, `href="https://example.com/r.pdf"`) {
		t.Errorf("html %q", html)
	}
	if m, _ := v["media"].([]map[string]string); len(m) != 2 || m[0]["name"] != "chart.png" {
		t.Errorf("media %v", v["media"])
	}
	if _, ok := replyView(msg.Outbound{Text: "plain"})["media"]; ok {
		t.Error("a reply without media lists media")
	}
}
