package config

import (
	"slices"
	"testing"
)

// TestChanged names each changed key by its path as the file spells it:
// a section's keys, an embedded account's keys at its section's level, a
// named account's, a map entry added or removed, a list as one value,
// and a secret by its path; an unchanged config has none.
func TestChanged(t *testing.T) {
	a := Default()
	if got := Changed(a, a); len(got) != 0 {
		t.Fatalf("a config against itself: %q", got)
	}
	b := Default()
	b.Agents.Defaults.SystemPrompt = "你是学习助手"
	b.Channels.OneBot.WSURL = "ws://127.0.0.1:3001"
	b.Channels.OneBot.AccessToken = "s3cret"
	b.Channels.OneBot.Receive.Mention.Keywords = []string{"小助手"}
	b.Channels.OneBot.Accounts = map[string]OneBotAccount{"work": {SelfID: "123"}}
	b.Gateway.Listen = "0.0.0.0:18789"
	got := Changed(a, b)
	want := []string{
		"agents.defaults.systemPrompt",
		"channels.onebot.accessToken",
		"channels.onebot.accounts.work",
		"channels.onebot.receive.mention.keywords",
		"channels.onebot.wsUrl",
		"gateway.listen",
	}
	if !slices.Equal(got, want) {
		t.Errorf("Changed = %q\nwant %q", got, want)
	}
	c := b
	c.Channels.OneBot.Accounts = map[string]OneBotAccount{"work": {SelfID: "456"}}
	if got := Changed(b, c); !slices.Equal(got, []string{"channels.onebot.accounts.work.selfId"}) {
		t.Errorf("a named account's key: %q", got)
	}
}

// TestChangedChatEntrySetsAKey: a chat entry that starts to set a key to
// the value it had unset is a change of the entry (the key now overrides
// the layers below), and Take copies the whole entry.
func TestChangedChatEntrySetsAKey(t *testing.T) {
	load := func(src string) Config {
		t.Helper()
		c, err := Parse([]byte(src), func(string) (string, bool) { return "", false })
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	a := load(`{ channels: { onebot: { groups: { '123': { systemPrompt: 'x' } } } } }`)
	b := load(`{ channels: { onebot: { groups: { '123': { systemPrompt: 'x', enabled: false } } } } }`)
	got := Changed(a, b)
	if !slices.Equal(got, []string{"channels.onebot.groups.123"}) {
		t.Fatalf("Changed = %q", got)
	}
	if err := Take(&a, b, got[0]); err != nil {
		t.Fatal(err)
	}
	if got := Changed(a, b); len(got) != 0 {
		t.Errorf("after Take still changed: %q", got)
	}
}

// TestTake sets one key, a named account's key and a map entry added or
// removed, and refuses a path that names nothing.
func TestTake(t *testing.T) {
	a, b := Default(), Default()
	b.Agents.Defaults.SystemPrompt = "新"
	b.Gateway.Listen = "0.0.0.0:1"
	b.Channels.OneBot.Accounts = map[string]OneBotAccount{"work": {SelfID: "1"}}
	b.Channels.OneBot.WSURL = "ws://x"
	for _, k := range []string{"agents.defaults.systemPrompt", "channels.onebot.accounts.work", "channels.onebot.wsUrl"} {
		if err := Take(&a, b, k); err != nil {
			t.Fatalf("Take %s: %v", k, err)
		}
	}
	if got := Changed(a, b); !slices.Equal(got, []string{"gateway.listen"}) {
		t.Errorf("left changed: %q, want only gateway.listen", got)
	}
	c := b
	c.Channels.OneBot.Accounts = nil
	if err := Take(&a, c, "channels.onebot.accounts.work"); err != nil || len(a.Channels.OneBot.Accounts) != 0 {
		t.Errorf("removing an account: %v, %v", err, a.Channels.OneBot.Accounts)
	}
	if err := Take(&a, b, "agents.nothing"); err == nil {
		t.Error("a path naming nothing was taken")
	}
}
