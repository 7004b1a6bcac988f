package webchat_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pincerbot/pincer/internal/agent"
	"github.com/pincerbot/pincer/internal/channel/webchat"
	"github.com/pincerbot/pincer/internal/channel/webchat/webchattest"
	"github.com/pincerbot/pincer/internal/engine"
	"github.com/pincerbot/pincer/internal/llm"
	"github.com/pincerbot/pincer/internal/llm/preview"
	"github.com/pincerbot/pincer/internal/msg"
	"github.com/pincerbot/pincer/internal/store/sqlite"
)

func start(t *testing.T) (*httptest.Server, *webchat.Channel) {
	t.Helper()
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "p.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	runner := agent.NewRunner(agent.Options{Providers: map[string]llm.Provider{preview.ID: preview.Provider{}}, MaxTokens: 100, ContextTokens: 10000})
	eng := engine.New(engine.Options{Store: st, Runner: runner, Models: []llm.Ref{preview.Ref}, System: func() string { return "You are pincer." }})
	wc, err := webchat.New(webchat.Options{Title: "pincer test"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); wc.Run(ctx, eng) }()
	t.Cleanup(func() { cancel(); <-done })
	srv := httptest.NewServer(wc.Handler())
	t.Cleanup(srv.Close)
	// Wait until Run has installed the backend.
	for {
		if _, err := webchattest.New(srv.URL).Session(); err == nil {
			break
		}
	}
	return srv, wc
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
