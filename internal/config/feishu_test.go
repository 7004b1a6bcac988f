package config

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestFeishuDefaults(t *testing.T) {
	a := Default().Channels.Feishu.FeishuAccount
	want := FeishuAccount{
		Enabled: true, Domain: "feishu", Mode: "websocket", Webhook: FeishuWebhook{Path: "/feishu/events"},
		TextChunkLimit: 4000, TypingReaction: true, Streaming: "card", MaxBotReplyChain: 3, Receive: DefaultReceive(),
		Quote:        FeishuQuote{Enabled: true, TimeoutMs: 10000},
		MergeForward: FeishuMergeForward{Enabled: true, MaxDepth: 3, MaxLines: 100, MaxChars: 4000},
	}
	if diff := cmp.Diff(want, a); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if a.Active() {
		t.Error("an app without an appId must not run")
	}
	for domain, base := range map[string]string{"feishu": "https://open.feishu.cn", "lark": "https://open.larksuite.com", "http://127.0.0.1:9/": "http://127.0.0.1:9"} {
		if got := (FeishuAccount{Domain: domain}).BaseURL(); got != base {
			t.Errorf("domain %s: base %s, want %s", domain, got, base)
		}
	}
}

func TestFeishuNamedAccountsInheritAllButTheCredentials(t *testing.T) {
	doc := `{ channels: { feishu: {
	  appId: 'cli_a', appSecret: 'sa', verificationToken: 'va', encryptKey: 'ka', mode: 'webhook',
	  allowFrom: ['chat:oc_1'], textChunkLimit: 2000, mergeForward: { maxDepth: 2 },
	  accounts: {
	    second: { appId: 'cli_b', appSecret: 'sb', verificationToken: 'vb', allowFrom: ['user:ou_2'] },
	  },
	} } }`
	cfg, err := Parse([]byte(doc), noEnv)
	if err != nil {
		t.Fatal(err)
	}
	all := cfg.Channels.Feishu.All()
	second := all["second"]
	if second.AppID != "cli_b" || second.AppSecret != "sb" || second.VerificationToken != "vb" || second.EncryptKey != "" {
		t.Errorf("credentials must not be inherited: %+v", second)
	}
	if second.Mode != "webhook" || second.TextChunkLimit != 2000 || second.MergeForward.MaxDepth != 2 || second.MergeForward.MaxLines != 100 {
		t.Errorf("settings must be inherited and overridable: %+v", second)
	}
	if second.Webhook.Path != "/feishu/events/second" || all["default"].Webhook.Path != "/feishu/events" {
		t.Errorf("webhook paths: %q, %q", second.Webhook.Path, all["default"].Webhook.Path)
	}
	if diff := cmp.Diff([]string{"chat:oc_1"}, all["default"].AllowFrom); diff != "" {
		t.Errorf("the default account's allowFrom changed: %s", diff)
	}
}

func TestFeishuValidation(t *testing.T) {
	doc := `{ channels: { feishu: {
	  appId: 'cli_a', domain: 'ftp://x', mode: 'poll', webhook: { path: 'events' },
	  allowFrom: ['group:1', '*'], denyFrom: ['user:'], textChunkLimit: 0,
	  quote: { timeoutMs: 0 }, mergeForward: { maxDepth: 0, maxLines: 0, maxChars: 0 },
	} } }`
	_, err := Parse([]byte(doc), noEnv)
	want := []string{
		"channels.feishu.allowFrom[0]",
		"channels.feishu.appSecret",
		"channels.feishu.denyFrom[0]",
		"channels.feishu.domain",
		"channels.feishu.mergeForward.maxChars",
		"channels.feishu.mergeForward.maxDepth",
		"channels.feishu.mergeForward.maxLines",
		"channels.feishu.mode",
		"channels.feishu.quote.timeoutMs",
		"channels.feishu.textChunkLimit",
		"channels.feishu.webhook.path",
	}
	if diff := cmp.Diff(want, paths(err)); diff != "" {
		t.Errorf("problem paths (-want +got):\n%s\nerror: %v", diff, err)
	}
}

func TestFeishuAccountValidation(t *testing.T) {
	doc := `{ channels: { feishu: {
	  accounts: {
	    default: { appId: 'x', appSecret: 'y' },
	    empty: {},
	    off: { enabled: false },
	    open: { appId: 'cli_o', appSecret: 's', mode: 'webhook' },
	    hook1: { appId: 'cli_1', appSecret: 's', mode: 'webhook', verificationToken: 't', webhook: { path: '/same' } },
	    hook2: { appId: 'cli_2', appSecret: 's', mode: 'webhook', encryptKey: 'k', webhook: { path: '/same' } },
	    ws: { appId: 'cli_3', appSecret: 's', webhook: { path: '/same' } },
	  },
	} } }`
	_, err := Parse([]byte(doc), noEnv)
	want := []string{
		"channels.feishu.accounts.default",
		"channels.feishu.accounts.empty",
		"channels.feishu.accounts.hook2.webhook.path",
		"channels.feishu.accounts.open.verificationToken",
	}
	if diff := cmp.Diff(want, paths(err)); diff != "" {
		t.Errorf("problem paths (-want +got):\n%s\nerror: %v", diff, err)
	}
	if !strings.Contains(err.Error(), "already used by accounts.hook1.webhook.path") {
		t.Errorf("a path clash names both accounts: %v", err)
	}
}

func TestFeishuStreamingIsCardOrOffPerAccount(t *testing.T) {
	doc := `{ channels: { feishu: {
	  appId: 'cli_a', appSecret: 'sa', streaming: 'off',
	  accounts: {
	    inherits: { appId: 'cli_b', appSecret: 'sb' },
	    cards: { appId: 'cli_c', appSecret: 'sc', streaming: 'card' },
	  },
	} } }`
	cfg, err := Parse([]byte(doc), noEnv)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for id, a := range cfg.Channels.Feishu.All() {
		got[id] = a.Streaming
	}
	if diff := cmp.Diff(map[string]string{"default": "off", "inherits": "off", "cards": "card"}, got); diff != "" {
		t.Errorf("streaming by account (-want +got):\n%s", diff)
	}

	bad := `{ channels: { feishu: {
	  streaming: 'live',
	  accounts: { second: { appId: 'cli_b', appSecret: 'sb', streaming: 'Card' } },
	} } }`
	_, err = Parse([]byte(bad), noEnv)
	want := []string{"channels.feishu.accounts.second.streaming", "channels.feishu.streaming"}
	if diff := cmp.Diff(want, paths(err)); diff != "" {
		t.Errorf("problem paths (-want +got):\n%s\nerror: %v", diff, err)
	}
	if err == nil || !strings.Contains(err.Error(), `want card or off, got "live"`) {
		t.Errorf("the problem says what is wanted: %v", err)
	}
}
