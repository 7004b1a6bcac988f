package config

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestChatEntryUnknownKeysNameFullPath(t *testing.T) {
	doc := `{
	  channels: {
	    onebot: {
	      groups: { '123': { recieve: {}, receive: { history: { maxMessages: 5 }, mention: { keyword: [] } } } },
	      accounts: { second: { wsUrl: 'ws://x', direct: { '*': { imageModel: {}, drop: 'old' } } } },
	    },
	    feishu: { groups: { oc_1: { sendGapMs: 5 } } },
	  },
	}`
	_, err := Parse([]byte(doc), noEnv)
	want := []string{
		"channels.feishu.groups.oc_1.sendGapMs",
		"channels.onebot.accounts.second.direct.*.drop",
		"channels.onebot.groups.123.receive.history.maxMessages",
		"channels.onebot.groups.123.receive.mention.keyword",
		"channels.onebot.groups.123.recieve",
	}
	if diff := cmp.Diff(want, paths(err)); diff != "" {
		t.Errorf("problem paths (-want +got):\n%s\nerror: %v", diff, err)
	}
	for _, s := range []string{`recieve: unknown key (did you mean "receive"?)`, "maxMessages: unknown key (it cannot be set for one chat", `keyword: unknown key (did you mean "keywords"?)`, "sendGapMs: unknown key (only QQ chats take it"} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("want %q in %v", s, err)
		}
	}
}

func TestChatEntryBadValuesNamePath(t *testing.T) {
	doc := `{
	  models: { providers: { openai: { baseUrl: 'http://x', apiKey: 'k' } } },
	  channels: {
	    onebot: {
	      groups: {
	        'abc': {},
	        '123': {
	          enabled: 'no', systemPromptMode: 'prepend', model: { primary: 'nobody/x' }, thinking: 'max',
	          queue: { mode: 'later', cap: 0 }, humanDelay: { mode: 'custom', minMs: 900, maxMs: 100 },
	          allowFrom: ['group:1'], tools: { deny: ['no such'] }, sendGapMs: -1,
	          receive: { mention: { keywordMatch: 'glob' }, digest: { intervalMs: 0 }, realtime: { maxWindowMs: 100 } },
	        },
	      },
	    },
	    feishu: { direct: { 'ou 1': {}, ou_2: { denyFrom: ['a b'] } } },
	  },
	}`
	_, err := Parse([]byte(doc), noEnv)
	want := []string{
		"channels.feishu.direct.ou 1",
		"channels.feishu.direct.ou_2.denyFrom[0]",
		"channels.onebot.groups.123.allowFrom[0]",
		"channels.onebot.groups.123.enabled",
		"channels.onebot.groups.123.humanDelay.maxMs",
		"channels.onebot.groups.123.model.primary",
		"channels.onebot.groups.123.queue.cap",
		"channels.onebot.groups.123.queue.mode",
		"channels.onebot.groups.123.receive.digest.intervalMs",
		"channels.onebot.groups.123.receive.mention.keywordMatch",
		"channels.onebot.groups.123.receive.realtime.maxWindowMs",
		"channels.onebot.groups.123.sendGapMs",
		"channels.onebot.groups.123.systemPromptMode",
		"channels.onebot.groups.123.thinking",
		"channels.onebot.groups.123.tools.deny[0]",
		"channels.onebot.groups.abc",
	}
	if diff := cmp.Diff(want, paths(err)); diff != "" {
		t.Errorf("problem paths (-want +got):\n%s\nerror: %v", diff, err)
	}
}

func TestChatEntryRemembersWhatItSets(t *testing.T) {
	doc := `{ channels: { onebot: {
	  groups: { '*': { enabled: false }, '123': { enabled: true, receive: { mention: { keywords: [] } }, sendGapMs: 0 } },
	  accounts: { second: { wsUrl: 'ws://x', groups: { '123': { systemPrompt: 'x' } } } },
	} } }`
	cfg, err := Parse([]byte(doc), noEnv)
	if err != nil {
		t.Fatal(err)
	}
	g := cfg.Channels.OneBot.Groups
	if got := g["123"].Set(); !cmp.Equal(got, []string{"enabled", "receive.mention.keywords", "sendGapMs"}) {
		t.Errorf("set = %v", got)
	}
	if !g["123"].Sets("receive") || g["123"].Sets("receive.digest") || !g["*"].Sets("enabled") || g["*"].Enabled {
		t.Errorf("Sets is wrong: %+v", g)
	}
	second := cfg.Channels.OneBot.Accounts["second"]
	if len(second.Groups) != 1 || second.Groups["123"].SystemPrompt != "x" || second.Groups["123"].Sets("enabled") {
		t.Errorf("a named account has only its own entries, got %+v", second.Groups)
	}
}

func TestChatEntryRegexKeywordsWarn(t *testing.T) {
	doc := `{ channels: { onebot: {
	  receive: { mention: { keywordMatch: 'regex' } },
	  groups: { '1': { receive: { mention: { keywords: ['ok', '(['] } } }, '2': { receive: { mention: { keywordMatch: 'contains', keywords: ['(['] } } } },
	} } }`
	cfg, err := Parse([]byte(doc), noEnv)
	if err != nil {
		t.Fatal(err)
	}
	w := cfg.Channels.Warnings()
	if len(w) != 1 || !strings.HasPrefix(w[0], "channels.onebot.groups.1.receive.mention.keywords[1]: ") {
		t.Errorf("warnings = %q", w)
	}
}
