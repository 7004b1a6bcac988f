package doctor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/pincerbot/pincer/internal/channel/feishu/feishusim"
	"github.com/pincerbot/pincer/internal/channel/onebot/onebottest"
	"github.com/pincerbot/pincer/internal/config"
	"github.com/pincerbot/pincer/internal/dirlock"
	"github.com/pincerbot/pincer/internal/llm/llmsim"
	"github.com/pincerbot/pincer/internal/store/sqlite"
)

const (
	botQQ      = 3300000001
	qqToken    = "qq-token"
	modelKey   = "sk-good"
	appSecret  = "feishu-secret"
	feishuApp  = "cli_doctor000000001"
	modelID    = "sim-model"
	anthropKey = "ak-good"
)

// qqPeer is a OneBot v11 implementation logged in as botQQ that wants
// qqToken.
func qqPeer(t *testing.T) *onebottest.Peer {
	p := onebottest.New(t, func(action string, _ json.RawMessage) (any, int, string) {
		switch action {
		case "get_login_info":
			return map[string]any{"user_id": botQQ, "nickname": "助手"}, 0, ""
		case "get_version_info":
			return map[string]any{"app_name": "onebotsim", "app_version": "1.0", "protocol_version": "v11"}, 0, ""
		}
		return nil, 1404, "unsupported"
	})
	p.Token = qqToken
	return p
}

// modelServer is llmsim, the OpenAI-compatible fake, with the model list
// an OpenAI-compatible server serves: GET /v1/models, which wants key.
func modelServer(t *testing.T, key string) string {
	sim := llmsim.New(llmsim.Options{})
	mux := http.NewServeMux()
	mux.Handle("/", sim.Handler())
	mux.HandleFunc("GET /v1/models", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.Header.Get("Authorization") != "Bearer "+key {
			w.WriteHeader(http.StatusUnauthorized)
			fmt.Fprint(w, `{"error":{"message":"Incorrect API key provided","type":"invalid_request_error","code":"invalid_api_key"}}`)
			return
		}
		fmt.Fprintf(w, `{"object":"list","data":[{"id":%q,"object":"model","owned_by":"sim"}]}`, modelID)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv.URL
}

// anthropicServer lists models as Anthropic's API does, wanting
// x-api-key and anthropic-version.
func anthropicServer(t *testing.T) string {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch {
		case r.Method != http.MethodGet || r.URL.Path != "/v1/models":
			w.WriteHeader(http.StatusNotFound)
		case r.Header.Get("anthropic-version") == "":
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprint(w, `{"type":"error","error":{"type":"invalid_request_error","message":"anthropic-version header is required"}}`)
		case r.Header.Get("x-api-key") != anthropKey:
			w.WriteHeader(http.StatusUnauthorized)
			fmt.Fprint(w, `{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}`)
		default:
			fmt.Fprint(w, `{"data":[{"type":"model","id":"claude-sim"}],"has_more":false}`)
		}
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

func feishuServer(t *testing.T) string {
	return feishuServerRefusing(t, feishusim.RefuseNone)
}

// feishuServerRefusing is the open platform refusing the app's long
// connection as r says.
func feishuServerRefusing(t *testing.T, r feishusim.Refusal) string {
	sim := feishusim.New(feishusim.Options{AppID: feishuApp, AppSecret: appSecret})
	sim.SetRefusal(r)
	srv := httptest.NewServer(sim.Handler())
	t.Cleanup(srv.Close)
	return srv.URL
}

// TestFeishuLongConnRefused: an app whose long connection the platform
// refuses fails, with what to do; a busy endpoint warns.
func TestFeishuLongConnRefused(t *testing.T) {
	s := good(t)
	s.feishuBase = feishuServerRefusing(t, feishusim.RefuseCredentials)
	expect(t, result(t, run(t, s), "feishu default"), Fail, "the long connection was refused: code 10014", "self-built app")
	s.feishuBase = feishuServerRefusing(t, feishusim.RefuseBusy)
	expect(t, result(t, run(t, s), "feishu default"), Warn, "long connection endpoint busy", "")
}

// closedAddr is a loopback address nothing listens at.
func closedAddr(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

type setup struct {
	qqWS, qqHTTP, qqToken, selfID string
	reverse                       bool
	feishuBase, feishuSecret      string
	modelBase, modelKey           string
	anthropicBase, anthropicKey   string
	store                         string
}

func (s setup) write(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if s.store == "" {
		s.store = filepath.Join(dir, "data", "pincer.db")
	}
	doc := fmt.Sprintf(`{
  store: { path: %q },
  models: { providers: {
    sim: { api: 'openai', baseUrl: %q, apiKey: '${SIM_KEY}' },
    %s
  } },
  agents: { defaults: { model: { primary: 'sim/%s' } } },
  channels: {
    onebot: { wsUrl: %q, httpUrl: %q, accessToken: %q, selfId: %q, reverseWs: { enabled: %v } },
    %s
  },
}`, s.store, s.modelBase, anthropicEntry(s), modelID, s.qqWS, s.qqHTTP, s.qqToken, s.selfID, s.reverse, feishuEntry(s))
	path := filepath.Join(dir, "pincer.json5")
	if err := os.WriteFile(path, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("SIM_KEY", s.modelKey)
	return path
}

func anthropicEntry(s setup) string {
	if s.anthropicBase == "" {
		return ""
	}
	return fmt.Sprintf(`claude: { api: 'anthropic', baseUrl: %q, apiKey: %q },`, s.anthropicBase, s.anthropicKey)
}

func feishuEntry(s setup) string {
	if s.feishuBase == "" {
		return ""
	}
	return fmt.Sprintf(`feishu: { appId: %q, appSecret: %q, domain: %q },`, feishuApp, s.feishuSecret, s.feishuBase)
}

func good(t *testing.T) setup {
	qq := qqPeer(t)
	return setup{
		qqWS: qq.URL, qqHTTP: qq.HTTPURL, qqToken: qqToken, selfID: fmt.Sprint(botQQ),
		feishuBase: feishuServer(t), feishuSecret: appSecret,
		modelBase: modelServer(t, modelKey) + "/v1", modelKey: modelKey,
		anthropicBase: anthropicServer(t), anthropicKey: anthropKey,
	}
}

func run(t *testing.T, s setup) Report {
	t.Helper()
	return Run(t.Context(), s.write(t), Options{})
}

func result(t *testing.T, rep Report, name string) Result {
	t.Helper()
	for _, r := range rep.Results {
		if r.Name == name {
			return r
		}
	}
	t.Fatalf("no %q check in %+v", name, rep.Results)
	return Result{}
}

func expect(t *testing.T, r Result, status Status, inDetail, inHint string) {
	t.Helper()
	if r.Status != status || !strings.Contains(r.Detail, inDetail) || !strings.Contains(r.Hint, inHint) {
		t.Errorf("%s: got %s %q (hint %q), want %s with %q (hint with %q)", r.Name, r.Status, r.Detail, r.Hint, status, inDetail, inHint)
	}
}

func TestGoodSetupIsAllOK(t *testing.T) {
	s := good(t)
	s.reverse = true
	rep := run(t, s)
	names := []string{}
	for _, r := range rep.Results {
		names = append(names, r.Name)
		if r.Status != OK {
			t.Errorf("%s: %s %q (hint %q) %v", r.Name, r.Status, r.Detail, r.Hint, r.Items)
		}
	}
	want := "config,store,data directory,qq default ws,qq default http,qq default reverse ws,feishu default,model claude,model sim"
	if got := strings.Join(names, ","); got != want {
		t.Errorf("checks %s, want %s", got, want)
	}
	if rep.Failed() {
		t.Error("Failed() on a good setup")
	}
	expect(t, result(t, rep, "qq default ws"), OK, "QQ 3300000001 (助手), onebotsim 1.0", "")
	expect(t, result(t, rep, "qq default http"), OK, "QQ 3300000001", "")
	expect(t, result(t, rep, "qq default reverse ws"), OK, "waiting for the implementation to connect to ws://127.0.0.1:18789/onebot/v11/ws", "same access token")
	expect(t, result(t, rep, "feishu default"), OK, "bot \"Pincer Sim\"", "")
	expect(t, result(t, rep, "feishu default"), OK, "the long connection's endpoint answers", "")
	expect(t, result(t, rep, "model sim"), OK, "key accepted, 1 models listed", "")
	expect(t, result(t, rep, "store"), OK, "does not exist yet", "")
	expect(t, result(t, rep, "data directory"), OK, "no pincer serve runs on ", "")
}

func TestWrongOneBotToken(t *testing.T) {
	s := good(t)
	s.qqToken = "not-the-token"
	rep := run(t, s)
	expect(t, result(t, rep, "qq default ws"), Fail, "the access token is wrong (HTTP 403)", "channels.onebot.accessToken must equal")
	expect(t, result(t, rep, "qq default http"), Fail, "the access token is wrong (HTTP 403)", "channels.onebot.accessToken")
	if !rep.Failed() {
		t.Error("not Failed()")
	}
	s.qqToken = ""
	rep = run(t, s)
	expect(t, result(t, rep, "qq default ws"), Fail, "wants an access token (HTTP 401)", "set channels.onebot.accessToken")
}

func TestOneBotSelfIDMismatch(t *testing.T) {
	s := good(t)
	s.selfID = "10001"
	expect(t, result(t, run(t, s), "qq default ws"), Fail, "logged in as 3300000001, but selfId is 10001", "set channels.onebot.selfId to 3300000001")
}

func TestOneBotNotRunning(t *testing.T) {
	s := good(t)
	addr := closedAddr(t)
	s.qqWS, s.qqHTTP = "ws://"+addr, "http://"+addr
	rep := run(t, s)
	expect(t, result(t, rep, "qq default ws"), Fail, "nothing listens at "+addr, "forward WebSocket server")
	expect(t, result(t, rep, "qq default http"), Fail, "nothing listens at "+addr, "httpUrl")
}

func TestUnreachableModelServer(t *testing.T) {
	s := good(t)
	addr := closedAddr(t)
	s.modelBase = "http://" + addr + "/v1"
	expect(t, result(t, run(t, s), "model sim"), Fail, "nothing listens at "+addr, "models.providers.sim.baseUrl")
}

func TestRefusedAPIKey(t *testing.T) {
	s := good(t)
	s.modelKey = "sk-wrong"
	s.anthropicKey = "ak-wrong"
	rep := run(t, s)
	r := result(t, rep, "model sim")
	expect(t, r, Fail, "the API key is refused (HTTP 401)", "set models.providers.sim.apiKey")
	if len(r.Items) != 1 || r.Items[0] != "Incorrect API key provided" {
		t.Errorf("items %q, want the server's message", r.Items)
	}
	expect(t, result(t, rep, "model claude"), Fail, "the API key is refused (HTTP 401)", "models.providers.claude.apiKey")
}

func TestModelNotListed(t *testing.T) {
	s := good(t)
	path := s.write(t)
	data, _ := os.ReadFile(path)
	data = []byte(strings.Replace(string(data), "sim/"+modelID, "sim/other-model", 1))
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	expect(t, result(t, Run(t.Context(), path, Options{}), "model sim"), Warn, "not among them: other-model", "model id")
}

func TestBadFeishuSecret(t *testing.T) {
	s := good(t)
	s.feishuSecret = "wrong"
	expect(t, result(t, run(t, s), "feishu default"), Fail, "code 10014", "appSecret is wrong")
}

func TestUnknownFeishuApp(t *testing.T) {
	s := good(t)
	path := s.write(t)
	data, _ := os.ReadFile(path)
	data = []byte(strings.Replace(string(data), feishuApp, "cli_unknown", 1))
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	expect(t, result(t, Run(t.Context(), path, Options{}), "feishu default"), Fail, "code 10003", "does not know this appId")
}

func TestConfigProblemsHaveKeyPaths(t *testing.T) {
	path := filepath.Join(t.TempDir(), "pincer.json5")
	if err := os.WriteFile(path, []byte(`{ gateway: { listen: 'nonsense' }, channels: { onebot: { wsUrl: 'http://x' } } }`), 0o600); err != nil {
		t.Fatal(err)
	}
	rep := Run(t.Context(), path, Options{})
	r := result(t, rep, "config")
	expect(t, r, Fail, "2 problems", "")
	if len(r.Items) != 2 || !strings.HasPrefix(r.Items[0], "channels.onebot.wsUrl: ") || !strings.HasPrefix(r.Items[1], "gateway.listen: ") {
		t.Errorf("items %q", r.Items)
	}
	if !rep.Failed() {
		t.Error("not Failed()")
	}
}

func TestOpenClawFileIsRecognized(t *testing.T) {
	path := filepath.Join(t.TempDir(), "openclaw.json")
	if err := os.WriteFile(path, []byte(`{ gateway: { port: 18789, auth: { token: 't' } }, channels: { snowluma: { wsUrl: 'ws://127.0.0.1:3001' } } }`), 0o600); err != nil {
		t.Fatal(err)
	}
	rep := Run(t.Context(), path, Options{})
	if len(rep.Results) != 1 {
		t.Fatalf("results %+v, want the config check alone", rep.Results)
	}
	expect(t, rep.Results[0], Fail, "is an OpenClaw configuration", "pincer init --from "+path)
}

func TestStore(t *testing.T) {
	dir := t.TempDir()
	real := filepath.Join(dir, "real.db")
	db, err := sqlite.Open(t.Context(), real, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	before, err := os.ReadFile(real)
	if err != nil {
		t.Fatal(err)
	}
	garbage := filepath.Join(dir, "garbage.db")
	if err := os.WriteFile(garbage, []byte(strings.Repeat("not a database ", 100)), 0o600); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "new", "pincer.db")
	// What pincer serve refuses as read-only, whoever runs it (root too).
	readOnly := filepath.Join(dir, "ro.db")
	if err := os.WriteFile(readOnly, before, 0o400); err != nil {
		t.Fatal(err)
	}
	closed := filepath.Join(dir, "closed")
	if err := os.Mkdir(closed, 0o500); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		path   string
		status Status
		detail string
		hint   string
	}{
		{real, OK, "integrity ok, schema version", ""},
		{garbage, Fail, "integrity check", ""},
		{missing, OK, "does not exist yet", ""},
		{dir, Fail, "is a directory", ""},
		{readOnly, Fail, readOnly + " is read-only: the file has no write permission (mode 0400); pincer serve refuses to start on it", sqlite.ReadOnlyHint},
		{filepath.Join(closed, "pincer.db"), Fail, "is read-only: its directory " + closed + " has no write permission (mode 0500)", sqlite.ReadOnlyHint},
	}
	for _, tt := range tests {
		r := checkStore(t.Context(), storeAt(tt.path))
		if r.Status != tt.status || !strings.Contains(r.Detail, tt.detail) || r.Hint != tt.hint && tt.hint != "" {
			t.Errorf("%s: got %s %q (hint %q), want %s with %q", tt.path, r.Status, r.Detail, r.Hint, tt.status, tt.detail)
		}
		// pincer serve refuses the same files, with the same reason.
		if _, ok := errors.AsType[*sqlite.ReadOnlyError](sqlite.CheckWritable(tt.path)); ok != (tt.hint != "") {
			t.Errorf("%s: the store's own check says read-only %v", tt.path, ok)
		}
	}
	if _, err := os.Stat(missing); err == nil {
		t.Error("the check created the missing database")
	}
	after, _ := os.ReadFile(real)
	if string(after) != string(before) {
		t.Error("the check changed the database file")
	}
}

// TestDataDirectory: the check tells a directory a pincer serve holds
// (with the holder's pid) from a free one, by the lock itself, not by
// the record in the lock file; and its probe leaves the holder holding.
func TestDataDirectory(t *testing.T) {
	dir := t.TempDir()
	s := storeAt(filepath.Join(dir, "pincer.db"))
	expect(t, checkDataDir(s), OK, "no pincer serve runs on "+dir, "")
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("the check left %v", entries)
	}

	l, err := dirlock.Acquire(dir, "v1.2.3")
	if err != nil {
		t.Fatal(err)
	}
	expect(t, checkDataDir(s), Warn, fmt.Sprintf("%s is in use by a running pincer serve (pid %d on ", dir, os.Getpid()), "another pincer serve on this directory refuses to start")
	if r := checkDataDir(s); !strings.Contains(r.Detail, "version v1.2.3") {
		t.Errorf("detail %q lacks the holder's version", r.Detail)
	}
	if _, err := dirlock.Acquire(dir, ""); !errors.Is(err, dirlock.ErrHeld) {
		t.Errorf("after the checks the holder no longer holds the directory: %v", err)
	}
	if err := l.Release(); err != nil {
		t.Fatal(err)
	}
	expect(t, checkDataDir(s), OK, "no pincer serve runs on "+dir, "")

	// A record nobody holds is what a killed pincer leaves: the directory
	// is free.
	rec := fmt.Sprintf(`{"pid":%d,"started":"2025-01-02T03:04:05Z"}`, os.Getpid())
	if err := os.WriteFile(filepath.Join(dir, dirlock.FileName), []byte(rec), 0o644); err != nil {
		t.Fatal(err)
	}
	expect(t, checkDataDir(s), OK, fmt.Sprintf("no pincer serve runs on %s; the last one (pid %d, started 2025-01-02 03:04:05 +0000) did not stop cleanly", dir, os.Getpid()), "")
}

// TestChecksAreBounded: a model server that accepts the request and never
// answers fails its check at the timeout, on synctest's clock.
func TestChecksAreBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		stall := roundTripper(func(r *http.Request) (*http.Response, error) {
			<-r.Context().Done()
			return nil, r.Context().Err()
		})
		cfgPath := setup{modelBase: "http://model.invalid/v1", modelKey: "k", store: filepath.Join(t.TempDir(), "x.db")}.write(t)
		rep := Run(context.Background(), cfgPath, Options{Client: &http.Client{Transport: stall}})
		expect(t, result(t, rep, "model sim"), Fail, "no answer from model.invalid within 5s", "")
	})
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func storeAt(path string) config.Store { return config.Store{Driver: "sqlite", Path: path} }

// TestDataDirectoryServeCannotLock: a data directory whose lock file
// pincer serve cannot open for writing fails, as pincer serve would.
func TestDataDirectoryServeCannotLock(t *testing.T) {
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, dirlock.FileName), 0o700); err != nil {
		t.Fatal(err)
	}
	expect(t, checkDataDir(storeAt(filepath.Join(dir, "pincer.db"))), Fail, "pincer serve cannot take "+dir+": open the lock file", "fix the permissions: make "+dir)
	if _, err := dirlock.Acquire(dir, ""); err == nil {
		t.Error("pincer serve's lock was taken")
	}
}
