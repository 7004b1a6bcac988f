package feishu

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pincerbot/pincer/internal/channel"
	"github.com/pincerbot/pincer/internal/channel/feishu/feishusim"
	"github.com/pincerbot/pincer/internal/msg"
	"github.com/pincerbot/pincer/internal/store/sqlite"
)

// Identities of the tests' tenant.
const (
	testKey   = "encrypt-key-for-feishu-tests"
	groupChat = "oc_group00000000000000000000000001"
	topicChat = "oc_topic00000000000000000000000001"
	p2pChat   = "oc_p2p0000000000000000000000000001"
	userA     = "ou_a0000000000000000000000000000a"
	userB     = "ou_b0000000000000000000000000000b"
	botID     = feishusim.DefaultBotOpenID
	botName   = feishusim.DefaultBotName
)

// rig is an account in webhook mode against a simulated open platform,
// both served over HTTP, with a recording Taker as its pipeline.
type rig struct {
	t     *testing.T
	sim   *feishusim.Sim
	api   *httptest.Server
	a     *Account
	hook  *httptest.Server
	taker *taker
	logs  *logRecorder
	dir   string
	// intercept, when set, sees each request to the platform first and
	// answers it when it returns true.
	intercept atomic.Pointer[func(http.ResponseWriter, *http.Request) bool]
}

// newRig starts the platform and the account; edit adjusts its options.
// The account does not run until run is called.
func newRig(t *testing.T, edit func(*Options)) *rig {
	t.Helper()
	sim := feishusim.New(feishusim.Options{EncryptKey: testKey})
	r := &rig{t: t, sim: sim, taker: newTaker(), logs: &logRecorder{}, dir: t.TempDir()}
	h := sim.Handler()
	r.api = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if f := r.intercept.Load(); f != nil && (*f)(w, req) {
			return
		}
		h.ServeHTTP(w, req)
	}))
	t.Cleanup(r.api.Close)
	for id, name := range map[string]string{userA: "张三", userB: "李四"} {
		must(t, sim.AddUser(id, name))
	}
	must(t, sim.AddChat(groupChat, feishusim.ChatGroup))
	must(t, sim.AddChat(topicChat, feishusim.ChatTopicGroup))
	must(t, sim.AddP2PChat(p2pChat, userA))
	o := r.options(r.api.URL)
	if edit != nil {
		edit(&o)
	}
	r.a = New(o)
	wh, err := r.a.WebhookHandler()
	must(t, err)
	r.hook = httptest.NewServer(wh)
	t.Cleanup(r.hook.Close)
	return r
}

// options are the rig's account options against the platform at base.
func (r *rig) options(base string) Options {
	return Options{
		ID: msg.DefaultAccount, AppID: feishusim.DefaultAppID, AppSecret: feishusim.DefaultAppSecret,
		BaseURL: base, Mode: ModeWebhook,
		VerificationToken: feishusim.DefaultVerificationToken, EncryptKey: testKey,
		TypingReaction: true, MergeForward: MergeForward{Enabled: true},
		Workspace: func(p msg.Peer) string { return filepath.Join(r.dir, string(p.Kind)+"-"+p.ID) },
		Logger:    slog.New(r.logs),
	}
}

// run runs the account with the rig's taker until the test ends, and
// returns once it knows the bot's identity.
func (r *rig) run() {
	r.t.Helper()
	runAccount(r.t, r.a, r.taker)
}

func runAccount(t *testing.T, a *Account, sink channel.Sink) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx, sink) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	select {
	case <-a.known:
	case err := <-done:
		t.Fatalf("Run returned before it knew the bot: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("the bot's identity was never learnt")
	}
}

// post delivers an event to the account's webhook.
func (r *rig) post(ev any, opts feishusim.EventOptions) *feishusim.Delivery {
	r.t.Helper()
	d, err := r.sim.PostEvent(context.Background(), r.hook.URL, ev, opts)
	must(r.t, err)
	return d
}

// postOK delivers an event and checks the webhook took it (200).
func (r *rig) postOK(ev any) *feishusim.Delivery {
	r.t.Helper()
	d := r.post(ev, feishusim.EventOptions{})
	if d.Status != http.StatusOK {
		r.t.Fatalf("webhook answered %d: %s", d.Status, d.Response)
	}
	return d
}

// take delivers a message event and returns the message the account
// handed to the pipeline.
func (r *rig) take(m feishusim.Message) msg.Message {
	r.t.Helper()
	n := r.taker.count()
	r.postOK(m)
	got := r.taker.all()
	if len(got) != n+1 {
		r.t.Fatalf("%d messages taken, want %d", len(got), n+1)
	}
	return got[n].m
}

// setIntercept installs f as the rig's interceptor.
func (r *rig) setIntercept(f func(http.ResponseWriter, *http.Request) bool) { r.intercept.Store(&f) }

// getCalls counts the GETs of a message.
func (r *rig) getCalls(id string) int {
	n := 0
	for _, c := range r.sim.Calls(feishusim.PathMessages + "/" + id) {
		if c.Method == http.MethodGet {
			n++
		}
	}
	return n
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// openStore opens a store in a file of the test's.
func openStore(t *testing.T, path string) *sqlite.DB {
	t.Helper()
	st, err := sqlite.Open(context.Background(), path, sqlite.Options{})
	must(t, err)
	t.Cleanup(func() { st.Close() })
	return st
}

// taken is one message the Taker got, with its replier.
type taken struct {
	m msg.Message
	r channel.Replier
}

// taker stands in for the receive pipeline: it records what it takes.
type taker struct {
	mu  sync.Mutex
	got []taken
}

func newTaker() *taker { return &taker{} }

func (t *taker) Dispatch(ctx context.Context, m msg.Message, r channel.Replier) error {
	t.Take(ctx, m, r, nil)
	return nil
}

func (t *taker) Take(_ context.Context, m msg.Message, r channel.Replier, done func(error)) {
	t.mu.Lock()
	t.got = append(t.got, taken{m, r})
	t.mu.Unlock()
	if done != nil {
		done(nil)
	}
}

func (t *taker) all() []taken {
	t.mu.Lock()
	defer t.mu.Unlock()
	return slices.Clone(t.got)
}

func (t *taker) count() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.got)
}

// logRecorder is a slog.Handler that keeps every record as a line of
// text: level, message, then key=value attributes.
type logRecorder struct {
	mu    sync.Mutex
	lines []string
	attrs []slog.Attr
	root  *logRecorder
}

func (l *logRecorder) Enabled(context.Context, slog.Level) bool { return true }

func (l *logRecorder) Handle(_ context.Context, rec slog.Record) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s", rec.Level, rec.Message)
	for _, a := range l.attrs {
		fmt.Fprintf(&b, " %s=%v", a.Key, a.Value)
	}
	rec.Attrs(func(a slog.Attr) bool {
		fmt.Fprintf(&b, " %s=%v", a.Key, a.Value)
		return true
	})
	root := l.rootOf()
	root.mu.Lock()
	root.lines = append(root.lines, b.String())
	root.mu.Unlock()
	return nil
}

func (l *logRecorder) WithAttrs(as []slog.Attr) slog.Handler {
	return &logRecorder{attrs: append(slices.Clone(l.attrs), as...), root: l.rootOf()}
}

func (l *logRecorder) WithGroup(string) slog.Handler { return l }

func (l *logRecorder) rootOf() *logRecorder {
	if l.root != nil {
		return l.root
	}
	return l
}

// matching returns the lines at level that contain every part.
func (l *logRecorder) matching(level slog.Level, parts ...string) []string {
	root := l.rootOf()
	root.mu.Lock()
	defer root.mu.Unlock()
	var out []string
	for _, line := range root.lines {
		if !strings.HasPrefix(line, level.String()+" ") {
			continue
		}
		ok := true
		for _, p := range parts {
			ok = ok && strings.Contains(line, p)
		}
		if ok {
			out = append(out, line)
		}
	}
	return out
}

// handlerTransport serves requests in process, without a network: an
// account inside a synctest bubble talks to the simulator through it.
type handlerTransport struct{ h http.Handler }

func (t handlerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	rec := httptest.NewRecorder()
	t.h.ServeHTTP(rec, req)
	resp := rec.Result()
	resp.Request = req
	return resp, nil
}
