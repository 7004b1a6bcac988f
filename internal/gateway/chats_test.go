package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pincerbot/pincer/internal/channel/feishu/feishusim"
	"github.com/pincerbot/pincer/internal/config"
	"github.com/pincerbot/pincer/internal/dashboard"
	"github.com/pincerbot/pincer/internal/llm/llmtest"
)

// withChats lays the chat entries of doc (a channels.onebot section in
// JSON5) over the rig's configuration.
func withChats(t *testing.T, doc string) func(*config.Config) {
	t.Helper()
	parsed, err := config.Parse([]byte(`{ models: { providers: { openai: { baseUrl: 'http://x', apiKey: 'k' } } }, channels: { onebot: `+doc+` } }`), func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	return func(c *config.Config) {
		c.Channels.OneBot.Groups = parsed.Channels.OneBot.Groups
		c.Channels.OneBot.Direct = parsed.Channels.OneBot.Direct
	}
}

// inGroup is a member's message in group id.
func inGroup(group, id int64, user int64, name string, segs ...any) map[string]any {
	ev := groupFrom(id, user, name, segs...)
	ev["group_id"] = group
	return ev
}

// systemOf is the system prompt of a model request.
func systemOf(req llmtest.Request) string {
	msgs, _ := req.Body["messages"].([]any)
	for _, m := range msgs {
		if mm, _ := m.(map[string]any); mm["role"] == "system" {
			return mustString(mm["content"])
		}
	}
	return ""
}

// requests waits until the model has had n requests and returns them.
func (r *qqRig) requests(t *testing.T, n int) []llmtest.Request {
	t.Helper()
	for {
		if reqs := r.model.Requests(); len(reqs) >= n {
			return reqs
		}
		select {
		case <-r.ctx.Done():
			t.Fatalf("the model had %d requests, want %d", len(r.model.Requests()), n)
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// TestGroupsWithSettingsOfTheirOwn: through the real gateway and a OneBot
// WebSocket, two groups with their own system prompt, model and keyword
// each get requests that differ exactly so; one group's keyword does not
// trigger in the other.
func TestGroupsWithSettingsOfTheirOwn(t *testing.T) {
	r := newQQRig(t, withChats(t, `{ groups: {
	  '700000001': { systemPrompt: '你是学习群的助教。', model: { primary: 'openai/tutor' }, receive: { mention: { requireMentionInGroup: false, keywords: ['老师'] } } },
	  '700000002': { systemPrompt: '你是公会的段子手。', model: { primary: 'openai/joker' }, receive: { mention: { requireMentionInGroup: false, keywords: ['哈哈'] } } },
	} }`))
	chat := func(g int64) string { return fmt.Sprintf("onebot:default:group:%d", g) }
	// The study group's keyword means nothing in the guild.
	r.push(t, inGroup(700000002, 1, 10001, "张三", text("老师 在吗")))
	traceOf(t, r.ctx, r.gw.url, chat(700000002), "1", "not triggered")
	r.push(t, inGroup(700000001, 2, 10001, "张三", text("老师 这题怎么做")))
	first := r.requests(t, 1)[0]
	r.push(t, inGroup(700000002, 3, 10002, "李四", text("哈哈 讲个笑话")))
	second := r.requests(t, 2)[1]
	type got struct{ model, system string }
	for _, c := range []struct {
		req            llmtest.Request
		model, prompt  string
		otherPrompt    string
		user, notAsked string
	}{
		{first, "tutor", "你是学习群的助教。", "段子手", "这题怎么做", "讲个笑话"},
		{second, "joker", "你是公会的段子手。", "助教", "讲个笑话", "这题怎么做"},
	} {
		g := got{model: mustString(c.req.Body["model"]), system: systemOf(c.req)}
		if g.model != c.model || !strings.HasPrefix(g.system, c.prompt) || strings.Contains(g.system, c.otherPrompt) {
			t.Errorf("want model %s and a system prompt starting %q, got %+v", c.model, c.prompt, g)
		}
		users := strings.Join(userMessages(c.req), "\n")
		if !strings.Contains(users, c.user) || strings.Contains(users, c.notAsked) {
			t.Errorf("the request of %s reads %q", c.model, users)
		}
	}
	// The two requests differ in these and nothing else of the request's
	// settings.
	a, b := first.Body, second.Body
	for k := range a {
		if k == "model" || k == "messages" {
			continue
		}
		if ja, jb := mustJSON(a[k]), mustJSON(b[k]); ja != jb {
			t.Errorf("the requests differ in %s: %s and %s", k, ja, jb)
		}
	}
	if len(a) != len(b) {
		t.Errorf("the requests have different keys: %v and %v", keysOf(a), keysOf(b))
	}
}

// TestOnlyTheEnabledGroupAnswers: a '*' entry switches every group off but
// one that switches itself on: a mention elsewhere is traced as silent and
// never reaches the model; the enabled group is answered.
func TestOnlyTheEnabledGroupAnswers(t *testing.T) {
	r := newQQRig(t, withChats(t, `{ groups: { '*': { enabled: false }, '700000001': { enabled: true } } }`))
	r.model.Script(llmtest.Reply{Text: []string{"在的"}})
	r.push(t, inGroup(700000002, 1, 10001, "张三", atBot(), text(" 在吗")))
	rec := traceOf(t, r.ctx, r.gw.url, "onebot:default:group:700000002", "1", "not triggered")
	if b := mustJSON(rec); !strings.Contains(b, "enabled is false (channels.onebot.groups.*)") {
		t.Errorf("the trace does not say why: %s", b)
	}
	r.push(t, inGroup(700000001, 2, 10001, "张三", atBot(), text(" 在吗")))
	s := waitSend(t, r.peer, r.ctx)
	if s.params.GroupID != 700000001 || sentText(s) != "在的" {
		t.Errorf("sent %+v", s)
	}
	if n := len(r.model.Requests()); n != 1 {
		t.Errorf("%d model requests; the switched-off group must not be answered", n)
	}
	for _, c := range r.peer.Calls() {
		if strings.HasPrefix(c.Action, "send_") && strings.Contains(string(c.Params), "700000002") {
			t.Errorf("sent to the switched-off group: %s", c.Params)
		}
	}
	// The dashboard's chat view says where the chat's settings come from.
	res, err := http.Get(r.gw.url + "/api/dashboard/chat?chat=" + url.QueryEscape("onebot:default:group:700000002"))
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var view dashboard.ChatView
	if err := json.NewDecoder(res.Body).Decode(&view); err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("GET the chat view: %d %v", res.StatusCode, err)
	}
	want := dashboard.Setting{Path: "enabled", Value: "false", Layer: "channels.onebot.groups.*"}
	if !slices.Contains(view.Settings, want) {
		t.Errorf("the chat view does not show %+v: %+v", want, view.Settings)
	}
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

func keysOf(m map[string]any) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// TestFeishuGroupWithSettingsOfItsOwn: through the real gateway and the
// simulated open platform, a Feishu group's entry triggers on its keyword
// without an @ and prefixes its replies.
func TestFeishuGroupWithSettingsOfItsOwn(t *testing.T) {
	parsed, err := config.Parse([]byte(`{ channels: { feishu: { groups: { '`+larkGroup+`': {
	  responsePrefix: '[飞书群] ', receive: { mention: { requireMentionInGroup: false, keywords: ['帮忙'] } },
	} } } } }`), func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	r := newLarkRig(t, func(c *config.Config) { c.Channels.Feishu.Groups = parsed.Channels.Feishu.Groups })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r.post(t, ctx, feishusim.Message{ID: "om_kw0000000000000000000000001", ChatID: larkGroup, SenderID: larkUserA, Content: `{"text":"谁来帮忙看看"}`}, feishusim.EventOptions{})
	sent := r.waitSent(t, ctx, 1)
	if got := larkText(t, sent[0]); !strings.HasPrefix(got, "[飞书群] ") || !strings.Contains(got, "谁来帮忙看看") {
		t.Errorf("the reply (the preview agent echoes its input) is %q", got)
	}
}
