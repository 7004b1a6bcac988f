package gateway

import (
	"log/slog"
	"testing"

	"github.com/pincerbot/pincer/internal/config"
	"github.com/pincerbot/pincer/internal/media"
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
	// A new configuration swapped in changes what the lookups find.
	swapped, err := config.Parse([]byte(`{ channels: { onebot: { groups: { '2': { enabled: true } } } } }`), func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	if err := c.swap(swapped); err != nil {
		t.Fatal(err)
	}
	if r := rules(other); r == nil || r.Silent {
		t.Fatalf("after the swap group 2 answers: %+v", r)
	}
	if n := testing.AllocsPerRun(100, func() {
		_ = rules(own)
		_ = rules(other)
		_ = c.engineChat(m)
	}); n != 0 {
		t.Errorf("a lookup allocates %v times", n)
	}
}

// TestChatImageModels: a chat with an image model of its own gets a
// describer of that chain, built once for every chat that names it; a
// chat that keeps agents.defaults.imageModel gets none (the media
// reader's own describes for it).
func TestChatImageModels(t *testing.T) {
	doc := `{
	  models: { providers: { a: { baseUrl: 'http://x', apiKey: 'k' } } },
	  agents: { defaults: { imageModel: { primary: 'a/base' } } },
	  channels: { onebot: { groups: { '1': { imageModel: { primary: 'a/own' } }, '2': { imageModel: { primary: 'a/own' } }, '3': { imageModel: { primary: 'a/base' } } } } },
	}`
	cfg, err := config.Parse([]byte(doc), func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	var built []string
	c, err := newChats(cfg, func() string { return "" }, func(m config.ModelChoice) (*media.Describer, error) {
		built = append(built, m.Primary)
		return media.NewDescriber(media.DescriberOptions{}), nil
	}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	in := func(g string) msg.Message {
		return msg.Message{Channel: "onebot", Account: msg.DefaultAccount, Peer: msg.Peer{Kind: msg.Group, ID: g}}
	}
	one, two := c.describerFor(in("1")), c.describerFor(in("2"))
	if one == nil || one != two || c.engineChat(in("1")).Describe == nil {
		t.Errorf("groups 1 and 2 share their own describer: %p %p", one, two)
	}
	for _, g := range []string{"3", "4"} {
		if c.describerFor(in(g)) != nil || c.engineChat(in(g)).Describe != nil {
			t.Errorf("group %s keeps the default image model, yet has a describer of its own", g)
		}
	}
	if len(built) != 1 || built[0] != "a/own" {
		t.Errorf("built describers for %q", built)
	}
}
