package config

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestOneBotDefaultsMatchTheReference(t *testing.T) {
	a := Default().Channels.OneBot.OneBotAccount
	want := OneBotAccount{
		Enabled: true, GroupAutoReactEmojiID: 1, ReplyToTrigger: true, TextChunkLimit: 4500, SendGapMs: 1000, RequestTimeoutMs: 30000,
		Reconnect: OneBotReconnect{Enabled: true, Retries: -1, MinDelayMs: 1000, MaxDelayMs: 30000},
		Tools:     OneBotTools{Enabled: true},
		ReverseWS: OneBotReverseWS{Path: "/onebot/v11/ws"},
		HTTPPost:  OneBotHTTPPost{Path: "/onebot/v11/post"},
		Receive:   DefaultReceive(),
		Quote:     Quote{Enabled: true, ResolveForward: true, MaxDepth: 2, MaxNodes: 20, MaxChars: 4000, TimeoutMs: 10000},
	}
	if diff := cmp.Diff(want, a); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if a.Active() {
		t.Error("an account without a transport must not run")
	}
}

func TestOneBotNamedAccountsInheritAllButTheConnection(t *testing.T) {
	doc := `{ channels: { onebot: {
	  wsUrl: 'ws://127.0.0.1:3001', accessToken: 'tok', selfId: '3300000001',
	  allowFrom: ['group:1'], textChunkLimit: 2000, groupAutoReact: true, sendGapMs: 400,
	  reverseWs: { enabled: true },
	  accounts: {
	    second: { wsUrl: 'ws://127.0.0.1:3002', allowFrom: ['group:2'], reconnect: { retries: 3 } },
	    third: { reverseWs: { enabled: true }, httpPost: { enabled: true, secret: 's' }, sendGapMs: 0 },
	  },
	} } }`
	cfg, err := Parse([]byte(doc), noEnv)
	if err != nil {
		t.Fatal(err)
	}
	all := cfg.Channels.OneBot.All()
	if len(all) != 3 {
		t.Fatalf("want 3 accounts, got %d", len(all))
	}
	second := all["second"]
	if second.WSURL != "ws://127.0.0.1:3002" || second.AccessToken != "" || second.SelfID != "" {
		t.Errorf("the connection must not be inherited: %+v", second)
	}
	if second.TextChunkLimit != 2000 || !second.GroupAutoReact || second.SendGapMs != 400 || second.Reconnect.Retries != 3 || second.Reconnect.MaxDelayMs != 30000 {
		t.Errorf("settings must be inherited and overridable: %+v", second)
	}
	if diff := cmp.Diff([]string{"group:2"}, second.AllowFrom); diff != "" {
		t.Errorf("allowFrom: %s", diff)
	}
	if diff := cmp.Diff([]string{"group:1"}, all["default"].AllowFrom); diff != "" {
		t.Errorf("the default account's allowFrom changed: %s", diff)
	}
	third := all["third"]
	if third.SendGapMs != 0 {
		t.Errorf("sendGapMs 0 of a named account turns its gap off, got %d", third.SendGapMs)
	}
	if third.ReverseWS.Path != "/onebot/v11/ws/third" || third.HTTPPost.Path != "/onebot/v11/post/third" || third.PostSecret() != "s" {
		t.Errorf("named paths: %+v", third)
	}
	if all["default"].PostSecret() != "tok" {
		t.Error("the POST secret defaults to the access token")
	}
	if all["default"].SelfQQ() != 3300000001 {
		t.Errorf("selfId: %d", all["default"].SelfQQ())
	}
}

func TestOneBotValidation(t *testing.T) {
	doc := `{ channels: { onebot: {
	  wsUrl: 'http://x', httpUrl: 'ws://x', selfId: 'abc', allowFrom: ['group:x', '*'], denyFrom: ['qq:1'],
	  textChunkLimit: 0, requestTimeoutMs: 0, groupAutoReactEmojiId: 0, sendGapMs: -1,
	  reconnect: { retries: -2, minDelayMs: 10, maxDelayMs: 5 },
	  reverseWs: { enabled: true, path: 'ws' },
	} } }`
	_, err := Parse([]byte(doc), noEnv)
	want := []string{
		"channels.onebot.allowFrom[0]",
		"channels.onebot.denyFrom[0]",
		"channels.onebot.groupAutoReactEmojiId",
		"channels.onebot.httpUrl",
		"channels.onebot.reconnect.maxDelayMs",
		"channels.onebot.reconnect.retries",
		"channels.onebot.requestTimeoutMs",
		"channels.onebot.reverseWs.path",
		"channels.onebot.selfId",
		"channels.onebot.sendGapMs",
		"channels.onebot.textChunkLimit",
		"channels.onebot.wsUrl",
	}
	if diff := cmp.Diff(want, paths(err)); diff != "" {
		t.Errorf("problem paths (-want +got):\n%s\nerror: %v", diff, err)
	}
}

func TestOneBotAccountValidation(t *testing.T) {
	doc := `{ channels: { onebot: {
	  reverseWs: { enabled: true },
	  accounts: {
	    default: { wsUrl: 'ws://x' },
	    empty: {},
	    off: { enabled: false },
	    bad: { wsUrl: 'ws://x', selfId: '-5', sendGapMs: -250 },
	    clash: { reverseWs: { enabled: true, path: '/same' } },
	    clash2: { reverseWs: { enabled: true, path: '/same' } },
	    root: { httpPost: { enabled: true, path: '/onebot/v11/ws' } },
	  },
	} } }`
	_, err := Parse([]byte(doc), noEnv)
	want := []string{
		"channels.onebot.accounts.bad.selfId",
		"channels.onebot.accounts.bad.sendGapMs",
		"channels.onebot.accounts.clash2.reverseWs.path",
		"channels.onebot.accounts.default",
		"channels.onebot.accounts.empty",
		"channels.onebot.accounts.root.httpPost.path",
	}
	if diff := cmp.Diff(want, paths(err)); diff != "" {
		t.Errorf("problem paths (-want +got):\n%s\nerror: %v", diff, err)
	}
	if !strings.Contains(err.Error(), "channels.onebot.accounts.bad.sendGapMs: must not be negative (0 sends without a gap), got -250") {
		t.Errorf("a negative gap is refused by its key path: %v", err)
	}
	if !strings.Contains(err.Error(), "already used by accounts.clash.reverseWs.path") {
		t.Errorf("a path clash names both accounts: %v", err)
	}
}

func TestReceiveValidationAndWarnings(t *testing.T) {
	doc := `{ channels: { onebot: { receive: {
	  mention: { keywordMatch: 'glob' },
	  realtime: { windowMs: 0, maxWindowMs: -1 },
	  digest: { scope: 'everyone', peers: ['room:1'], minMessages: -1 },
	  summary: { commands: ['/sum mary'], count: 0 },
	  history: { maxAgeMs: -5 },
	} } } }`
	_, err := Parse([]byte(doc), noEnv)
	want := []string{
		"channels.onebot.receive.digest.minMessages",
		"channels.onebot.receive.digest.peers[0]",
		"channels.onebot.receive.digest.scope",
		"channels.onebot.receive.history.maxAgeMs",
		"channels.onebot.receive.mention.keywordMatch",
		"channels.onebot.receive.realtime.maxWindowMs",
		"channels.onebot.receive.realtime.windowMs",
		"channels.onebot.receive.summary.commands[0]",
		"channels.onebot.receive.summary.count",
	}
	if diff := cmp.Diff(want, paths(err)); diff != "" {
		t.Errorf("problem paths (-want +got):\n%s\nerror: %v", diff, err)
	}
	r := DefaultReceive()
	r.Mention.KeywordMatch = "regex"
	r.Mention.Keywords = []string{"天气", "(unclosed"}
	if w := r.Warnings(); len(w) != 1 || !strings.Contains(w[0], "keywords[1]") {
		t.Errorf("warnings %v", w)
	}
	r.Digest.MinMessages, r.Digest.MaxMessages = 80, 50
	if r.Digest.MinMessagesClamped() != 50 {
		t.Error("minMessages is clamped to maxMessages")
	}
}

func TestQuoteValidation(t *testing.T) {
	_, err := Parse([]byte(`{ channels: { onebot: { quote: { maxDepth: -1, maxNodes: 0, maxChars: 0, timeoutMs: 0 } } } }`), noEnv)
	want := []string{"channels.onebot.quote.maxChars", "channels.onebot.quote.maxDepth", "channels.onebot.quote.maxNodes", "channels.onebot.quote.timeoutMs"}
	if diff := cmp.Diff(want, paths(err)); diff != "" {
		t.Errorf("(-want +got):\n%s\n%v", diff, err)
	}
}

func TestOneBotSelfIDNumberOrString(t *testing.T) {
	tests := []struct {
		name string
		doc  string
		want string // the default account's selfId, then account a's
	}{
		{"number", `{ selfId: 3300000001 }`, "3300000001 "},
		{"string", `{ selfId: '3300000001' }`, "3300000001 "},
		{"hex number", `{ selfId: 0xC4B20101 }`, "3300000001 "},
		{"from the environment", `{ selfId: '${QQ}' }`, "3300000002 "},
		{"named account number", `{ accounts: { a: { wsUrl: 'ws://x', selfId: 3300000003 } } }`, " 3300000003"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := Parse([]byte(`{ channels: { onebot: `+tt.doc+` } }`), envOf(map[string]string{"QQ": "3300000002"}))
			if err != nil {
				t.Fatal(err)
			}
			o := cfg.Channels.OneBot
			if got := o.SelfID + " " + o.Accounts["a"].SelfID; got != tt.want {
				t.Errorf("selfId = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestOneBotSelfIDRefused(t *testing.T) {
	tests := []struct {
		name, doc, want string
	}{
		{"fraction", `{ selfId: 33.5 }`, "channels.onebot.selfId: want an integer or a string, got the number 33.5"},
		{"negative", `{ selfId: -5 }`, `channels.onebot.selfId: want a QQ number, got "-5"`},
		{"zero", `{ selfId: 0 }`, `channels.onebot.selfId: want a QQ number, got "0"`},
		{"too large", `{ selfId: 1e30 }`, "channels.onebot.selfId: want an integer or a string, got the number 1e+30"},
		{"not a number", `{ selfId: true }`, "channels.onebot.selfId: want an integer or a string, got true"},
		{"named account", `{ accounts: { a: { wsUrl: 'ws://x', selfId: -1 } } }`, `channels.onebot.accounts.a.selfId: want a QQ number, got "-1"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(`{ channels: { onebot: `+tt.doc+` } }`), noEnv)
			var got []string
			for _, e := range Problems(err) {
				got = append(got, e.Error())
			}
			if diff := cmp.Diff([]string{tt.want}, got); diff != "" {
				t.Errorf("problems (-want +got):\n%s", diff)
			}
		})
	}
}
