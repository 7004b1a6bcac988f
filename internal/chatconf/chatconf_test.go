package chatconf

import (
	"errors"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"

	"github.com/pincerbot/pincer/internal/config"
)

func noEnv(string) (string, bool) { return "", false }

func parse(t *testing.T, doc string) config.Config {
	t.Helper()
	cfg, err := config.Parse([]byte(doc), noEnv)
	if err != nil {
		t.Fatalf("config: %v", err)
	}
	return cfg
}

const layered = `{
  models: { providers: { a: { baseUrl: 'http://x', apiKey: 'k' } } },
  agents: { defaults: { systemPrompt: 'base prompt', model: { primary: 'a/m1', fallbacks: ['a/m2'] } } },
  messages: { queue: { byChannel: { onebot: 'collect' } } },
  channels: { onebot: {
    wsUrl: 'ws://x',
    receive: { mention: { keywords: ['bot'] } },
    groups: {
      '*': { receive: { mention: { keywords: ['hey', 'yo'] } }, thinking: 'low' },
      '100': { enabled: false },
      '200': { systemPrompt: 'tutor', model: { primary: 'a/m3' }, receive: { mention: { requireMentionInGroup: false } }, sendGapMs: 0 },
      '300': { systemPrompt: 'also this', systemPromptMode: 'append', receive: { mention: { keywords: [] } } },
    },
    accounts: { second: {
      wsUrl: 'ws://y', sendGapMs: 3000,
      groups: { '*': { thinking: 'high' }, '200': { model: { fallbacks: [] } } },
    } },
  } },
}`

func TestLayers(t *testing.T) {
	cfg := parse(t, layered)
	type want struct {
		enabled    bool
		prompt     string
		model      config.ModelChoice
		keywords   []string
		requireAt  bool
		thinking   string
		gap        int
		queue      string
		origins    map[string]string
		layerCount int
	}
	cases := []struct {
		addr string
		want want
	}{
		{"onebot:default:group:999", want{true, "base prompt", config.ModelChoice{Primary: "a/m1", Fallbacks: []string{"a/m2"}}, []string{"hey", "yo"}, true, "low", 1000, "collect", map[string]string{
			"receive.mention.keywords": "channels.onebot.groups.*", "systemPrompt": "agents.defaults", "model.primary": "agents.defaults",
			"sendGapMs": "default", "queue.mode": "messages.queue.byChannel.onebot", "queue.cap": "default", "enabled": "default",
			"receive.realtime.windowMs": "default",
		}, 1}},
		{"onebot:default:group:100", want{false, "base prompt", config.ModelChoice{Primary: "a/m1", Fallbacks: []string{"a/m2"}}, []string{"hey", "yo"}, true, "low", 1000, "collect", map[string]string{
			"enabled": "channels.onebot.groups.100", "thinking": "channels.onebot.groups.*",
		}, 2}},
		{"onebot:default:group:200", want{true, "tutor", config.ModelChoice{Primary: "a/m3", Fallbacks: []string{"a/m2"}}, []string{"hey", "yo"}, false, "low", 0, "collect", map[string]string{
			"systemPrompt": "channels.onebot.groups.200", "model.primary": "channels.onebot.groups.200", "model.fallbacks": "agents.defaults",
			"receive.mention.requireMentionInGroup": "channels.onebot.groups.200", "sendGapMs": "channels.onebot.groups.200",
		}, 2}},
		{"onebot:default:group:300", want{true, "base prompt\n\nalso this", config.ModelChoice{Primary: "a/m1", Fallbacks: []string{"a/m2"}}, []string{}, true, "low", 1000, "collect", map[string]string{
			"systemPrompt": "agents.defaults + channels.onebot.groups.300", "receive.mention.keywords": "channels.onebot.groups.300",
		}, 2}},
		{"onebot:second:group:200", want{true, "tutor", config.ModelChoice{Primary: "a/m3", Fallbacks: []string{}}, []string{"hey", "yo"}, false, "high", 0, "collect", map[string]string{
			"thinking": "channels.onebot.accounts.second.groups.*", "model.fallbacks": "channels.onebot.accounts.second.groups.200",
			"sendGapMs": "channels.onebot.groups.200",
		}, 4}},
		{"onebot:second:direct:5", want{true, "base prompt", config.ModelChoice{Primary: "a/m1", Fallbacks: []string{"a/m2"}}, []string{"bot"}, true, "", 3000, "collect", map[string]string{
			"receive.mention.keywords": "channels.onebot", "sendGapMs": "channels.onebot.accounts.second", "thinking": "default",
		}, 0}},
	}
	table, err := NewTable(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		t.Run(c.addr, func(t *testing.T) {
			a, err := ParseAddress(c.addr)
			if err != nil {
				t.Fatal(err)
			}
			v, err := Resolve(cfg, a)
			if err != nil {
				t.Fatal(err)
			}
			if looked := table.Lookup(a); !cmp.Equal(looked.Settings(), v.Settings()) {
				t.Errorf("the table's view differs from Resolve's:\n%s", cmp.Diff(v.Settings(), looked.Settings()))
			}
			got := want{
				enabled: v.Enabled, prompt: v.SystemPrompt, model: v.Model, keywords: v.Receive.Mention.Keywords,
				requireAt: v.Receive.Mention.RequireMentionInGroup, thinking: v.Thinking, gap: v.SendGapMs, queue: v.Queue.Mode,
				origins: map[string]string{}, layerCount: len(v.Layers),
			}
			for p := range c.want.origins {
				got.origins[p] = v.Origin(p)
			}
			if diff := cmp.Diff(c.want, got, cmp.AllowUnexported(want{})); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
	// Resolving never changes the configuration it reads.
	if kw := cfg.Channels.OneBot.Receive.Mention.Keywords; !cmp.Equal(kw, []string{"bot"}) {
		t.Errorf("channel keywords became %v", kw)
	}
	if fb := cfg.Agents.Defaults.Model.Fallbacks; !cmp.Equal(fb, []string{"a/m2"}) {
		t.Errorf("default fallbacks became %v", fb)
	}
}

func TestUnknownAccount(t *testing.T) {
	_, err := Resolve(config.Default(), Address{OneBot, "nope", Group, "1"})
	if !errors.Is(err, ErrNoAccount) {
		t.Errorf("err = %v", err)
	}
	for _, s := range []string{"onebot:default:group", "qq:default:group:1", "onebot:default:channel:1", "onebot::group:1"} {
		if _, err := ParseAddress(s); err == nil {
			t.Errorf("ParseAddress(%q) accepted", s)
		}
	}
}

func TestFeishuHasNoSendGap(t *testing.T) {
	cfg := parse(t, `{ channels: { feishu: { appId: 'cli', appSecret: 's', direct: { ou_1: { responsePrefix: '[bot] ' } } } } }`)
	v, err := Resolve(cfg, Address{Feishu, "default", Direct, "ou_1"})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range v.Settings() {
		if s.Path == "sendGapMs" {
			t.Errorf("a Feishu chat shows %v", s)
		}
		if s.Path == "responsePrefix" && (s.Value != `"[bot] "` || s.Layer != "channels.feishu.direct.ou_1") {
			t.Errorf("responsePrefix = %+v", s)
		}
	}
}

func TestSwap(t *testing.T) {
	r, err := NewResolver(config.Default())
	if err != nil {
		t.Fatal(err)
	}
	a := Address{OneBot, "default", Group, "7"}
	if v := r.Lookup(a); v == nil || !v.Enabled {
		t.Fatalf("default view = %+v", v)
	}
	var told *Table
	r.OnSwap(func(t *Table) { told = t })
	if err := r.Swap(parse(t, `{ channels: { onebot: { groups: { '7': { enabled: false } } } } }`)); err != nil {
		t.Fatal(err)
	}
	if v := r.Lookup(a); v.Enabled || told != r.Table() {
		t.Errorf("after Swap: enabled %v, told %v", v.Enabled, told != nil)
	}
}

// FuzzLayers lays random entries over each other: a view never fails to
// resolve, and a list set by a higher layer replaces the one below.
func FuzzLayers(f *testing.F) {
	f.Add("a", "b", true, false)
	f.Add("", "x", false, true)
	f.Fuzz(func(t *testing.T, star, own string, starSets, ownSets bool) {
		for _, s := range []string{star, own} {
			if !utf8.ValidString(s) || strings.ContainsFunc(s, unicode.IsControl) || strings.Contains(s, "$") {
				t.Skip() // not text, or ${ENV} substitution
			}
		}
		doc := `{ channels: { onebot: { groups: { '*': {`
		if starSets {
			doc += `receive: { mention: { keywords: [` + quote(star) + `] } }`
		}
		doc += `}, '1': {`
		if ownSets {
			doc += `receive: { mention: { keywords: [` + quote(own) + `] } }`
		}
		doc += `} } } } }`
		cfg, err := config.Parse([]byte(doc), noEnv)
		if err != nil {
			t.Skip()
		}
		v, err := Resolve(cfg, Address{OneBot, "default", Group, "1"})
		if err != nil {
			t.Fatal(err)
		}
		var want []string
		switch {
		case ownSets:
			want = []string{own}
		case starSets:
			want = []string{star}
		}
		if got := v.Receive.Mention.Keywords; len(got) != len(want) || (len(want) == 1 && got[0] != want[0]) {
			t.Errorf("keywords = %q, want %q", got, want)
		}
	})
}

func quote(s string) string {
	b := []byte{'"'}
	for _, r := range s {
		if r == '"' || r == '\\' {
			b = append(b, '\\')
		}
		b = append(b, string(r)...)
	}
	return string(append(b, '"'))
}

// TestLimitsLayer: the top-level limits are every chat's, a chat entry
// replaces them key by key, and each names the layer that set it.
func TestLimitsLayer(t *testing.T) {
	cfg := parse(t, `{
  limits: { perUser: { messagesPerMinute: 5, tokensPerDay: 1000 } },
  channels: { onebot: { wsUrl: 'ws://x', groups: { '1': { limits: { perUser: { messagesPerMinute: 1 }, perChat: { tokensPerDay: 50 } } } } } },
}`)
	for _, c := range []struct {
		id   string
		want config.Limits
		from map[string]string
	}{
		{"2", config.Limits{PerUser: config.Limit{MessagesPerMinute: 5, TokensPerDay: 1000}},
			map[string]string{"limits.perUser.messagesPerMinute": "limits", "limits.perUser.tokensPerDay": "limits", "limits.perChat.tokensPerDay": "default"}},
		{"1", config.Limits{PerUser: config.Limit{MessagesPerMinute: 1, TokensPerDay: 1000}, PerChat: config.Limit{TokensPerDay: 50}},
			map[string]string{"limits.perUser.messagesPerMinute": "channels.onebot.groups.1", "limits.perUser.tokensPerDay": "limits", "limits.perChat.tokensPerDay": "channels.onebot.groups.1"}},
	} {
		v, err := Resolve(cfg, Address{OneBot, "default", Group, c.id})
		if err != nil {
			t.Fatal(err)
		}
		if v.Limits != c.want {
			t.Errorf("group %s: limits %+v, want %+v", c.id, v.Limits, c.want)
		}
		for p, layer := range c.from {
			if got := v.Origin(p); got != layer {
				t.Errorf("group %s: %s from %q, want %q", c.id, p, got, layer)
			}
		}
	}
}
