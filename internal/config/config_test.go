package config

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func noEnv(string) (string, bool) { return "", false }

func envOf(m map[string]string) Env {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

func paths(err error) []string {
	var out []string
	for _, e := range Problems(err) {
		var fe *FieldError
		if errors.As(e, &fe) {
			out = append(out, fe.Path)
		} else {
			out = append(out, "!"+e.Error())
		}
	}
	return out
}

func TestDefaultsValidate(t *testing.T) {
	cfg := Default()
	if err := cfg.Validate(); err != nil {
		t.Fatalf("defaults do not validate: %v", err)
	}
	if cfg.Gateway.Listen != "127.0.0.1:18789" || cfg.Store.Path != "./data/pincer.db" {
		t.Errorf("unexpected defaults: %+v %+v", cfg.Gateway, cfg.Store)
	}
}

func TestParseJSON5Syntax(t *testing.T) {
	doc := `
	// line comment
	{
	  /* block */ gateway: { listen: '127.0.0.1:9999', },
	  "log": {'level': "debug",},
	}`
	cfg, err := Parse([]byte(doc), noEnv)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Gateway.Listen != "127.0.0.1:9999" || cfg.Log.Level != "debug" {
		t.Errorf("got listen %q level %q", cfg.Gateway.Listen, cfg.Log.Level)
	}
	if cfg.Gateway.ShutdownTimeoutMs != 30000 || cfg.Log.Format != "text" {
		t.Error("unset keys must keep their defaults")
	}
}

func TestParseSyntaxErrorHasPosition(t *testing.T) {
	_, err := Parse([]byte("{\n  gateway: {\n    listen: [1 2],\n  },\n}"), noEnv)
	if err == nil || !strings.Contains(err.Error(), "line 3") {
		t.Fatalf("want a syntax error at line 3, got %v", err)
	}
}

func TestUnknownKeysNameFullPath(t *testing.T) {
	doc := `{
	  gateway: { listne: 'x:1' },
	  channels: { webchat: { titel: 'x' }, onebot: { accounts: { qq2: { wsurl: 'ws://x' } } } },
	  models: { providers: { openai: { baseURL: 'http://x' } } },
	}`
	_, err := Parse([]byte(doc), noEnv)
	want := []string{"channels.onebot.accounts.qq2.wsurl", "channels.webchat.titel", "gateway.listne", "models.providers.openai.baseURL"}
	if diff := cmp.Diff(want, paths(err)); diff != "" {
		t.Errorf("problem paths (-want +got):\n%s\nerror: %v", diff, err)
	}
	if !strings.Contains(err.Error(), `did you mean "title"`) || !strings.Contains(err.Error(), `did you mean "baseUrl"`) {
		t.Errorf("want suggestions, got %v", err)
	}
}

func TestTypeErrorsNamePath(t *testing.T) {
	doc := `{ gateway: { shutdownTimeoutMs: 'soon' }, channels: { webchat: { enabled: 1 } }, agents: { defaults: { model: { fallbacks: 'a/b' }, maxTokens: 1.5 } } }`
	_, err := Parse([]byte(doc), noEnv)
	want := []string{"agents.defaults.maxTokens", "agents.defaults.model.fallbacks", "channels.webchat.enabled", "gateway.shutdownTimeoutMs"}
	if diff := cmp.Diff(want, paths(err)); diff != "" {
		t.Errorf("problem paths (-want +got):\n%s\nerror: %v", diff, err)
	}
}

func TestEnvSubstitution(t *testing.T) {
	doc := `{
	  models: { providers: { ds: { baseUrl: 'https://${HOST}/v1', apiKey: '${KEY}', headers: { x: '$${LITERAL}', y: '${UNSET:-dflt}' } } } },
	  agents: { defaults: { model: { primary: 'ds/deepseek-chat' } } },
	}`
	cfg, err := Parse([]byte(doc), envOf(map[string]string{"HOST": "api.deepseek.com", "KEY": "sk-1"}))
	if err != nil {
		t.Fatal(err)
	}
	p := cfg.Models.Providers["ds"]
	if p.BaseURL != "https://api.deepseek.com/v1" || p.APIKey.Value() != "sk-1" {
		t.Errorf("got %+v", p)
	}
	if p.Headers["x"] != "${LITERAL}" || p.Headers["y"] != "dflt" {
		t.Errorf("headers = %v", p.Headers)
	}
}

func TestUnsetEnvIsAnErrorNamingIt(t *testing.T) {
	_, err := Parse([]byte(`{ gateway: { token: '${PINCER_TEST_TOKEN}' } }`), noEnv)
	if err == nil || !strings.Contains(err.Error(), "gateway.token: environment variable PINCER_TEST_TOKEN is not set") {
		t.Fatalf("got %v", err)
	}
}

func TestValidateProblems(t *testing.T) {
	doc := `{
	  gateway: { listen: '0.0.0.0:80' },
	  log: { level: 'loud' },
	  models: { providers: { x: { api: 'grpc', baseUrl: 'ftp://h' } } },
	  agents: { defaults: { model: { primary: 'nope/m', fallbacks: ['bad'] }, maxTokens: 10, contextTokens: 5 } },
	}`
	_, err := Parse([]byte(doc), noEnv)
	want := []string{
		"agents.defaults.contextTokens",
		"agents.defaults.model.fallbacks[0]",
		"agents.defaults.model.primary",
		"gateway.token",
		"log.level",
		"models.providers.x.api",
		"models.providers.x.baseUrl",
	}
	if diff := cmp.Diff(want, paths(err)); diff != "" {
		t.Errorf("problem paths (-want +got):\n%s\nerror: %v", diff, err)
	}
}

func TestNonLoopbackWithTokenIsValid(t *testing.T) {
	cfg, err := Parse([]byte(`{ gateway: { listen: '0.0.0.0:18789', token: 't' } }`), noEnv)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Gateway.Loopback() {
		t.Error("0.0.0.0 is not loopback")
	}
	for _, l := range []string{"127.0.0.1:1", "[::1]:1", "localhost:1"} {
		if !(Gateway{Listen: l}).Loopback() {
			t.Errorf("%s is loopback", l)
		}
	}
}

func TestExampleParsesAndValidates(t *testing.T) {
	cfg, err := Parse(Example, noEnv)
	if err != nil {
		t.Fatalf("example config: %v", err)
	}
	if cfg.Agents.Defaults.Model.Primary != "openai/gpt-4o-mini" {
		t.Errorf("primary = %q", cfg.Agents.Defaults.Model.Primary)
	}
}

// TestExampleIsComplete keeps the example in step with the schema: every key
// a user can set appears in it.
func TestExampleIsComplete(t *testing.T) {
	var tree map[string]any
	if _, err := Parse(Example, noEnv); err != nil {
		t.Fatal(err)
	}
	tree = mustTree(t, Example)
	for _, p := range leafPaths(reflect.TypeFor[Config](), "") {
		if !hasPath(tree, strings.Split(p, ".")) {
			t.Errorf("example config lacks %s", p)
		}
	}
}

func TestSecretsNeverPrint(t *testing.T) {
	s := Secret("sk-very-secret")
	var buf bytes.Buffer
	slog.New(slog.NewTextHandler(&buf, nil)).Info("x", "key", s, "gw", Gateway{Token: s})
	out := buf.String() + fmt.Sprintf("%v %+v %#v %s", s, Gateway{Token: s}, s, s)
	if strings.Contains(out, "sk-very-secret") {
		t.Errorf("secret leaked: %s", out)
	}
	if s.Value() != "sk-very-secret" {
		t.Error("Value must return the secret")
	}
}

func TestLocate(t *testing.T) {
	t.Chdir(t.TempDir())
	if p, _ := Locate("a.json5", envOf(map[string]string{EnvVar: "b.json5"})); p != "a.json5" {
		t.Errorf("flag must win, got %q", p)
	}
	if p, _ := Locate("", envOf(map[string]string{EnvVar: "b.json5"})); p != "b.json5" {
		t.Errorf("env must come next, got %q", p)
	}
	if p, _ := Locate("", noEnv); p != "" {
		t.Errorf("no file: want defaults, got %q", p)
	}
	if err := writeFile(DefaultFile, "{}"); err != nil {
		t.Fatal(err)
	}
	if p, _ := Locate("", noEnv); p != DefaultFile {
		t.Errorf("want ./%s, got %q", DefaultFile, p)
	}
}

func FuzzParse(f *testing.F) {
	f.Add(string(Example))
	f.Add(`{gateway:{listen:'${X}'}}`)
	f.Add(`{a:[1,2,],}`)
	f.Add(`[]`)
	f.Add(``)
	f.Add("// only a comment\n/* and another")
	f.Add("{channels:{onebot:{selfId:3300000001}}} // done\n")
	f.Add(`{models:{providers:{openai:{apiKey:3}}},agents:{defaults:{model:{primary:'openai/m'}}}}`)
	f.Fuzz(func(t *testing.T, doc string) {
		cfg, err := Parse([]byte(doc), envOf(map[string]string{"X": "127.0.0.1:1"}))
		if err == nil {
			if verr := cfg.Validate(); verr != nil {
				t.Fatalf("Parse accepted a config that does not validate: %v", verr)
			}
		}
	})
}

func TestTrailingContentIsAnError(t *testing.T) {
	if _, err := Parse([]byte(`{gateway: {}} }`), noEnv); err == nil {
		t.Fatal("trailing content must be rejected")
	}
}

func TestAllProblemsReportedTogether(t *testing.T) {
	doc := `{ channels: { webchat: { titel: 'x' } }, gateway: { listen: 'nonsense' }, agents: { defaults: { maxTokens: 'many' } } }`
	_, err := Parse([]byte(doc), noEnv)
	// maxTokens is reported once, as mistyped, not again as "must be positive".
	want := []string{"agents.defaults.maxTokens", "channels.webchat.titel", "gateway.listen"}
	if diff := cmp.Diff(want, paths(err)); diff != "" {
		t.Errorf("problem paths (-want +got):\n%s\nerror: %v", diff, err)
	}
}

func TestAgentDefaultsSections(t *testing.T) {
	cfg, err := Parse([]byte(`{ agents: { defaults: {
	  humanDelay: { mode: 'custom', minMs: 100, maxMs: 200 },
	  envelope: { timezone: 'Asia/Shanghai' },
	} } }`), noEnv)
	if err != nil {
		t.Fatal(err)
	}
	if lo, hi := cfg.Agents.Defaults.HumanDelay.Range(); lo != 100*time.Millisecond || hi != 200*time.Millisecond {
		t.Errorf("custom range %v..%v", lo, hi)
	}
	if lo, hi := (HumanDelay{Mode: "natural"}).Range(); lo != 800*time.Millisecond || hi != 2500*time.Millisecond {
		t.Errorf("natural range %v..%v", lo, hi)
	}
	if loc, _ := cfg.Agents.Defaults.Envelope.Location(); loc.String() != "Asia/Shanghai" {
		t.Errorf("location %v", loc)
	}
	for _, tz := range []string{"utc", "local"} {
		if _, err := (Envelope{Timezone: tz}).Location(); err != nil {
			t.Errorf("%s: %v", tz, err)
		}
	}
	if loc, err := (Envelope{Timezone: "user", UserTimezone: "Europe/Berlin"}).Location(); err != nil || loc.String() != "Europe/Berlin" {
		t.Errorf("user: %v %v", loc, err)
	}
	_, err = Parse([]byte(`{ agents: { defaults: {
	  humanDelay: { mode: 'slow', minMs: 300, maxMs: 100 },
	  blockStreaming: { minChars: 0, breakOn: 'word' },
	  envelope: { timezone: 'Mars/Olympus' },
	} } }`), noEnv)
	want := []string{
		"agents.defaults.blockStreaming.breakOn", "agents.defaults.blockStreaming.maxChars",
		"agents.defaults.envelope.timezone", "agents.defaults.humanDelay.maxMs", "agents.defaults.humanDelay.mode",
	}
	if diff := cmp.Diff(want, paths(err)); diff != "" {
		t.Errorf("problem paths (-want +got):\n%s\nerror: %v", diff, err)
	}
}

func TestCommandsAliasesInbound(t *testing.T) {
	cfg, err := Parse([]byte(`{
	  models: { providers: { openai: {} }, aliases: { fast: 'openai/gpt-4o-mini' } },
	  messages: { inbound: { debounceMs: 1500, maxWaitMs: 4000 } },
	  commands: { allowFrom: ['onebot:123'], ownerAllowFrom: ['webchat:*'] },
	}`), noEnv)
	if err != nil {
		t.Fatal(err)
	}
	in := cfg.Messages.Inbound
	if in.WebchatWindow() != 1500*time.Millisecond || in.MaxWaitMs != 4000 {
		t.Errorf("inbound %+v", in)
	}
	if (Inbound{DebounceMs: 1500, ByChannel: map[string]int{"webchat": 0}}).WebchatWindow() != 0 {
		t.Error("byChannel.webchat 0 turns the web chat's debounce off")
	}
	_, err = Parse([]byte(`{
	  models: { aliases: { bad: 'nope', ghost: 'ghost/m' } },
	  messages: { inbound: { debounceMs: -1, byChannel: { onebot: -5 } } },
	  commands: { allowFrom: ['onebot'], ownerAllowFrom: [':x'] },
	}`), noEnv)
	want := []string{
		"commands.allowFrom[0]", "commands.ownerAllowFrom[0]",
		"messages.inbound.byChannel.onebot", "messages.inbound.debounceMs",
		"models.aliases.bad", "models.aliases.ghost",
	}
	if diff := cmp.Diff(want, paths(err)); diff != "" {
		t.Errorf("problem paths (-want +got):\n%s\nerror: %v", diff, err)
	}
}

func TestQueueSection(t *testing.T) {
	cfg, err := Parse([]byte(`{ messages: { queue: { mode: 'collect', byChannel: { onebot: 'interrupt' } } } }`), noEnv)
	if err != nil {
		t.Fatal(err)
	}
	if q := cfg.Messages.Queue; q.Mode != "collect" || q.Cap != 20 || q.Drop != "summarize" || q.ByChannel["onebot"] != "interrupt" {
		t.Errorf("queue %+v", q)
	}
	_, err = Parse([]byte(`{ messages: { queue: { mode: 'replace', cap: 0, drop: 'append', byChannel: { x: 'drop' } } }, agents: { defaults: { maxConcurrent: 0 } } }`), noEnv)
	want := []string{"agents.defaults.maxConcurrent", "messages.queue.byChannel.x", "messages.queue.cap", "messages.queue.drop", "messages.queue.mode"}
	if diff := cmp.Diff(want, paths(err)); diff != "" {
		t.Errorf("problem paths (-want +got):\n%s\nerror: %v", diff, err)
	}
}

func TestHeartbeatSection(t *testing.T) {
	if _, err := Parse([]byte(`{ models: { providers: { openai: {} } }, agents: { defaults: { heartbeat: { everyMs: 1800000, model: 'openai/gpt-4o-mini' } } } }`), noEnv); err != nil {
		t.Fatal(err)
	}
	if _, err := Parse([]byte(`{ agents: { defaults: { heartbeat: { cron: '0 9 * * 1-5' } } } }`), noEnv); err != nil {
		t.Fatal(err)
	}
	_, err := Parse([]byte(`{ agents: { defaults: { heartbeat: { everyMs: 5, model: 'x/y' } } } }`), noEnv)
	want := []string{"agents.defaults.heartbeat.everyMs", "agents.defaults.heartbeat.model"}
	if diff := cmp.Diff(want, paths(err)); diff != "" {
		t.Errorf("problem paths (-want +got):\n%s\nerror: %v", diff, err)
	}
	_, err = Parse([]byte(`{ agents: { defaults: { heartbeat: { everyMs: 60000, cron: 'every tuesday' } } } }`), noEnv)
	want = []string{"agents.defaults.heartbeat.cron", "agents.defaults.heartbeat.cron"}
	if diff := cmp.Diff(want, paths(err)); diff != "" {
		t.Errorf("problem paths (-want +got):\n%s\nerror: %v", diff, err)
	}
}

func TestSessionScopes(t *testing.T) {
	if _, err := Parse([]byte(`{ session: { dmScope: 'main', groupScope: 'main' } }`), noEnv); err != nil {
		t.Fatal(err)
	}
	_, err := Parse([]byte(`{ session: { dmScope: 'per-sender', groupScope: 'per-peer', idleResetMs: -1 } }`), noEnv)
	want := []string{"session.dmScope", "session.groupScope", "session.idleResetMs"}
	if diff := cmp.Diff(want, paths(err)); diff != "" {
		t.Errorf("problem paths (-want +got):\n%s\nerror: %v", diff, err)
	}
}

func TestFirstTokenTimeout(t *testing.T) {
	if got := Default().Agents.Defaults.FirstTokenTimeoutMs; got != 30000 {
		t.Errorf("default firstTokenTimeoutMs = %d, want 30000", got)
	}
	if got := (AgentDefaults{}).FirstTokenTimeout(); got != 30*time.Second {
		t.Errorf("unset FirstTokenTimeout() = %v, want the default 30s", got)
	}
	tests := []struct {
		doc  string
		want time.Duration // 0: refused
	}{
		{`{}`, 30 * time.Second},
		{`{ firstTokenTimeoutMs: 1000 }`, time.Second},
		{`{ firstTokenTimeoutMs: 90000 }`, 90 * time.Second},
		{`{ firstTokenTimeoutMs: 999 }`, 0},
		{`{ firstTokenTimeoutMs: 0 }`, 0},
		{`{ firstTokenTimeoutMs: -1 }`, 0},
	}
	for _, tt := range tests {
		cfg, err := Parse([]byte(`{ agents: { defaults: `+tt.doc+` } }`), noEnv)
		if tt.want == 0 {
			if diff := cmp.Diff([]string{"agents.defaults.firstTokenTimeoutMs"}, paths(err)); diff != "" {
				t.Errorf("%s: problem paths (-want +got):\n%s", tt.doc, diff)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tt.doc, err)
		} else if got := cfg.Agents.Defaults.FirstTokenTimeout(); got != tt.want {
			t.Errorf("%s: FirstTokenTimeout() = %v, want %v", tt.doc, got, tt.want)
		}
	}
}

func TestInboundDedupTTL(t *testing.T) {
	in := Default().Messages.Inbound
	if in.DedupTTLMs != 1200000 {
		t.Errorf("default dedupTtlMs = %d, want 1200000", in.DedupTTLMs)
	}
	// Debouncing is decided by the windows alone.
	if in.WebchatWindow() != 0 || (Inbound{DedupTTLMs: 1}).WebchatWindow() != 0 {
		t.Error("dedupTtlMs must not turn debouncing on")
	}
	if (Inbound{DebounceMs: 1}).WebchatWindow() != time.Millisecond {
		t.Error("debounceMs turns debouncing on")
	}
	if got := (Inbound{}).DedupTTL(); got != 20*time.Minute {
		t.Errorf("unset DedupTTL() = %v, want the default 20m", got)
	}
	tests := []struct {
		doc  string
		want time.Duration // 0: refused
	}{
		{`{}`, 20 * time.Minute},
		{`{ dedupTtlMs: 1 }`, time.Millisecond},
		{`{ dedupTtlMs: 3600000, debounceMs: 0 }`, time.Hour},
		{`{ dedupTtlMs: 0 }`, 0},
		{`{ dedupTtlMs: -5 }`, 0},
	}
	for _, tt := range tests {
		cfg, err := Parse([]byte(`{ messages: { inbound: `+tt.doc+` } }`), noEnv)
		if tt.want == 0 {
			if diff := cmp.Diff([]string{"messages.inbound.dedupTtlMs"}, paths(err)); diff != "" {
				t.Errorf("%s: problem paths (-want +got):\n%s", tt.doc, diff)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tt.doc, err)
			continue
		}
		if got := cfg.Messages.Inbound.DedupTTL(); got != tt.want {
			t.Errorf("%s: DedupTTL() = %v, want %v", tt.doc, got, tt.want)
		}
		if cfg.Messages.Inbound.WebchatWindow() != 0 {
			t.Errorf("%s: debouncing on", tt.doc)
		}
	}
}

func TestStorePostgres(t *testing.T) {
	env := func(name string) (string, bool) {
		if name == "PINCER_PG_DSN" {
			return "postgres://pincer:pw@db:5432/pincer", true
		}
		return "", false
	}
	cfg, err := Parse([]byte(`{ store: { driver: 'postgres', dsn: '${PINCER_PG_DSN}', path: '' } }`), env)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Store.DSN.Value() != "postgres://pincer:pw@db:5432/pincer" {
		t.Errorf("dsn: %q", cfg.Store.DSN.Value())
	}
	if s := fmt.Sprint(cfg.Store); strings.Contains(s, "pw") {
		t.Errorf("the dsn prints: %s", s)
	}
	_, err = Parse([]byte(`{ store: { driver: 'postgres' } }`), noEnv)
	if diff := cmp.Diff([]string{"store.dsn"}, paths(err)); diff != "" {
		t.Errorf("postgres without a dsn (-want +got):\n%s\nerror: %v", diff, err)
	}
	_, err = Parse([]byte(`{ store: { driver: 'mysql' } }`), noEnv)
	if diff := cmp.Diff([]string{"store.driver"}, paths(err)); diff != "" {
		t.Errorf("an unknown driver (-want +got):\n%s\nerror: %v", diff, err)
	}
}
