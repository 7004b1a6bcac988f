package webchat_test

import (
	"context"
	"io"
	"io/fs"
	"iter"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/pincerbot/pincer/internal/agent"
	"github.com/pincerbot/pincer/internal/channel"
	"github.com/pincerbot/pincer/internal/channel/webchat"
	"github.com/pincerbot/pincer/internal/channel/webchat/webchattest"
	"github.com/pincerbot/pincer/internal/command"
	"github.com/pincerbot/pincer/internal/engine"
	"github.com/pincerbot/pincer/internal/llm"
	"github.com/pincerbot/pincer/internal/llm/preview"
	"github.com/pincerbot/pincer/internal/msg"
	"github.com/pincerbot/pincer/internal/store/sqlite"
	"github.com/pincerbot/pincer/internal/texts"
	"github.com/pincerbot/pincer/internal/texts/textstest"
)

func start(t *testing.T) (*httptest.Server, *webchat.Channel) {
	t.Helper()
	e := startWith(t, setup{})
	return e.srv, e.wc
}

// setup configures startWith.
type setup struct {
	// addr, when set, is the address to listen on instead of loopback.
	addr string
	// model, when set, makes the backend a webchat.ModelNamer naming it.
	model string
	// locale is the engine's and the page's; the zero locale is Chinese.
	locale texts.Locale
	// preview makes the backend a webchat.Previewer saying no model is
	// configured.
	preview bool
}

// env is a running web chat on an engine that answers with fakeModel.
type env struct {
	srv     *httptest.Server
	wc      *webchat.Channel
	backend *recordingBackend
}

func startWith(t *testing.T, s setup) *env {
	t.Helper()
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "p.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	release := make(chan struct{})
	runner := agent.NewRunner(agent.Options{Providers: map[string]llm.Provider{fakeID: fakeModel{release: release}}, MaxTokens: 100, ContextTokens: 10000})
	eng := engine.New(engine.Options{
		Store: st, Runner: runner, Models: []llm.Ref{fakeRef}, System: func() string { return "You are pincer." },
		Policy: command.Policy{AllowFrom: []string{"*"}}, Locale: s.locale,
	})
	wc, err := webchat.New(webchat.Options{Title: "pincer test", Locale: s.locale})
	if err != nil {
		t.Fatal(err)
	}
	rb := &recordingBackend{Engine: eng}
	var backend webchat.Backend = rb
	if s.model != "" {
		backend = namingBackend{rb, s.model}
	}
	if s.preview {
		backend = previewingBackend{namingBackend{rb, "preview/echo"}}
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); wc.Run(ctx, backend) }()
	t.Cleanup(func() { cancel(); <-done })
	srv := httptest.NewUnstartedServer(wc.Handler())
	if s.addr != "" {
		ln, err := net.Listen("tcp", s.addr)
		if err != nil {
			t.Fatal(err)
		}
		srv.Listener.Close()
		srv.Listener = ln
	}
	srv.Start()
	t.Cleanup(srv.Close)
	// Replies the fake model keeps writing end first, so that closing the
	// server does not wait for them.
	t.Cleanup(func() { close(release) })
	// Wait until Run has installed the backend.
	for {
		if _, err := webchattest.New(srv.URL).Session(); err == nil {
			break
		}
	}
	return &env{srv: srv, wc: wc, backend: rb}
}

// recordingBackend is the engine as the web chat's backend, remembering
// the peer of the last message.
type recordingBackend struct {
	*engine.Engine
	mu   sync.Mutex
	last msg.Peer
}

func (b *recordingBackend) Dispatch(ctx context.Context, m msg.Message, r channel.Replier) error {
	b.mu.Lock()
	b.last = m.Peer
	b.mu.Unlock()
	return b.Engine.Dispatch(ctx, m, r)
}

func (b *recordingBackend) lastPeer() msg.Peer {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.last
}

// namingBackend is a backend that names its model.
type namingBackend struct {
	*recordingBackend
	model string
}

func (b namingBackend) Model(msg.Peer) string { return b.model }

// previewingBackend is a backend no model is configured for: the model
// it names is the preview agent.
type previewingBackend struct{ namingBackend }

func (b previewingBackend) IsPreview(model string) bool { return model == b.model }

const fakeID = "fake"

var fakeRef = llm.Ref{Provider: fakeID, Model: "echo"}

// Messages fakeModel answers in its own way.
const (
	askMarkdown = "show markdown"
	askForever  = "write forever"
)

// markdownReply holds a code block, a table and HTML that must not run.
const markdownReply = "Here is the code:\n\n" +
	"```go\nfmt.Println(\"<b>hi</b>\")\n```\n\n" +
	"| Fruit | Qty |\n|:------|----:|\n| apple | 3 |\n| pear | 10 |\n\n" +
	"<script>window.pwned = 'script'</script>\n\n" +
	"An image: <img src=x onerror=\"window.pwned = 'img'\"> and [a trap](javascript:window.pwned='link') and [docs](https://example.com).\n"

// foreverFirst is all a forever reply says before it waits to be stopped.
const foreverFirst = "Counting slowly: 1\n"

// fakeModel answers askMarkdown with markdownReply in pieces, askForever
// with foreverFirst and then nothing until the turn is stopped (or the
// test ends), and anything else as the preview provider does.
type fakeModel struct{ release <-chan struct{} }

func (fakeModel) ID() string { return fakeID }

func (f fakeModel) Stream(ctx context.Context, req llm.Request) iter.Seq2[llm.Event, error] {
	last := ""
	if n := len(req.Messages); n > 0 {
		last = req.Messages[n-1].Text
	}
	switch {
	case strings.Contains(last, askMarkdown):
		return func(yield func(llm.Event, error) bool) {
			for piece := range strings.Lines(markdownReply) {
				if !yield(llm.Event{Kind: llm.EventText, Text: piece}, nil) {
					return
				}
			}
			yield(llm.Event{Kind: llm.EventDone, StopReason: "end"}, nil)
		}
	case strings.Contains(last, askForever):
		return func(yield func(llm.Event, error) bool) {
			if !yield(llm.Event{Kind: llm.EventText, Text: foreverFirst}, nil) {
				return
			}
			select {
			case <-ctx.Done():
				yield(llm.Event{}, llm.Transport(fakeID, req.Model, ctx, ctx.Err()))
			case <-f.release:
				yield(llm.Event{Kind: llm.EventDone, StopReason: "released"}, nil)
			}
		}
	}
	return preview.Provider{}.Stream(ctx, req)
}

func TestPageIsServed(t *testing.T) {
	srv, _ := start(t)
	res, err := http.Get(srv.URL + "/")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if res.StatusCode != 200 || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/html") {
		t.Fatalf("page: %d %s", res.StatusCode, res.Header.Get("Content-Type"))
	}
	for _, asset := range []string{"/static/app.js", "/static/app.css"} {
		r, err := http.Get(srv.URL + asset)
		if err != nil || r.StatusCode != 200 {
			t.Errorf("%s: %v %v", asset, err, r.StatusCode)
		}
		r.Body.Close()
	}
}

// TestPageSpeaksTheLocale: the page is Chinese by default and English
// with the English locale, its language named for the browser, and the
// texts its script shows handed to it in its locale.
func TestPageSpeaksTheLocale(t *testing.T) {
	tests := []struct {
		locale texts.Locale
		want   []string
		not    string
	}{
		{"", []string{`<html lang="zh-CN">`, "<h2>你好，这里是 pincer test。</h2>", `<button id="send" type="submit">发送</button>`, `>新对话</button>`, `placeholder="输入消息…"`, "&#34;webchat.copy&#34;:&#34;复制&#34;"}, "Send"},
		{texts.EN, []string{`<html lang="en">`, "<h2>Hi, this is pincer test.</h2>", `<button id="send" type="submit">Send</button>`, `>New chat</button>`, `placeholder="Message…"`, "&#34;webchat.copy&#34;:&#34;Copy&#34;"}, "发送"},
	}
	for _, tt := range tests {
		e := startWith(t, setup{locale: tt.locale})
		res, err := http.Get(e.srv.URL + "/")
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(res.Body)
		res.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		page := string(body)
		textstest.CheckPage(t, tt.locale, page, tt.want, tt.not)
	}
}

// TestScriptTextsCoverTheScript: every text the page's script names is
// handed to it.
func TestScriptTextsCoverTheScript(t *testing.T) {
	js, err := fs.ReadFile(webchat.Assets(), "app.js")
	if err != nil {
		t.Fatal(err)
	}
	textstest.CheckScriptTexts(t, js, "webchat.", webchat.ScriptTexts())
}

func TestPostStreamsPreviewAndKeepsSession(t *testing.T) {
	srv, _ := start(t)
	c := webchattest.New(srv.URL)
	res, _, err := c.Post("hello pincer", "")
	if err != nil {
		t.Fatal(err)
	}
	events, err := webchattest.Events(res)
	if err != nil {
		t.Fatal(err)
	}
	deltas := 0
	for _, e := range events {
		if e.Name == webchat.EventDelta {
			deltas++
		}
	}
	if deltas < 2 {
		t.Errorf("want the reply streamed in several deltas, got %d", deltas)
	}
	streamed, final := webchattest.Text(events, webchat.EventDelta), webchattest.Text(events, webchat.EventReply)
	if streamed != final {
		t.Errorf("streamed text differs from the final reply:\n%q\n%q", streamed, final)
	}
	for _, want := range []string{"[pincer preview]", "You are pincer.", "hello pincer", "=== User message ==="} {
		if !strings.Contains(final, want) {
			t.Errorf("preview lacks %q:\n%s", want, final)
		}
	}
	if last := events[len(events)-1]; last.Name != webchat.EventDone {
		t.Errorf("last event = %s", last.Name)
	}

	view, err := c.Session()
	if err != nil {
		t.Fatal(err)
	}
	tr := view["transcript"].([]any)
	if len(tr) != 2 || tr[1].(map[string]any)["text"] != final {
		t.Errorf("transcript after one turn: %v", tr)
	}

	// A second browser has its own, empty session.
	other, err := webchattest.New(srv.URL).Session()
	if err != nil {
		t.Fatal(err)
	}
	if n := len(other["transcript"].([]any)); n != 0 {
		t.Errorf("another browser sees %d turns", n)
	}

	// The next turn of the first browser shows the earlier exchange as context.
	res, _, _ = c.Post("second", "")
	events, _ = webchattest.Events(res)
	if got := webchattest.Text(events, webchat.EventReply); !strings.Contains(got, "Context: 2 earlier messages") {
		t.Errorf("second preview lacks the transcript:\n%s", got)
	}
}

func TestPostIsIdempotentWithID(t *testing.T) {
	srv, _ := start(t)
	c := webchattest.New(srv.URL)
	for i, want := range []string{webchat.EventDone, webchat.EventFail} {
		res, _, err := c.Post("once", "client-id-1")
		if err != nil {
			t.Fatal(err)
		}
		events, _ := webchattest.Events(res)
		if last := events[len(events)-1]; last.Name != want {
			t.Errorf("post %d ended with %s, want %s", i+1, last.Name, want)
		}
	}
	view, _ := c.Session()
	if n := len(view["transcript"].([]any)); n != 2 {
		t.Errorf("a retried post made %d turns, want 2", n)
	}
}

func TestPostRejectsBadRequests(t *testing.T) {
	srv, _ := start(t)
	tests := []struct {
		name, body, ctype string
		header            http.Header
		want              int
	}{
		{"form post", "text=hi", "application/x-www-form-urlencoded", nil, http.StatusUnsupportedMediaType},
		{"empty text", `{"text":"  "}`, "application/json", nil, http.StatusBadRequest},
		{"bad json", `{"text":`, "application/json", nil, http.StatusBadRequest},
		{"bad id", `{"text":"x","id":"../etc"}`, "application/json", nil, http.StatusBadRequest},
		{"cross-site", `{"text":"x"}`, "application/json", http.Header{"Sec-Fetch-Site": {"cross-site"}}, http.StatusForbidden},
	}
	for _, tt := range tests {
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/api/messages", strings.NewReader(tt.body))
		req.Header.Set("Content-Type", tt.ctype)
		for k, v := range tt.header {
			req.Header[k] = v
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != tt.want {
			t.Errorf("%s: status %d, want %d", tt.name, res.StatusCode, tt.want)
		}
	}
}

func TestSendReachesOpenEventStream(t *testing.T) {
	srv, wc := start(t)
	c := webchattest.New(srv.URL)
	if _, err := c.Session(); err != nil { // obtain the browser cookie
		t.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodGet, srv.URL+"/api/events", nil)
	res, err := c.HTTP.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	u, _ := res.Request.URL.Parse("/")
	var browser string
	for _, ck := range c.HTTP.Jar.Cookies(u) {
		if ck.Name == webchat.CookieName {
			browser = ck.Value
		}
	}
	got := make(chan string, 1)
	go webchattest.Read(res.Body, func(e webchattest.Event) bool {
		got <- e.Data["text"].(string)
		return false
	})
	// The subscription is registered before the handler flushes its first
	// comment, which the client has read once Do returned.
	if _, err := wc.Send(context.Background(), msg.Outbound{Peer: msg.Peer{Kind: msg.Direct, ID: browser}, Text: "ping from operator"}); err != nil {
		t.Fatal(err)
	}
	if text := <-got; text != "ping from operator" {
		t.Errorf("event text %q", text)
	}
	if _, err := wc.Send(context.Background(), msg.Outbound{Peer: msg.Peer{Kind: msg.Group, ID: "1"}, Text: "x"}); err == nil {
		t.Error("groups do not exist in the web chat")
	}
}

func TestSessionNamesTheModel(t *testing.T) {
	named := startWith(t, setup{model: "openai/gpt-test"})
	view, err := webchattest.New(named.srv.URL).Session()
	if err != nil {
		t.Fatal(err)
	}
	if view["model"] != "openai/gpt-test" {
		t.Errorf("model = %v, want the backend's", view["model"])
	}

	srv, _ := start(t) // a backend that is no ModelNamer
	view, err = webchattest.New(srv.URL).Session()
	if err != nil {
		t.Fatal(err)
	}
	if m, ok := view["model"]; ok {
		t.Errorf("model = %v from a backend that names none", m)
	}
}

func TestRepliesCarryRenderedMarkdown(t *testing.T) {
	srv, _ := start(t)
	c := webchattest.New(srv.URL)
	res, _, err := c.Post("please "+askMarkdown, "")
	if err != nil {
		t.Fatal(err)
	}
	events, err := webchattest.Events(res)
	if err != nil {
		t.Fatal(err)
	}
	var html string
	for _, e := range events {
		switch e.Name {
		case webchat.EventDelta:
			if _, ok := e.Data["html"]; ok {
				t.Error("a delta carries html; streamed text is shown as text")
			}
		case webchat.EventReply:
			html, _ = e.Data["html"].(string)
		}
	}
	check := func(where, html string) {
		t.Helper()
		for _, want := range []string{"<table>", `<pre><code class="language-go">`, `<a href="https://example.com"`, "&lt;script&gt;"} {
			if !strings.Contains(html, want) {
				t.Errorf("%s: html lacks %q:\n%s", where, want, html)
			}
		}
		for _, banned := range []string{"<script", "<img", "javascript:"} {
			if strings.Contains(html, banned) {
				t.Errorf("%s: html has %q:\n%s", where, banned, html)
			}
		}
	}
	check("reply event", html)

	view, err := c.Session()
	if err != nil {
		t.Fatal(err)
	}
	tr := view["transcript"].([]any)
	if len(tr) != 2 {
		t.Fatalf("transcript: %v", tr)
	}
	if _, ok := tr[0].(map[string]any)["html"]; ok {
		t.Error("the user's turn has html; only replies are rendered")
	}
	stored, _ := tr[1].(map[string]any)["html"].(string)
	check("session", stored)
	if stored != html {
		t.Errorf("the session renders the reply differently from the reply event:\n%s\n%s", stored, html)
	}
}
