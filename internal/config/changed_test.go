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
