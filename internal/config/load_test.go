package config

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestMistypedValueReportedAlone pins that a value that fails to decode is
// reported once, at its key, without the cross-checks that would fail only
// because it kept its default, and without stopping the rest of the
// document from being decoded and validated.
func TestMistypedValueReportedAlone(t *testing.T) {
	const ref = `agents: { defaults: { model: { primary: 'openai/gpt-4o' } } }, `
	tests := []struct {
		name string
		doc  string
		want []string
	}{
		{"plain string field", `{` + ref + `models: { providers: { openai: { baseUrl: 3 } } } }`,
			[]string{"models.providers.openai.baseUrl"}},
		{"secret field", `{` + ref + `models: { providers: { openai: { apiKey: 3 } } } }`,
			[]string{"models.providers.openai.apiKey"}},
		{"secret in another section", `{` + ref + `models: { providers: { openai: {} } }, gateway: { token: 3 } }`,
			[]string{"gateway.token"}},
		{"onebot field", `{` + ref + `models: { providers: { openai: {} } }, channels: { onebot: { accessToken: 3 } } }`,
			[]string{"channels.onebot.accessToken"}},
		{"onebot section", `{` + ref + `models: { providers: { openai: {} } }, channels: { onebot: 3 } }`,
			[]string{"channels.onebot"}},
		{"sections after the mistyped one are still validated", `{ channels: { onebot: { accessToken: 3 } }, session: { dmScope: 'x' }, store: { driver: 'pg' } }`,
			[]string{"channels.onebot.accessToken", "session.dmScope", "store.driver"}},
		{"provider map", `{` + ref + `models: { providers: ['openai'] } }`,
			[]string{"models.providers"}},
		{"models section", `{` + ref + `models: 3 }`,
			[]string{"models"}},
		{"alias to a provider of a mistyped map", `{ models: { providers: 3, aliases: { fast: 'openai/m' } } }`,
			[]string{"models.providers"}},
		{"a real bad ref is still reported", `{ models: { providers: { openai: { baseUrl: 3 } } }, agents: { defaults: { heartbeat: { model: 'ghost/m' } } } }`,
			[]string{"agents.defaults.heartbeat.model", "models.providers.openai.baseUrl"}},
		{"named account's transport", `{ channels: { onebot: { accounts: { a: { wsUrl: 3 } } } } }`,
			[]string{"channels.onebot.accounts.a.wsUrl"}},
		{"named account's reverse endpoint", `{ channels: { onebot: { accounts: { a: { reverseWs: { enabled: 'yes' } } } } } }`,
			[]string{"channels.onebot.accounts.a.reverseWs.enabled"}},
		{"named account's transport from the environment", `{ channels: { onebot: { accounts: { a: { wsUrl: '${PINCER_UNSET}' } } } } }`,
			[]string{"channels.onebot.accounts.a.wsUrl"}},
		{"misspelt transport key", `{ channels: { onebot: { accounts: { a: { wsUlr: 'ws://x' } } } } }`,
			[]string{"channels.onebot.accounts.a.wsUlr"}},
		{"miscased key of the wrong type", `{` + ref + `models: { providers: { openai: {} } }, channels: { onebot: { WSURL: 3 } } }`,
			[]string{"channels.onebot.WSURL"}},
		{"maxTokens against contextTokens", `{ agents: { defaults: { maxTokens: '1k', contextTokens: 2000 } } }`,
			[]string{"agents.defaults.maxTokens"}},
		{"humanDelay minMs", `{ agents: { defaults: { humanDelay: { mode: 'custom', minMs: 'x', maxMs: 500 } } } }`,
			[]string{"agents.defaults.humanDelay.minMs"}},
		{"blockStreaming minChars", `{ agents: { defaults: { blockStreaming: { minChars: '1', maxChars: 500 } } } }`,
			[]string{"agents.defaults.blockStreaming.minChars"}},
		{"envelope userTimezone", `{ agents: { defaults: { envelope: { timezone: 'user', userTimezone: 8 } } } }`,
			[]string{"agents.defaults.envelope.userTimezone"}},
		{"realtime windowMs", `{ channels: { onebot: { receive: { realtime: { windowMs: '1s', maxWindowMs: 500 } } } } }`,
			[]string{"channels.onebot.receive.realtime.windowMs"}},
		{"summary enabled", `{ channels: { webchat: { receive: { summary: { enabled: 'no', commands: [], prompt: '' } } } } }`,
			[]string{"channels.webchat.receive.summary.enabled"}},
		{"webchat enabled", `{ channels: { webchat: { enabled: 'off', title: '' } } }`,
			[]string{"channels.webchat.enabled"}},
		{"reconnect minDelayMs", `{ channels: { onebot: { reconnect: { minDelayMs: '1s', maxDelayMs: 500 } } } }`,
			[]string{"channels.onebot.reconnect.minDelayMs"}},
		{"array element", `{ agents: { defaults: { model: { primary: 'preview/x', fallbacks: ['preview/y', 3] } } } }`,
			[]string{"agents.defaults.model.fallbacks[1]"}},
		{"number out of range", `{ agents: { defaults: { maxTokens: 1e999 } } }`,
			[]string{"agents.defaults.maxTokens"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.doc), noEnv)
			if diff := cmp.Diff(tt.want, paths(err)); diff != "" {
				t.Errorf("problem paths (-want +got):\n%s\nerror: %v", diff, err)
			}
		})
	}
}

func TestEmptyDocumentIsTheDefaults(t *testing.T) {
	for _, doc := range []string{"", "  \n\t\r\n", "// nothing yet\n", "/* nothing */", "// a\r/* b */ // c", "null", "// x\nnull // y"} {
		cfg, err := Parse([]byte(doc), noEnv)
		if err != nil {
			t.Errorf("%q: %v", doc, err)
			continue
		}
		if diff := cmp.Diff(Default(), cfg); diff != "" {
			t.Errorf("%q: not the defaults (-want +got):\n%s", doc, diff)
		}
	}
}

func TestTrailingCommentsAndSpaceAreAccepted(t *testing.T) {
	for _, doc := range []string{
		"{ log: { level: 'debug' } }\n// the end\n",
		"{ log: { level: 'debug' } } // the end",
		"{ log: { level: 'debug' } } /* a */ // b\n\n/* c\n */  \n",
		"{ log: { level: 'debug' } }\r\n\t\r\n",
	} {
		cfg, err := Parse([]byte(doc), noEnv)
		if err != nil {
			t.Errorf("%q: %v", doc, err)
		} else if cfg.Log.Level != "debug" {
			t.Errorf("%q: level %q", doc, cfg.Log.Level)
		}
	}
}

// TestSyntaxErrorPositions pins line and column (1-based, counted in
// characters) of syntax errors.
func TestSyntaxErrorPositions(t *testing.T) {
	tests := []struct {
		name, doc, want string
	}{
		{"missing comma in an array", "{\n  gateway: {\n    listen: [1 2],\n  },\n}", `syntax error at line 3, column 15: missing ","`},
		{"bad value", "{\n  gateway: {\n    listen: [1 =],\n  },\n}", "syntax error at line 3, column 16: invalid character '=' after array element"},
		{"first byte", "x", "syntax error at line 1, column 1: "},
		{"after wide characters", "{\n  a: '标题', b: x\n}", "syntax error at line 2, column 15: "},
		{"newline in a string", "{a: 'x\n'}", "syntax error at line 1, column 7: "},
		{"truncated", "{\n  a: {", "syntax error at line 2, column 7: "},
		{"content after the object", "{gateway: {}} }", "syntax error at line 1, column 15: content after the top-level object"},
		{"second object", "{}\n// c\n{}", "syntax error at line 3, column 1: content after the top-level object"},
		{"word after a comment", "{} /* c */ x", "syntax error at line 1, column 12: content after the top-level object"},
		{"lone slash", "{} / x", "syntax error at line 1, column 4: content after the top-level object"},
		{"unterminated trailing comment", "{}\n/* open", "syntax error at line 2, column 1: unterminated comment"},
		{"unterminated comment alone", "  /* open", "syntax error at line 1, column 3: unterminated comment"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.doc), noEnv)
			if err == nil || !strings.HasPrefix(err.Error(), tt.want) {
				t.Errorf("got %v, want %q...", err, tt.want)
			}
		})
	}
}

// TestParseLenientLeavesUnsetVariables pins that a lenient load resolves
// what it can, keeps the defaults of settings whose variable is unset and
// lists them, and reports every other problem as Parse does.
func TestParseLenientLeavesUnsetVariables(t *testing.T) {
	const doc = `{
		gateway: { listen: '${LISTEN}', token: '${PINCER_TOKEN}' },
		models: { providers: { deepseek: { baseUrl: 'https://api.deepseek.com', apiKey: '${DEEPSEEK_API_KEY}' } } },
		agents: { defaults: { model: { primary: 'deepseek/deepseek-chat' } } },
		channels: { feishu: { appId: 'cli_x', appSecret: '${FEISHU_APP_SECRET}' } },
	}`
	env := envOf(map[string]string{"LISTEN": "127.0.0.1:18790", "PINCER_TOKEN": "s3cret"})
	if _, err := Parse([]byte(doc), env); err == nil {
		t.Fatal("Parse accepted unset variables")
	}
	cfg, unset, err := ParseLenient([]byte(doc), env)
	if err != nil {
		t.Fatalf("ParseLenient: %v", err)
	}
	if cfg.Gateway.Listen != "127.0.0.1:18790" || cfg.Gateway.Token.Value() != "s3cret" {
		t.Errorf("gateway %q %q", cfg.Gateway.Listen, cfg.Gateway.Token.Value())
	}
	var got []string
	for _, e := range unset {
		got = append(got, e.Error())
	}
	slices.Sort(got)
	want := []string{
		"channels.feishu.appSecret: environment variable FEISHU_APP_SECRET is not set",
		"models.providers.deepseek.apiKey: environment variable DEEPSEEK_API_KEY is not set",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("unset (-want +got):\n%s", diff)
	}
	if err := unset.Need("gateway.listen", "gateway.token"); err != nil {
		t.Errorf("Need(gateway): %v", err)
	}
	if err := unset.Need("models.providers"); err == nil || !strings.Contains(err.Error(), "DEEPSEEK_API_KEY") {
		t.Errorf("Need(models.providers) = %v", err)
	}

	_, unset, err = ParseLenient([]byte(doc), envOf(map[string]string{"LISTEN": "127.0.0.1:18790"}))
	if err != nil {
		t.Fatalf("ParseLenient without the token: %v", err)
	}
	if err := unset.Need("gateway.token"); err == nil || err.Error() != "gateway.token: environment variable PINCER_TOKEN is not set" {
		t.Errorf("Need(gateway.token) = %v", err)
	}

	// Other problems are still problems.
	if _, _, err := ParseLenient([]byte(`{ gateway: { token: '${T}', listn: 'x' } }`), noEnv); err == nil || !strings.Contains(err.Error(), "gateway.listn") {
		t.Errorf("a misspelt key: %v", err)
	}
}
