package config

import (
	"slices"
	"strings"
	"testing"

	"github.com/pincerbot/pincer/internal/llm"
)

// sampleOpenClaw is an openclaw.json as OpenClaw's onboarding and a user
// leave it: a custom OpenAI-compatible provider, a built-in one named
// only by the default model, the snowluma QQ plugin, a Feishu app, the
// gateway and sections pincer has no counterpart for.
const sampleOpenClaw = `// ~/.openclaw/openclaw.json
{
  meta: { lastTouchedVersion: '2026.5.2', lastTouchedAt: '2026-05-20T08:00:00Z' },
  wizard: { lastRunAt: '2026-05-20T08:00:00Z', lastRunCommand: 'onboard' },
  env: { DEEPSEEK_API_KEY: 'sk-in-env-block' },
  auth: { profiles: { 'anthropic:default': { provider: 'anthropic', mode: 'api_key' } } },
  models: {
    mode: 'merge',
    providers: {
      deepseek: {
        baseUrl: 'https://api.deepseek.com/v1',
        apiKey: '${DEEPSEEK_API_KEY}',
        api: 'openai-completions',
        models: [{ id: 'deepseek-chat', name: 'DeepSeek V3', contextWindow: 128000, maxTokens: 8192 }],
      },
      local: { baseUrl: 'http://127.0.0.1:11434/v1', apiKey: 'OLLAMA_KEY', api: 'openai-responses',
        models: [{ id: 'my-vl', name: 'Mine', input: ['text', 'image'] }, { id: 'plain', input: ['text'] }] },
      gemini: { api: 'google-generative-ai', apiKey: 'GEMINI_API_KEY' },
    },
  },
  agents: {
    defaults: {
      workspace: '~/.openclaw/workspace',
      model: { primary: 'deepseek/deepseek-chat', fallbacks: ['anthropic/claude-sonnet-4-5', 'gemini/gemini-2.5-pro'] },
      imageModel: { primary: 'local/my-vl' },
      models: { 'deepseek/deepseek-chat': { alias: 'ds' } },
      maxConcurrent: 4,
      timeoutSeconds: 300,
      heartbeat: { every: '30m', target: 'last' },
      humanDelay: { mode: 'natural' },
      envelopeTimezone: 'Asia/Shanghai',
      typingMode: 'instant',
    },
    list: [{ id: 'main' }],
  },
  messages: { responsePrefix: '[{model}] ', queue: { mode: 'collect', debounceMs: 1000, cap: 25 }, ackReaction: '👀' },
  session: { dmScope: 'per-channel-peer', reset: { mode: 'idle', idleMinutes: 120 } },
  channels: {
    snowluma: {
      wsUrl: 'ws://127.0.0.1:3001',
      accessToken: '${SNOWLUMA_ACCESS_TOKEN}',
      selfId: 3300000001,
      allowFrom: ['group:123456', 'private:10001'],
      groupAutoReact: true,
      receive: { mention: { keywords: ['小助手'] }, digest: { enabled: true, intervalMs: 600000 } },
      streaming: true,
      accounts: { second: { wsUrl: 'ws://127.0.0.1:3002', accessToken: 'tok2', nickname: 'x' } },
    },
    feishu: {
      enabled: true,
      appId: 'cli_a1b2c3',
      appSecret: '${FEISHU_APP_SECRET}',
      domain: 'lark',
      connectionMode: 'webhook',
      verificationToken: 'vtok',
      dmPolicy: 'pairing',
      allowFrom: ['ou_abc', 'oc_def', 'someone'],
      accounts: { ops: { appId: 'cli_ops', appSecret: 'ops-secret' } },
    },
    telegram: { botToken: '123:abc' },
  },
  gateway: { port: 18800, mode: 'local', bind: 'lan', auth: { mode: 'token', token: 'gw-token' } },
  plugins: { entries: { 'openclaw-snowluma': { enabled: true } } },
  logging: { level: 'debug' },
}
`

func TestFromOpenClawCarriesOver(t *testing.T) {
	d, err := FromOpenClaw([]byte(sampleOpenClaw), "/home/u")
	if err != nil {
		t.Fatal(err)
	}
	env := mapEnv(map[string]string{
		"DEEPSEEK_API_KEY": "sk-d", "OLLAMA_KEY": "", "ANTHROPIC_API_KEY": "sk-a",
		"SNOWLUMA_ACCESS_TOKEN": "tok", "FEISHU_APP_SECRET": "fs",
	})
	out := d.JSON5()
	cfg, err := Parse(out, env)
	if err != nil {
		t.Fatalf("the imported configuration is refused: %v\n%s", err, out)
	}
	tests := []struct {
		name      string
		got, want any
	}{
		{"listen", cfg.Gateway.Listen, "0.0.0.0:18800"},
		{"gateway token", cfg.Gateway.Token.Value(), "gw-token"},
		{"deepseek api", cfg.Models.Providers["deepseek"].API, APIOpenAI},
		{"deepseek base", cfg.Models.Providers["deepseek"].BaseURL, "https://api.deepseek.com/v1"},
		{"deepseek key from ${}", cfg.Models.Providers["deepseek"].APIKey.Value(), "sk-d"},
		{"local key named by env var", strings.Contains(string(out), `"${OLLAMA_KEY}"`), true},
		{"local api (responses) as openai", cfg.Models.Providers["local"].API, APIOpenAI},
		{"local vision model carried", cfg.Models.SeesImages(llm.Ref{Provider: "local", Model: "my-vl"}), true},
		{"image model carried", cfg.Agents.Defaults.ImageModel.Primary, "local/my-vl"},
		{"local text model carried", cfg.Models.SeesImages(llm.Ref{Provider: "local", Model: "plain"}), false},
		{"built-in anthropic added", cfg.Models.Providers["anthropic"].API, APIAnthropic},
		{"anthropic key", cfg.Models.Providers["anthropic"].APIKey.Value(), "sk-a"},
		{"gemini not carried", cfg.Models.Providers["gemini"].API, ""},
		{"primary", cfg.Agents.Defaults.Model.Primary, "deepseek/deepseek-chat"},
		{"fallbacks", strings.Join(cfg.Agents.Defaults.Model.Fallbacks, ","), "anthropic/claude-sonnet-4-5"},
		{"alias", cfg.Models.Aliases["ds"], "deepseek/deepseek-chat"},
		{"workspace", cfg.Agents.Defaults.Workspace, "/home/u/.openclaw/workspace"},
		{"maxConcurrent", cfg.Agents.Defaults.MaxConcurrent, 4},
		{"turn timeout", cfg.Agents.Defaults.TurnTimeoutMs, 300000},
		{"heartbeat", cfg.Agents.Defaults.Heartbeat.EveryMs, 1800000},
		{"human delay", cfg.Agents.Defaults.HumanDelay.Mode, "natural"},
		{"timezone", cfg.Agents.Defaults.Envelope.Timezone, "Asia/Shanghai"},
		{"prefix", cfg.Messages.ResponsePrefix, "[{model}] "},
		{"queue mode", cfg.Messages.Queue.Mode, "collect"},
		{"queue cap", cfg.Messages.Queue.Cap, 25},
		{"dm scope", cfg.Session.DMScope, "per-peer"},
		{"idle reset", cfg.Session.IdleResetMs, 7200000},
		{"log level", cfg.Log.Level, "debug"},
		{"qq ws", cfg.Channels.OneBot.WSURL, "ws://127.0.0.1:3001"},
		{"qq token", cfg.Channels.OneBot.AccessToken.Value(), "tok"},
		{"qq self", cfg.Channels.OneBot.SelfID, "3300000001"},
		{"qq allow", strings.Join(cfg.Channels.OneBot.AllowFrom, ","), "group:123456,private:10001"},
		{"qq react", cfg.Channels.OneBot.GroupAutoReact, true},
		{"qq keywords", strings.Join(cfg.Channels.OneBot.Receive.Mention.Keywords, ","), "小助手"},
		{"qq digest", cfg.Channels.OneBot.Receive.Digest.IntervalMs, 600000},
		{"qq second account", cfg.Channels.OneBot.Accounts["second"].WSURL, "ws://127.0.0.1:3002"},
		{"qq second token", cfg.Channels.OneBot.Accounts["second"].AccessToken.Value(), "tok2"},
		{"feishu app", cfg.Channels.Feishu.AppID, "cli_a1b2c3"},
		{"feishu secret", cfg.Channels.Feishu.AppSecret.Value(), "fs"},
		{"feishu domain", cfg.Channels.Feishu.Domain, "lark"},
		{"feishu mode", cfg.Channels.Feishu.Mode, FeishuWebhookMode},
		{"feishu token", cfg.Channels.Feishu.VerificationToken.Value(), "vtok"},
		{"feishu allow", strings.Join(cfg.Channels.Feishu.AllowFrom, ","), "user:ou_abc,chat:oc_def"},
		// In webhook mode without a verification token of its own, pincer
		// would refuse the second app: it is left out, with a note.
		{"feishu ops dropped", cfg.Channels.Feishu.Accounts["ops"].AppID, ""},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("%s: got %v, want %v", tt.name, tt.got, tt.want)
		}
	}

	notes := map[string]string{}
	for _, n := range d.Notes {
		notes[n.Key] = n.Reason
	}
	for _, key := range []string{
		"meta", "wizard", "env", "auth", "models.mode", "models.providers.gemini",
		"models.providers.deepseek.models", "agents.defaults.model.fallbacks[1]", "agents.defaults.typingMode",
		"agents.defaults.heartbeat.target", "agents.list", "messages.ackReaction", "session.dmScope",
		"channels.snowluma.streaming", "channels.snowluma.accounts.second.nickname",
		"channels.feishu.dmPolicy", "channels.feishu.allowFrom", "channels.feishu.accounts.ops", "channels.telegram", "gateway.mode", "plugins",
	} {
		if _, ok := notes[key]; !ok {
			t.Errorf("no note for %s; notes: %v", key, d.Notes)
		}
		if !strings.Contains(string(out), "  - "+key+": ") {
			t.Errorf("the file does not list %s as not carried over", key)
		}
	}
	for _, key := range []string{"gateway.port", "gateway.auth.token", "channels.snowluma.wsUrl", "models.providers.deepseek.apiKey"} {
		if r, ok := notes[key]; ok {
			t.Errorf("%s was carried over but noted: %s", key, r)
		}
	}
}

func TestFromOpenClawSmallFiles(t *testing.T) {
	tests := []struct {
		name  string
		doc   string
		check func(t *testing.T, cfg Config, d *Draft)
	}{
		{
			name: "model as a string names a built-in provider",
			doc:  `{ agents: { defaults: { model: 'openai/gpt-4o-mini' } } }`,
			check: func(t *testing.T, cfg Config, d *Draft) {
				if cfg.Agents.Defaults.Model.Primary != "openai/gpt-4o-mini" || cfg.Models.Providers["openai"].BaseURL != "https://api.openai.com/v1" {
					t.Errorf("got %+v %+v", cfg.Agents.Defaults.Model, cfg.Models.Providers)
				}
			},
		},
		{
			name: "an unknown provider's model is left out",
			doc:  `{ agents: { defaults: { model: { primary: 'vertex/gemini' } } } }`,
			check: func(t *testing.T, cfg Config, d *Draft) {
				if cfg.Agents.Defaults.Model.Primary != "" || !hasNote(d, "agents.defaults.model.primary") {
					t.Errorf("primary %q, notes %v", cfg.Agents.Defaults.Model.Primary, d.Notes)
				}
			},
		},
		{
			name: "a lan bind without a token stays on loopback",
			doc:  `{ gateway: { port: 19001, bind: 'lan' } }`,
			check: func(t *testing.T, cfg Config, d *Draft) {
				if cfg.Gateway.Listen != "127.0.0.1:19001" || !hasNote(d, "gateway.bind") {
					t.Errorf("listen %q, notes %v", cfg.Gateway.Listen, d.Notes)
				}
			},
		},
		{
			name: "a value pincer refuses is dropped with its problem",
			doc:  `{ channels: { snowluma: { wsUrl: 'http://not-ws', textChunkLimit: 0 } } }`,
			check: func(t *testing.T, cfg Config, d *Draft) {
				if cfg.Channels.OneBot.WSURL != "" || !hasNote(d, "channels.onebot.wsUrl") || !hasNote(d, "channels.onebot.textChunkLimit") {
					t.Errorf("wsUrl %q, notes %v", cfg.Channels.OneBot.WSURL, d.Notes)
				}
			},
		},
		{
			name: "a literal secret with ${ stays literal",
			doc:  `{ channels: { feishu: { appId: 'cli_x', appSecret: 'a$${b' } } }`,
			check: func(t *testing.T, cfg Config, d *Draft) {
				if got := cfg.Channels.Feishu.AppSecret.Value(); got != "a${b" {
					t.Errorf("secret %q", got)
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, err := FromOpenClaw([]byte(tt.doc), "/home/u")
			if err != nil {
				t.Fatal(err)
			}
			cfg, err := Parse(d.JSON5(), func(string) (string, bool) { return "", true })
			if err != nil {
				t.Fatalf("refused: %v\n%s", err, d.JSON5())
			}
			tt.check(t, cfg, d)
		})
	}
}

func hasNote(d *Draft, key string) bool {
	return slices.ContainsFunc(d.Notes, func(n Note) bool { return n.Key == key })
}

func TestLooksLikeOpenClaw(t *testing.T) {
	tests := []struct {
		doc  string
		want bool
	}{
		{sampleOpenClaw, true},
		{`{ gateway: { port: 18789 } }`, true},
		{`{ channels: { snowluma: { wsUrl: 'ws://x' } } }`, true},
		{`{ models: { providers: { x: { models: [] } } } }`, false},
		{string(Example), false},
		{`{ gateway: { listen: '127.0.0.1:1' } }`, false},
		{`{ ui: { locale: 'en' } }`, false},
		{`{ ui: { seamColor: '#ff4500' } }`, true},
		{`{ ui: { assistant: { name: 'Claw' } } }`, true},
		{`not json`, false},
		{``, false},
	}
	for _, tt := range tests {
		if got := LooksLikeOpenClaw([]byte(tt.doc)); got != tt.want {
			t.Errorf("LooksLikeOpenClaw(%.40q) = %v, want %v", tt.doc, got, tt.want)
		}
	}
}

func TestDraftRendersCommentedJSON5(t *testing.T) {
	d := NewDraft()
	d.Header = []string{"written by a test"}
	d.Set(EnvRef("OPENAI_API_KEY"), "", "models", "providers", "openai", "apiKey")
	d.Set("lit${X}", "", "models", "providers", "openai", "baseUrl")
	d.Set("openai/gpt-4o-mini", "", "agents", "defaults", "model", "primary")
	d.Notes = []Note{{Key: "a.b", Reason: "why"}}
	out := string(d.JSON5())
	for _, want := range []string{
		"// written by a test\n",
		"//   - a.b: why\n",
		"// The API key. ${NAME} reads it from the environment",
		`apiKey: "${OPENAI_API_KEY}",`,
		`baseUrl: "lit$${X}",`,
		"// The model that answers, as provider/model.\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("rendered draft lacks %q:\n%s", want, out)
		}
	}
	if !d.Delete("models", "providers", "openai", "baseUrl") || d.Has("models", "providers", "openai", "baseUrl") {
		t.Error("Delete did not remove baseUrl")
	}
}

func mapEnv(m map[string]string) Env {
	return func(name string) (string, bool) { v, ok := m[name]; return v, ok }
}

// TestFromOpenClawInboundDebounce: OpenClaw's messages.inbound burst
// merging is carried over to what does the same in pincer, and never to
// a key pincer refuses: the web chat keeps the keys; Feishu's window
// (byChannel.feishu, else debounceMs) becomes its receive.realtime window
// with OpenClaw's cap of 5 x the window; QQ's plugin never read them and
// keeps its own realtime windows; other channels are listed as left out.
func TestFromOpenClawInboundDebounce(t *testing.T) {
	const channels = `channels: {
	    snowluma: { wsUrl: 'ws://127.0.0.1:3001', receive: { realtime: { windowMs: 1200, maxWindowMs: 4000 } } },
	    feishu: { appId: 'cli_a', appSecret: 'sec' },
	  },`
	tests := []struct {
		name        string
		doc         string
		debounce    int
		byChannel   map[string]int
		feishuWin   int // channels.feishu.receive.realtime.windowMs
		feishuMax   int
		qqWin       int
		notes       map[string]string // key: a part of its reason
		dedupTTL    int
		wantNoNotes bool
	}{
		{
			name: "per channel",
			doc: `{ messages: { inbound: { debounceMs: 2000, dedupTtlMs: 60000,
			  byChannel: { snowluma: 1500, feishu: 3000, webchat: 500, telegram: 1000, matrix: 700 } } },` + channels + ` }`,
			debounce: 2000, byChannel: map[string]int{"webchat": 500},
			feishuWin: 3000, feishuMax: 15000, qqWin: 1200, dedupTTL: 60000,
			notes: map[string]string{
				"messages.inbound.byChannel.snowluma": "channels.onebot.receive.realtime",
				"messages.inbound.byChannel.telegram": "pincer has no Telegram channel",
				"messages.inbound.byChannel.matrix":   "pincer has no such channel",
			},
		},
		{
			name:     "debounceMs alone acts on Feishu too",
			doc:      `{ messages: { inbound: { debounceMs: 1500 } },` + channels + ` }`,
			debounce: 1500, feishuWin: 1500, feishuMax: 7500, qqWin: 1200, dedupTTL: 1200000, wantNoNotes: true,
		},
		{
			name:     "Feishu off",
			doc:      `{ messages: { inbound: { debounceMs: 1500, byChannel: { feishu: 0 } } },` + channels + ` }`,
			debounce: 1500, feishuWin: 800, feishuMax: 3000, qqWin: 1200, dedupTTL: 1200000,
			notes: map[string]string{"messages.inbound.byChannel.feishu": "enabled: false"},
		},
		{
			name:      "no Feishu channel",
			doc:       `{ gateway: { port: 18789 }, messages: { inbound: { byChannel: { feishu: 2000, onebot: 900 } } } }`,
			feishuWin: 800, feishuMax: 3000, qqWin: 800, dedupTTL: 1200000,
			notes: map[string]string{
				"messages.inbound.byChannel.feishu": "no Feishu channel is carried over",
				"messages.inbound.byChannel.onebot": "never read it",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, err := FromOpenClaw([]byte(tt.doc), "/home/u")
			if err != nil {
				t.Fatal(err)
			}
			out := d.JSON5()
			cfg, err := Parse(out, noEnv)
			if err != nil {
				t.Fatalf("pincer refuses the imported configuration: %v\n%s", err, out)
			}
			in, rt, qq := cfg.Messages.Inbound, cfg.Channels.Feishu.Receive.Realtime, cfg.Channels.OneBot.Receive.Realtime
			if in.DebounceMs != tt.debounce || in.DedupTTLMs != tt.dedupTTL || len(in.ByChannel) != len(tt.byChannel) {
				t.Errorf("messages.inbound %+v, want debounceMs %d, byChannel %v, dedupTtlMs %d", in, tt.debounce, tt.byChannel, tt.dedupTTL)
			}
			for ch, v := range tt.byChannel {
				if in.ByChannel[ch] != v {
					t.Errorf("byChannel.%s = %d, want %d", ch, in.ByChannel[ch], v)
				}
			}
			if !rt.Enabled || rt.WindowMs != tt.feishuWin || rt.MaxWindowMs != tt.feishuMax {
				t.Errorf("feishu realtime %+v, want windowMs %d, maxWindowMs %d", rt, tt.feishuWin, tt.feishuMax)
			}
			if qq.WindowMs != tt.qqWin {
				t.Errorf("QQ realtime windowMs %d, want %d (the plugin's own)", qq.WindowMs, tt.qqWin)
			}
			for _, n := range d.Notes {
				if strings.Contains(n.Reason, "pincer refuses") {
					t.Errorf("a setting was carried over to a key pincer refuses: %s", n)
				}
				if strings.HasPrefix(n.Key, "messages.inbound") && tt.notes[n.Key] == "" {
					t.Errorf("unexpected note %s", n)
				}
			}
			for key, reason := range tt.notes {
				i := slices.IndexFunc(d.Notes, func(n Note) bool { return n.Key == key })
				if i < 0 || !strings.Contains(d.Notes[i].Reason, reason) {
					t.Errorf("no note for %s saying %q; notes: %v", key, reason, d.Notes)
				}
			}
			if tt.wantNoNotes && slices.ContainsFunc(d.Notes, func(n Note) bool { return strings.HasPrefix(n.Key, "messages") }) {
				t.Errorf("notes: %v", d.Notes)
			}
		})
	}
}

// TestFromOpenClawCarriesGroups: OpenClaw's per-group settings become chat
// entries; what a chat entry has no room for is noted by its key path.
func TestFromOpenClawCarriesGroups(t *testing.T) {
	doc := `{
	  channels: {
	    snowluma: {
	      wsUrl: 'ws://127.0.0.1:3001',
	      groups: {
	        '*': { requireMention: true, historyLimit: 30 },
	        '123456': { requireMention: false, systemPrompt: '你是学习群的助教', tools: { allow: ['onebot_get_history', 'group:fs'], deny: ['exec'] }, allowFrom: ['10001', 'nobody'] },
	        'general': { requireMention: false },
	        '654321': { enabled: false, skills: ['x'] },
	      },
	    },
	    feishu: { appId: 'cli_1', appSecret: 's', groups: { oc_abc: { requireMention: false, systemPrompt: 'hi' } } },
	  },
	}`
	d, err := FromOpenClaw([]byte(doc), "/home/u")
	if err != nil {
		t.Fatal(err)
	}
	out := d.JSON5()
	cfg, err := Parse(out, mapEnv(map[string]string{"FEISHU_APP_SECRET": "s"}))
	if err != nil {
		t.Fatalf("the imported configuration is refused: %v\n%s", err, out)
	}
	g := cfg.Channels.OneBot.Groups
	study := g["123456"]
	tests := []struct {
		name      string
		got, want any
	}{
		{"* requireMention", g["*"].Receive.Mention.RequireMentionInGroup && g["*"].Sets("receive.mention.requireMentionInGroup"), true},
		{"* sets nothing else", strings.Join(g["*"].Set(), ","), "receive.mention.requireMentionInGroup"},
		{"study requireMention", !study.Receive.Mention.RequireMentionInGroup && study.Sets("receive.mention.requireMentionInGroup"), true},
		{"study prompt", study.SystemPrompt, "你是学习群的助教"},
		{"study tools allow", strings.Join(study.Tools.Allow, ","), "onebot_get_history"},
		{"study tools deny", strings.Join(study.Tools.Deny, ","), "exec"},
		{"study allowFrom", strings.Join(study.AllowFrom, ","), "10001"},
		{"disabled group", g["654321"].Sets("enabled") && !g["654321"].Enabled, true},
		{"no group by name", len(g), 3},
		{"feishu group", cfg.Channels.Feishu.Groups["oc_abc"].SystemPrompt, "hi"},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("%s: got %v, want %v", tt.name, tt.got, tt.want)
		}
	}
	notes := map[string]string{}
	for _, n := range d.Notes {
		notes[n.Key] = n.Reason
	}
	for _, key := range []string{
		"channels.snowluma.groups.*.historyLimit", "channels.snowluma.groups.123456.tools.allow", "channels.snowluma.groups.123456.tools",
		"channels.snowluma.groups.123456.allowFrom", "channels.snowluma.groups.general", "channels.snowluma.groups.654321.skills",
	} {
		if _, ok := notes[key]; !ok {
			t.Errorf("no note for %s; notes: %v", key, d.Notes)
		}
	}
	for key := range notes {
		if key == "channels.snowluma.groups" || key == "channels.feishu.groups" {
			t.Errorf("the groups are noted as a whole: %s", notes[key])
		}
	}
}
