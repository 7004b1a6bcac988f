package onebot

import (
	"testing"

	"github.com/pincerbot/pincer/internal/msg"
)

func TestParseTarget(t *testing.T) {
	tests := map[string]msg.Peer{
		"onebot:group:123": {Kind: msg.Group, ID: "123"},
		"OneBot:Group:123": {Kind: msg.Group, ID: "123"},
		"group:456":        {Kind: msg.Group, ID: "456"},
		"private:42":       {Kind: msg.Direct, ID: "42"},
		"onebot:42":        {Kind: msg.Direct, ID: "42"},
		" 10001 ":          {Kind: msg.Direct, ID: "10001"},
	}
	for in, want := range tests {
		if got, err := ParseTarget(in); err != nil || got != want {
			t.Errorf("ParseTarget(%q) = %v, %v", in, got, err)
		}
	}
	for _, bad := range []string{"", "group:", "group:abc", "room:1", "private:-5", "group:284840486", "onebot:group:x"} {
		if _, err := ParseTarget(bad); err == nil {
			t.Errorf("ParseTarget(%q) accepted", bad)
		}
	}
}
