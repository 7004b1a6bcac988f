package gateway

import (
	"log/slog"
	"testing"

	"github.com/pincerbot/pincer/internal/config"
	"github.com/pincerbot/pincer/internal/msg"
)

// TestChatLookupIsCheap: finding a chat's settings, its own or its
// account's, allocates nothing: it runs for every message.
func TestChatLookupIsCheap(t *testing.T) {
	cfg, err := config.Parse([]byte(`{ channels: { onebot: { groups: { '*': { enabled: false }, '1': { enabled: true } } } } }`), func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	c, err := newChats(cfg, func() string { return "" }, nil, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	rules := c.rulesFor("onebot", msg.DefaultAccount)
	own, other := msg.Peer{Kind: msg.Group, ID: "1"}, msg.Peer{Kind: msg.Group, ID: "2"}
	if r := rules(own); r == nil || r.Silent {
		t.Fatalf("group 1: %+v", r)
	}
	if r := rules(other); r == nil || !r.Silent {
		t.Fatalf("group 2: %+v", r)
	}
	m := msg.Message{Channel: "onebot", Account: msg.DefaultAccount, Peer: other}
	if n := testing.AllocsPerRun(100, func() {
		_ = rules(own)
		_ = rules(other)
		_ = c.engineChat(m)
	}); n != 0 {
		t.Errorf("a lookup allocates %v times", n)
	}
}
