package gateway

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/pincerbot/pincer/internal/channel/webchat"
	"github.com/pincerbot/pincer/internal/config"
	"github.com/pincerbot/pincer/internal/llm/llmtest"
)

// english sets ui.locale to English.
func english(c *config.Config) { c.UI.Locale = "en" }

// TestQQGroupHelpSpeaksTheLocale: a group's /help answers in Chinese on
// the defaults and in English with ui.locale 'en', the command names
// as they are.
func TestQQGroupHelpSpeaksTheLocale(t *testing.T) {
	tests := []struct {
		name string
		edit func(*config.Config)
		want []string
	}{
		{"default", nil, []string{"直接用自然语言和我聊天就好", "\n/new — 开始新会话", "\n/stop — 停止正在生成的回复", "/commands"}},
		{"en", english, []string{"Talk to me in plain words", "\n/new — start a new session", "\n/stop — stop the reply being written", "/commands"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newQQRig(t, tt.edit)
			r.push(t, groupFrom(1, 10001, "张三", atBot(), text(" /help")))
			s := waitSend(t, r.peer, r.ctx)
			got := sentText(s)
			if s.action != "send_group_msg" {
				t.Fatalf("/help answered with %s %q", s.action, got)
			}
			for _, want := range tt.want {
				if !strings.Contains(got, want) {
					t.Errorf("/help %q lacks %q", got, want)
				}
			}
			if n := len(r.model.Requests()); n != 0 {
				t.Errorf("/help called the model %d times", n)
			}
		})
	}
}

// TestQQDirectFailureNoticeSpeaksTheLocale: a direct chat whose model
// keeps failing is told which model failed and how, in Chinese on the
// defaults and in English with ui.locale 'en'.
func TestQQDirectFailureNoticeSpeaksTheLocale(t *testing.T) {
	tests := []struct {
		name string
		edit func(*config.Config)
		want string
	}{
		{"default", nil, "⚠️ 没有回复：openai/gpt-4o-mini 服务端出错（HTTP 500），请稍后再试。"},
		{"en", english, "⚠️ No reply: openai/gpt-4o-mini failed with a server error (HTTP 500). Please try again in a moment."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newQQRig(t, tt.edit)
			r.model.Script(llmtest.Reply{Status: http.StatusInternalServerError})
			r.push(t, privateFrom(1, 10001, "在吗"))
			s := waitSend(t, r.peer, r.ctx)
			if got := sentText(s); s.action != "send_private_msg" || got != tt.want {
				t.Errorf("direct chat got %s %q, want %q", s.action, got, tt.want)
			}
		})
	}
}

// TestPagesSpeakTheLocale: the web chat page and the dashboard a gateway
// serves are Chinese on the defaults and English with ui.locale 'en'.
func TestPagesSpeakTheLocale(t *testing.T) {
	tests := []struct {
		name               string
		edit               func(*config.Config)
		webchat, dashboard []string
	}{
		{"default", nil,
			[]string{`<html lang="zh-CN">`, `<button id="send" type="submit">发送</button>`, "<h2>你好，这里是 pincer。</h2>"},
			[]string{`<html lang="zh-CN">`, "<title>pincer 控制台</title>", "<h2>最近的错误</h2>"}},
		{"en", english,
			[]string{`<html lang="en">`, `<button id="send" type="submit">Send</button>`, "<h2>Hi, this is pincer.</h2>"},
			[]string{`<html lang="en">`, "<title>pincer dashboard</title>", "<h2>Recent errors</h2>"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := config.Default()
			if tt.edit != nil {
				tt.edit(&cfg)
			}
			g := startGateway(t, cfg)
			for path, wants := range map[string][]string{"/": tt.webchat, "/dashboard": tt.dashboard} {
				page := getPage(t, g.url+path)
				for _, want := range wants {
					if !strings.Contains(page, want) {
						t.Errorf("%s lacks %s", path, want)
					}
				}
			}
		})
	}
}

func getPage(t *testing.T, url string) string {
	t.Helper()
	res, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	if res.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s", url, res.Status)
	}
	return string(b)
}

// TestWebchatSaysNoModelBeforeTheFirstMessage: on the defaults, where no
// model is configured and the preview agent answers, the page's session
// says so before anything is sent and the page carries the notice, in
// the locale; with a model configured it says nothing of the kind.
func TestWebchatSaysNoModelBeforeTheFirstMessage(t *testing.T) {
	for _, tc := range []struct {
		name    string
		cfg     func() config.Config
		noModel bool
		notice  string
	}{
		{"defaults", config.Default, true, "还没有配置模型"},
		{"english", func() config.Config { c := config.Default(); english(&c); return c }, true, "No model is configured yet"},
		{"a model", func() config.Config { return withOpenAI("http://127.0.0.1:1") }, false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := startGateway(t, tc.cfg())
			code, body := fetch(t, g.url, "/api/session", "")
			if code != http.StatusOK {
				t.Fatalf("GET /api/session: %d %s", code, body)
			}
			var view webchat.SessionView
			if err := json.Unmarshal([]byte(body), &view); err != nil {
				t.Fatal(err)
			}
			if view.NoModel != tc.noModel || len(view.Transcript) != 0 {
				t.Errorf("session before the first message: noModel %v, %d turns; want noModel %v", view.NoModel, len(view.Transcript), tc.noModel)
			}
			_, page := fetch(t, g.url, "/", "")
			if !strings.Contains(page, `id="no-model"`) || tc.notice != "" && !strings.Contains(page, tc.notice) {
				t.Errorf("the page lacks the no-model notice %q", tc.notice)
			}
		})
	}
}
