package dashboard_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/pincerbot/pincer/internal/dashboard"
	"github.com/pincerbot/pincer/internal/msg"
	"github.com/pincerbot/pincer/internal/texts"
	"github.com/pincerbot/pincer/internal/texts/textstest"
	"github.com/pincerbot/pincer/internal/trace"
)

// fakeSource answers with fixed values.
type fakeSource struct {
	status dashboard.Status
	chats  map[string]dashboard.ChatView
	err    error
}

func (f *fakeSource) Status(context.Context) dashboard.Status { return f.status }

func (f *fakeSource) Chat(_ context.Context, chat string) (dashboard.ChatView, error) {
	if f.err != nil {
		return dashboard.ChatView{}, f.err
	}
	v, ok := f.chats[chat]
	if !ok {
		return dashboard.ChatView{}, fmt.Errorf("chat %s: %w", chat, dashboard.ErrNoChat)
	}
	return v, nil
}

func groupMessage(acct msg.AccountID, group, id, text string) msg.Message {
	return msg.Message{
		ID: msg.MessageID(id), Channel: "onebot", Account: acct, Peer: msg.Peer{Kind: msg.Group, ID: group},
		Sender: msg.Sender{ID: "42", Name: "alice"}, Text: text,
	}
}

func newDashboard(t *testing.T, o dashboard.Options) http.Handler {
	t.Helper()
	d, err := dashboard.New(o)
	if err != nil {
		t.Fatal(err)
	}
	return d.Handler()
}

func get(t *testing.T, h http.Handler, target string) *httptest.ResponseRecorder {
	t.Helper()
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, target, nil))
	return w
}

func decode[T any](t *testing.T, w *httptest.ResponseRecorder) T {
	t.Helper()
	var v T
	if ct := w.Header().Get("Content-Type"); ct != "application/json" {
		t.Fatalf("Content-Type %q", ct)
	}
	if err := json.Unmarshal(w.Body.Bytes(), &v); err != nil {
		t.Fatalf("decode %s: %v", w.Body, err)
	}
	return v
}

func TestPageIsServedWithAStrictPolicy(t *testing.T) {
	h := newDashboard(t, dashboard.Options{Title: "ops"})
	w := get(t, h, "/dashboard")
	if w.Code != http.StatusOK {
		t.Fatalf("status %d", w.Code)
	}
	csp := w.Header().Get("Content-Security-Policy")
	for _, want := range []string{"default-src 'none'", "script-src 'self'", "style-src 'self'", "connect-src 'self'"} {
		if !strings.Contains(csp, want) {
			t.Errorf("CSP %q lacks %q", csp, want)
		}
	}
	if strings.Contains(csp, "unsafe-inline") {
		t.Errorf("CSP %q allows inline code", csp)
	}
	body := w.Body.String()
	for _, want := range []string{"<title>ops</title>", `name="viewport"`, `src="dashboard/static/app.js"`, `href="./"`} {
		if !strings.Contains(body, want) {
			t.Errorf("page lacks %s", want)
		}
	}
	if strings.Contains(body, "<script>") || strings.Contains(body, "<style") || strings.Contains(body, "style=") {
		t.Error("page has inline script or style")
	}
	for _, asset := range []string{"app.js", "app.css"} {
		if w := get(t, h, "/dashboard/static/"+asset); w.Code != http.StatusOK || w.Body.Len() == 0 {
			t.Errorf("%s: status %d, %d bytes", asset, w.Code, w.Body.Len())
		}
	}
	if w := get(t, h, "/dashboard/"); w.Code != http.StatusMovedPermanently || w.Header().Get("Location") != "/dashboard" {
		t.Errorf("/dashboard/: %d to %q", w.Code, w.Header().Get("Location"))
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
		{"", []string{`<html lang="zh-CN">`, "<title>pincer 控制台</title>", "<h2>决策记录 <span", `<p class="muted">没有账号信息。</p>`, "&#34;dashboard.live&#34;:&#34;实时&#34;"}, ">Accounts<"},
		{texts.EN, []string{`<html lang="en">`, "<title>pincer dashboard</title>", "<h2>Decisions <span", `<p class="muted">No accounts reported.</p>`, "&#34;dashboard.live&#34;:&#34;live&#34;"}, "账号"},
	}
	for _, tt := range tests {
		page := get(t, newDashboard(t, dashboard.Options{Locale: tt.locale}), "/dashboard").Body.String()
		textstest.CheckPage(t, tt.locale, page, tt.want, tt.not)
	}
}

// TestScriptTextsCoverTheScript: every text the page's script names is
// handed to it.
func TestScriptTextsCoverTheScript(t *testing.T) {
	js, err := fs.ReadFile(dashboard.Assets(), "app.js")
	if err != nil {
		t.Fatal(err)
	}
	textstest.CheckScriptTexts(t, js, "dashboard.", dashboard.ScriptTexts())
}

func TestRegisterSitsBesideTheWebChat(t *testing.T) {
	d, err := dashboard.New(dashboard.Options{})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("chat")) })
	mux.HandleFunc("GET /api/events", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("events")) })
	d.Register(mux)
	if w := get(t, mux, "/"); w.Body.String() != "chat" {
		t.Errorf("/ answered %q", w.Body)
	}
	if w := get(t, mux, "/api/events"); w.Body.String() != "events" {
		t.Errorf("/api/events answered %q", w.Body)
	}
	for _, path := range []string{"/dashboard", "/api/dashboard/status", "/api/trace"} {
		if w := get(t, mux, path); w.Code != http.StatusOK {
			t.Errorf("%s: %d", path, w.Code)
		}
	}
}

func TestStatusCarriesTheSourceAndTheLoggedErrors(t *testing.T) {
	logs := dashboard.NewErrorLog(slog.DiscardHandler, dashboard.ErrorLogOptions{})
	slog.New(logs).Error("connect failed", "account", "main")
	src := &fakeSource{status: dashboard.Status{
		Version:  "v1.2.3",
		Accounts: []dashboard.Account{{Channel: "onebot", ID: "main", State: dashboard.StateConnected, Self: "10001", Implementation: "NapCat", Version: "4.1"}},
		Config:   dashboard.ConfigCheck{OK: true, Warnings: []string{"history off"}},
	}}
	h := newDashboard(t, dashboard.Options{Source: src, Errors: logs, Recorder: trace.New(trace.Options{})})
	st := decode[dashboard.StatusView](t, get(t, h, "/api/dashboard/status"))
	if st.Version != "v1.2.3" || len(st.Accounts) != 1 || st.Accounts[0].Implementation != "NapCat" || st.Accounts[0].State != "connected" {
		t.Errorf("status %+v", st.Status)
	}
	if !st.Config.OK || len(st.Config.Warnings) != 1 {
		t.Errorf("config %+v", st.Config)
	}
	if len(st.Errors) != 1 || st.Errors[0].Message != "connect failed" {
		t.Errorf("errors %+v", st.Errors)
	}
	if len(st.Rates.Points) != int(dashboard.RateSpan/dashboard.RateBucket) || st.Rates.BucketSeconds != 10 {
		t.Errorf("rates: %d points of %d s", len(st.Rates.Points), st.Rates.BucketSeconds)
	}

	// Without a source the lists are empty, not null, for the page.
	w := get(t, newDashboard(t, dashboard.Options{}), "/api/dashboard/status")
	for _, want := range []string{`"accounts":[]`, `"queues":[]`, `"errors":[]`, `"warnings":[]`} {
		if !strings.Contains(w.Body.String(), want) {
			t.Errorf("status without a source lacks %s: %s", want, w.Body)
		}
	}
}

func TestTraceAnswersRecordsNewestFirst(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := trace.New(trace.Options{})
		h := newDashboard(t, dashboard.Options{Recorder: rec})
		a := groupMessage("main", "100", "1", "hello")
		b := groupMessage("main", "200", "2", "@bot hi")
		c := groupMessage("alt", "100", "3", "other account")
		for _, m := range []msg.Message{a, b, c} {
			rec.Begin(m)
			time.Sleep(time.Second)
		}
		rec.Step(trace.KeyOf(a), trace.StageTrigger, "not triggered", "no @ of the bot; no keyword matched")

		ids := func(target string) string {
			t.Helper()
			w := get(t, h, target)
			if w.Code != http.StatusOK {
				t.Fatalf("%s: %d %s", target, w.Code, w.Body)
			}
			var got []string
			for _, r := range decode[dashboard.Records](t, w).Records {
				got = append(got, string(r.Key.ID))
			}
			return strings.Join(got, ",")
		}
		if got := ids("/api/trace"); got != "3,2,1" {
			t.Errorf("recent: %s", got)
		}
		if got := ids("/api/trace?limit=2"); got != "3,2" {
			t.Errorf("recent, 2: %s", got)
		}
		if got := ids("/api/trace?chat=onebot:main:group:100"); got != "1" {
			t.Errorf("chat: %s", got)
		}
		if got := ids("/api/trace?chat=onebot:main:GROUP:200&id=2"); got != "2" {
			t.Errorf("chat and id: %s", got)
		}
		if got := ids("/api/trace?chat=onebot:main:group:200&id=1"); got != "" {
			t.Errorf("another chat's id: %s", got)
		}
		w := get(t, h, "/api/trace?chat=onebot:main:group:100")
		r := decode[dashboard.Records](t, w).Records[0]
		if r.Outcome() != "not triggered" || r.Steps[1].Detail != "no @ of the bot; no keyword matched" || r.Preview != "hello" {
			t.Errorf("record %+v", r)
		}
	})
}

func TestTraceRefusesBadQueries(t *testing.T) {
	h := newDashboard(t, dashboard.Options{Recorder: trace.New(trace.Options{})})
	for target, want := range map[string]string{
		"/api/trace?limit=abc":               "limit must be a whole number from 1 to 1000",
		"/api/trace?limit=0":                 "limit must be",
		"/api/trace?limit=-3":                "limit must be",
		"/api/trace?limit=1001":              "limit must be",
		"/api/trace?chat=onebot":             "want channel:account:kind:id",
		"/api/trace?chat=onebot:main:room:1": "unknown kind",
		"/api/trace?id=5":                    "id needs chat",
		"/api/dashboard/chat":                "chat is missing",
		"/api/dashboard/chat?chat=x:y":       "want channel:account:kind:id",
	} {
		w := get(t, h, target)
		if w.Code != http.StatusBadRequest {
			t.Errorf("%s: status %d", target, w.Code)
			continue
		}
		if e := decode[map[string]string](t, w)["error"]; !strings.Contains(e, want) {
			t.Errorf("%s: error %q, want %q", target, e, want)
		}
	}
}

func TestChatViewComesFromTheSource(t *testing.T) {
	opened := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	src := &fakeSource{chats: map[string]dashboard.ChatView{
		"onebot:main:group:100": {
			History: []dashboard.Line{{At: opened, Sender: "alice", Text: "hi"}},
			Window:  &dashboard.Window{Opened: opened, Messages: 3},
			Session: &dashboard.Session{Key: "onebot:main:group:100", Model: "m1", Turns: 4},
		},
	}}
	h := newDashboard(t, dashboard.Options{Source: src})
	w := get(t, h, "/api/dashboard/chat?chat=onebot:main:group:100")
	v := decode[dashboard.ChatView](t, w)
	if v.Chat != "onebot:main:group:100" || len(v.History) != 1 || v.Window.Messages != 3 || v.Session.Turns != 4 || v.Digests == nil {
		t.Errorf("view %+v", v)
	}
	if w := get(t, h, "/api/dashboard/chat?chat=onebot:main:group:999"); w.Code != http.StatusNotFound {
		t.Errorf("unknown chat: %d", w.Code)
	}
	src.err = errors.New("disk on fire")
	w = get(t, h, "/api/dashboard/chat?chat=onebot:main:group:100")
	if w.Code != http.StatusInternalServerError || strings.Contains(w.Body.String(), "disk") {
		t.Errorf("failing source: %d %s", w.Code, w.Body)
	}
}

// streamWriter is a ResponseWriter an event stream can be read from while
// it is written.
type streamWriter struct {
	mu   sync.Mutex
	h    http.Header
	body bytes.Buffer
}

func (s *streamWriter) Header() http.Header { return s.h }
func (s *streamWriter) WriteHeader(int)     {}
func (s *streamWriter) Flush()              {}
func (s *streamWriter) Write(b []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.body.Write(b)
}

func (s *streamWriter) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.body.String()
}

// events parses the step events written so far.
func (s *streamWriter) events(t *testing.T) []trace.Event {
	t.Helper()
	var out []trace.Event
	for block := range strings.SplitSeq(s.String(), "\n\n") {
		data, ok := strings.CutPrefix(block, "event: step\ndata: ")
		if !ok {
			continue
		}
		var ev trace.Event
		if err := json.Unmarshal([]byte(data), &ev); err != nil {
			t.Fatalf("event %q: %v", data, err)
		}
		out = append(out, ev)
	}
	return out
}

// openStream starts GET /api/trace/stream; the returned channel is closed
// when the handler returns.
func openStream(ctx context.Context, h http.Handler) (*streamWriter, <-chan struct{}) {
	w := &streamWriter{h: http.Header{}}
	done := make(chan struct{})
	go func() {
		defer close(done)
		h.ServeHTTP(w, httptest.NewRequestWithContext(ctx, http.MethodGet, "/api/trace/stream", nil))
	}()
	return w, done
}

func ended(done <-chan struct{}) bool {
	select {
	case <-done:
		return true
	default:
		return false
	}
}

func TestStreamFollowsStepsUntilTheRequestEnds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := trace.New(trace.Options{})
		d, err := dashboard.New(dashboard.Options{Recorder: rec})
		if err != nil {
			t.Fatal(err)
		}
		before := groupMessage("main", "100", "0", "before the stream")
		rec.Begin(before)

		ctx, cancel := context.WithCancel(context.Background())
		w, done := openStream(ctx, d.Handler())
		synctest.Wait()
		if ct := w.Header().Get("Content-Type"); ct != "text/event-stream" {
			t.Errorf("Content-Type %q", ct)
		}
		m := groupMessage("main", "100", "1", "what's up")
		rec.Begin(m)
		rec.Step(trace.KeyOf(m), trace.StageTrigger, "not triggered", "no @ of the bot; no keyword matched")
		synctest.Wait()
		evs := w.events(t)
		if len(evs) != 2 {
			t.Fatalf("%d events: %s", len(evs), w)
		}
		if evs[0].Record.Key.ID != "1" || evs[1].Step.Outcome != "not triggered" || len(evs[1].Record.Steps) != 2 ||
			evs[1].Step.Detail != "no @ of the bot; no keyword matched" {
			t.Errorf("events %+v", evs)
		}

		time.Sleep(dashboard.Heartbeat - time.Nanosecond)
		synctest.Wait()
		if strings.Contains(w.String(), ": heartbeat") {
			t.Error("heartbeat before its time")
		}
		time.Sleep(time.Nanosecond)
		synctest.Wait()
		if !strings.Contains(w.String(), ": heartbeat\n\n") {
			t.Errorf("no heartbeat after %v: %q", dashboard.Heartbeat, w)
		}

		if ended(done) {
			t.Fatal("the stream ended on its own")
		}
		cancel()
		synctest.Wait()
		if !ended(done) {
			t.Error("the stream outlived its request")
		}
	})
}

func TestStreamEndsWithRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d, err := dashboard.New(dashboard.Options{Recorder: trace.New(trace.Options{})})
		if err != nil {
			t.Fatal(err)
		}
		runCtx, stop := context.WithCancel(context.Background())
		ran := make(chan error, 1)
		go func() { ran <- d.Run(runCtx) }()
		_, done := openStream(context.Background(), d.Handler())
		synctest.Wait()
		if ended(done) {
			t.Fatal("the stream ended before Run")
		}
		stop()
		synctest.Wait()
		if !ended(done) {
			t.Error("the stream outlived Run")
		}
		if err := <-ran; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
}

func TestRatesCountMessagesAndRepliesPerBucket(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := trace.New(trace.Options{})
		d, err := dashboard.New(dashboard.Options{Recorder: rec})
		if err != nil {
			t.Fatal(err)
		}
		ctx, stop := context.WithCancel(context.Background())
		defer stop()
		go func() { _ = d.Run(ctx) }()
		synctest.Wait()
		// Start on a bucket's edge, so the buckets below are known.
		now := time.Now()
		time.Sleep(now.Truncate(dashboard.RateBucket).Add(dashboard.RateBucket).Sub(now))

		// Bucket 0: three messages; two are answered by one delivery
		// (recorded on both), the third is dropped.
		a, b, c := groupMessage("main", "1", "a", "x"), groupMessage("main", "1", "b", "y"), groupMessage("main", "2", "c", "z")
		rec.Begin(a)
		rec.Begin(b)
		rec.Step(trace.KeyOf(c), trace.StageReceive, "dropped", "from the bot itself")
		rec.Step(trace.KeyOf(a), trace.StageTrigger, "triggered", "@ of the bot")
		rec.StepAll([]trace.Key{trace.KeyOf(a), trace.KeyOf(b)}, trace.StageDeliver, "sent", "1 message")
		rec.Begin(a) // seen again: not a new message
		synctest.Wait()
		// Bucket 1 is quiet; bucket 2: one message, a failed delivery,
		// then a sent one.
		time.Sleep(2 * dashboard.RateBucket)
		e := groupMessage("main", "1", "e", "w")
		rec.Begin(e)
		rec.Step(trace.KeyOf(e), trace.StageDeliver, "failed", "timeout")
		rec.Step(trace.KeyOf(e), trace.StageDeliver, "sent", "1 message")
		synctest.Wait()
		time.Sleep(time.Second)

		st := decode[dashboard.StatusView](t, get(t, d.Handler(), "/api/dashboard/status"))
		pts := st.Rates.Points
		n := len(pts)
		type mr struct{ m, r int }
		got := []mr{{pts[n-3].Messages, pts[n-3].Replies}, {pts[n-2].Messages, pts[n-2].Replies}, {pts[n-1].Messages, pts[n-1].Replies}}
		want := []mr{{3, 1}, {0, 0}, {1, 1}}
		for i := range want {
			if got[i] != want[i] {
				t.Errorf("buckets (messages, replies) %v, want %v", got, want)
				break
			}
		}
		if !pts[n-1].At.Equal(time.Now().Truncate(dashboard.RateBucket)) || pts[n-1].At.Sub(pts[n-2].At) != dashboard.RateBucket {
			t.Errorf("last bucket at %v, the one before at %v", pts[n-1].At, pts[n-2].At)
		}
		total := 0
		for _, p := range pts[:n-3] {
			total += p.Messages + p.Replies
		}
		if total != 0 {
			t.Errorf("%d counted in older buckets", total)
		}

		// Ten minutes on, all of it has left the window.
		time.Sleep(dashboard.RateSpan)
		st = decode[dashboard.StatusView](t, get(t, d.Handler(), "/api/dashboard/status"))
		for _, p := range st.Rates.Points {
			if p.Messages != 0 || p.Replies != 0 {
				t.Errorf("old counts still shown: %+v", p)
			}
		}
	})
}

func TestRatesCountWhatWasRecordedBeforeRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		now := time.Now()
		time.Sleep(now.Truncate(dashboard.RateBucket).Add(dashboard.RateBucket).Sub(now))
		rec := trace.New(trace.Options{})
		a, b := groupMessage("main", "1", "a", "x"), groupMessage("main", "1", "b", "y")
		rec.Begin(a)
		rec.Begin(b)
		rec.StepAll([]trace.Key{trace.KeyOf(a), trace.KeyOf(b)}, trace.StageDeliver, "sent", "1 message")
		time.Sleep(dashboard.RateBucket)

		d, err := dashboard.New(dashboard.Options{Recorder: rec})
		if err != nil {
			t.Fatal(err)
		}
		ctx, stop := context.WithCancel(context.Background())
		defer stop()
		go func() { _ = d.Run(ctx) }()
		synctest.Wait()
		c := groupMessage("main", "1", "c", "z")
		rec.Begin(c)
		rec.Step(trace.KeyOf(a), trace.StageDeliver, "sent", "a second reply")
		synctest.Wait()

		pts := decode[dashboard.StatusView](t, get(t, d.Handler(), "/api/dashboard/status")).Rates.Points
		n := len(pts)
		if pts[n-2].Messages != 2 || pts[n-2].Replies != 1 || pts[n-1].Messages != 1 || pts[n-1].Replies != 1 {
			t.Errorf("buckets %+v, %+v; want 2 messages and 1 reply, then 1 and 1", pts[n-2], pts[n-1])
		}
	})
}
