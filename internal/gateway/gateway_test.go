package gateway

import (
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pincerbot/pincer/internal/channel/webchat"
	"github.com/pincerbot/pincer/internal/channel/webchat/webchattest"
	"github.com/pincerbot/pincer/internal/config"
	"github.com/pincerbot/pincer/internal/llm"
	"github.com/pincerbot/pincer/internal/llm/llmtest"
)

// started is a gateway running in-process on a loopback port.
type started struct {
	url     string
	dataDir string
	// workspace is the agents' workspace (agents.defaults.workspace).
	workspace string
	stop      context.CancelFunc
	result    chan error
}

func startGateway(t *testing.T, cfg config.Config) *started {
	t.Helper()
	return startGatewayIn(t, cfg, filepath.Join(t.TempDir(), "data"))
}

// startGatewayIn is startGateway on the data directory dataDir, one a
// gateway stopped before may have used.
func startGatewayIn(t *testing.T, cfg config.Config, dataDir string) *started {
	t.Helper()
	cfg.Store.Path = filepath.Join(dataDir, "pincer.db")
	cfg.Agents.Defaults.Workspace = t.TempDir()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &started{url: "http://" + ln.Addr().String(), dataDir: dataDir, workspace: cfg.Agents.Defaults.Workspace}
	s.stop, s.result = runGateway(t, cfg, Options{Listener: ln, StoreProbeInterval: 200 * time.Millisecond})
	return s
}

// runGateway runs the gateway on cfg with o (whose Listener is set; Ready
// is runGateway's) and returns once it is ready. It runs until stop is
// called or the test ends, which waits for Run's error on result; a test
// that takes the error itself puts nil back.
func runGateway(t *testing.T, cfg config.Config, o Options) (stop context.CancelFunc, result chan error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	result = make(chan error, 1)
	ready := make(chan struct{})
	o.Ready = readyWriter(ready)
	go func() { result <- Run(ctx, cfg, o) }()
	select {
	case <-ready:
	case err := <-result:
		cancel()
		t.Fatalf("gateway stopped before ready: %v", err)
	}
	t.Cleanup(func() {
		cancel()
		if err := <-result; err != nil {
			t.Errorf("gateway: %v", err)
		}
	})
	return cancel, result
}

type readyWriter chan struct{}

func (r readyWriter) Write(p []byte) (int, error) {
	close(r)
	return len(p), nil
}

func withOpenAI(url string) config.Config {
	cfg := config.Default()
	cfg.Models.Providers["openai"] = config.Provider{BaseURL: url + "/v1", APIKey: "sk-test"}
	cfg.Agents.Defaults.Model.Primary = "openai/gpt-4o-mini"
	return cfg
}

func TestPreviewOnDefaults(t *testing.T) {
	g := startGateway(t, config.Default())
	res, _, err := webchattest.New(g.url).Post("hello", "")
	if err != nil {
		t.Fatal(err)
	}
	events, err := webchattest.Events(res)
	if err != nil {
		t.Fatal(err)
	}
	if got := webchattest.Text(events, webchat.EventReply); !strings.Contains(got, "[pincer preview]") || !strings.Contains(got, "hello") {
		t.Errorf("reply: %q", got)
	}
}

func TestCompatibleServerAnswers(t *testing.T) {
	fake := llmtest.NewOpenAI(t)
	fake.Script(llmtest.Reply{Text: []string{"Hello ", "from ", "the model."}})
	g := startGateway(t, withOpenAI(fake.URL))
	res, _, err := webchattest.New(g.url).Post("hi there", "")
	if err != nil {
		t.Fatal(err)
	}
	events, err := webchattest.Events(res)
	if err != nil {
		t.Fatal(err)
	}
	if got := webchattest.Text(events, webchat.EventDelta); got != "Hello from the model." {
		t.Errorf("streamed %q", got)
	}
	if got := webchattest.Text(events, webchat.EventReply); got != "Hello from the model." {
		t.Errorf("reply %q", got)
	}
	req := fake.Requests()[0]
	if req.Body["model"] != "gpt-4o-mini" || !strings.Contains(mustString(req.Body["messages"]), "hi there") {
		t.Errorf("model request: %v", req.Body)
	}
	if req.Header.Get("Authorization") != "Bearer sk-test" {
		t.Error("the configured key was not sent")
	}
}

func TestAnthropicAnswers(t *testing.T) {
	fake := llmtest.NewAnthropic(t)
	fake.Script(llmtest.Reply{Text: []string{"Bonjour."}})
	cfg := config.Default()
	cfg.Models.Providers["anthropic"] = config.Provider{BaseURL: fake.URL, APIKey: "k"}
	cfg.Agents.Defaults.Model.Primary = "anthropic/claude-x"
	g := startGateway(t, cfg)
	res, _, _ := webchattest.New(g.url).Post("salut", "")
	events, err := webchattest.Events(res)
	if err != nil {
		t.Fatal(err)
	}
	if got := webchattest.Text(events, webchat.EventReply); got != "Bonjour." {
		t.Errorf("reply %q", got)
	}
}

func TestFallbackToSecondProvider(t *testing.T) {
	broken := llmtest.NewOpenAI(t)
	broken.Script(llmtest.Reply{Status: http.StatusUnauthorized, ErrorType: "invalid_api_key"})
	good := llmtest.NewOpenAI(t)
	good.Script(llmtest.Reply{Text: []string{"from the fallback"}})
	cfg := withOpenAI(broken.URL)
	cfg.Models.Providers["backup"] = config.Provider{BaseURL: good.URL + "/v1"}
	cfg.Agents.Defaults.Model.Fallbacks = []string{"backup/qwen"}
	g := startGateway(t, cfg)
	res, _, _ := webchattest.New(g.url).Post("hi", "")
	events, err := webchattest.Events(res)
	if err != nil {
		t.Fatal(err)
	}
	if got := webchattest.Text(events, webchat.EventReply); got != "from the fallback" {
		t.Errorf("reply %q", got)
	}
}

func TestShutdownFinishesInflightReply(t *testing.T) {
	fake := llmtest.NewOpenAI(t)
	hold := make(chan struct{})
	fake.Script(llmtest.Reply{Text: []string{"first half, ", "second half"}, Hold: hold})
	g := startGateway(t, withOpenAI(fake.URL))
	res, _, err := webchattest.New(g.url).Post("long question", "")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var events []webchattest.Event
	err = webchattest.Read(res.Body, func(e webchattest.Event) bool {
		events = append(events, e)
		if e.Name == webchat.EventDelta && len(events) == 1 {
			g.stop() // SIGTERM arrives while the model is mid-reply
			close(hold)
		}
		return true
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := webchattest.Text(events, webchat.EventReply); got != "first half, second half" {
		t.Errorf("the in-flight reply must finish during shutdown; got %q", got)
	}
	if err := <-g.result; err != nil {
		t.Errorf("shutdown: %v", err)
	}
	g.result <- nil // for the cleanup
}

func TestMetricsCountTurns(t *testing.T) {
	g := startGateway(t, config.Default())
	res, _, _ := webchattest.New(g.url).Post("count me", "")
	if _, err := webchattest.Events(res); err != nil {
		t.Fatal(err)
	}
	mres, err := http.Get(g.url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer mres.Body.Close()
	body, _ := io.ReadAll(mres.Body)
	for _, want := range []string{`pincer_turns_total{outcome="replied"} 1`, `pincer_inbound_messages_total{channel="webchat",outcome="accepted"} 1`, "go_goroutines"} {
		if !strings.Contains(string(body), want) {
			t.Errorf("metrics lack %q", want)
		}
	}
}

func mustString(v any) string {
	var b strings.Builder
	switch t := v.(type) {
	case []any:
		for _, e := range t {
			b.WriteString(mustString(e))
		}
	case map[string]any:
		for _, e := range t {
			b.WriteString(mustString(e))
		}
	case string:
		b.WriteString(t)
	}
	return b.String()
}

func TestResponsePrefixFromConfig(t *testing.T) {
	fake := llmtest.NewOpenAI(t)
	fake.Script(llmtest.Reply{Text: []string{"hi"}})
	cfg := withOpenAI(fake.URL)
	cfg.Messages.ResponsePrefix = "({provider}/{model}) "
	g := startGateway(t, cfg)
	res, _, _ := webchattest.New(g.url).Post("x", "")
	events, err := webchattest.Events(res)
	if err != nil {
		t.Fatal(err)
	}
	if got := webchattest.Text(events, webchat.EventReply); got != "(openai/gpt-4o-mini) hi" {
		t.Errorf("reply %q", got)
	}
}

func TestCommandsAndDebounceFromConfig(t *testing.T) {
	fake := llmtest.NewOpenAI(t)
	fake.Script(llmtest.Reply{Text: []string{"merged answer"}})
	cfg := withOpenAI(fake.URL)
	cfg.Messages.Inbound.DebounceMs = 50
	english(&cfg) // the answers are read below
	g := startGateway(t, cfg)
	c := webchattest.New(g.url)
	// /status bypasses the debounce and answers without the model.
	res, _, err := c.Post("/status", "")
	if err != nil {
		t.Fatal(err)
	}
	events, _ := webchattest.Events(res)
	if got := webchattest.Text(events, webchat.EventReply); !strings.Contains(got, "Model: openai/gpt-4o-mini") {
		t.Errorf("status %q", got)
	}
	if n := len(fake.Requests()); n != 0 {
		t.Errorf("/status called the model %d times", n)
	}
	// The web chat is the owner by default.
	res, _, _ = c.Post("/think low", "")
	events, _ = webchattest.Events(res)
	if got := webchattest.Text(events, webchat.EventReply); got != "Thinking set to low." {
		t.Errorf("think %q", got)
	}
	res, _, _ = c.Post("hello", "")
	events, _ = webchattest.Events(res)
	if got := webchattest.Text(events, webchat.EventReply); got != "merged answer" {
		t.Errorf("reply %q", got)
	}
	if body := fake.Requests()[0].Body; body["reasoning_effort"] != "low" {
		t.Errorf("the session's thinking level did not reach the model: %v", body)
	}
}

func TestToolCallEndToEnd(t *testing.T) {
	fake := llmtest.NewOpenAI(t)
	fake.Script(
		llmtest.Reply{ToolCalls: []llm.ToolCall{{ID: "call_1", Name: "current_time", Arguments: "{}"}}},
		llmtest.Reply{Text: []string{"It is late."}},
	)
	g := startGateway(t, withOpenAI(fake.URL))
	c := webchattest.New(g.url)
	res, _, _ := c.Post("what time is it?", "")
	events, err := webchattest.Events(res)
	if err != nil {
		t.Fatal(err)
	}
	if got := webchattest.Text(events, webchat.EventReply); got != "It is late." {
		t.Errorf("reply %q", got)
	}
	reqs := fake.Requests()
	if len(reqs) != 2 || !strings.Contains(mustString(reqs[0].Body["tools"]), "current_time") {
		t.Fatalf("requests %d, tools %v", len(reqs), reqs[0].Body["tools"])
	}
	if sent := mustString(reqs[1].Body["messages"]); !strings.Contains(sent, "call_1") || !strings.Contains(sent, "UTC") {
		t.Errorf("the tool result did not reach the model: %s", sent)
	}
	// The next turn replays the tool exchange from the transcript.
	fake.Script(llmtest.Reply{Text: []string{"ok"}})
	res, _, _ = c.Post("thanks", "")
	if _, err := webchattest.Events(res); err != nil {
		t.Fatal(err)
	}
	if sent := mustString(fake.Requests()[2].Body["messages"]); !strings.Contains(sent, "call_1") {
		t.Errorf("the tool exchange was not kept in the transcript: %s", sent)
	}
}

// TestWebchatSummary: the web chat has the receive pipeline too; /summary
// reads what pincer logged of the chat.
func TestWebchatSummary(t *testing.T) {
	g := startGateway(t, config.Default())
	c := webchattest.New(g.url)
	for _, text := range []string{"第一句话", "第二句话", "/summary"} {
		res, _, err := c.Post(text, "")
		if err != nil {
			t.Fatal(err)
		}
		events, err := webchattest.Events(res)
		if err != nil {
			t.Fatal(err)
		}
		if text != "/summary" {
			continue
		}
		got := webchattest.Text(events, webchat.EventReply)
		for _, want := range []string{config.DefaultSummaryPrompt, ": 第一句话", ": 第二句话"} {
			if !strings.Contains(got, want) {
				t.Errorf("%q missing from the summary turn:\n%s", want, got)
			}
		}
		if strings.Contains(got, "/summary\n") {
			t.Errorf("the command is not in its own transcript:\n%s", got)
		}
	}
}

// TestTheWorkspaceExistsFromTheStart: the agent's workspace is made when
// pincer starts, not when a picture first needs it; one that cannot be
// made stops the start with its key named.
func TestTheWorkspaceExistsFromTheStart(t *testing.T) {
	cfg := config.Default()
	cfg.Store.Path = filepath.Join(t.TempDir(), "pincer.db")
	cfg.Agents.Defaults.Workspace = filepath.Join(t.TempDir(), "deep", "workspace")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	runGateway(t, cfg, Options{Listener: ln})
	if fi, err := os.Stat(cfg.Agents.Defaults.Workspace); err != nil || !fi.IsDir() {
		t.Errorf("the workspace after the start: %v", err)
	}

	file := filepath.Join(t.TempDir(), "a-file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	cfg.Store.Path = filepath.Join(t.TempDir(), "pincer.db")
	cfg.Agents.Defaults.Workspace = filepath.Join(file, "workspace")
	ln2, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	err = Run(context.Background(), cfg, Options{Listener: ln2})
	ln2.Close()
	if err == nil || !strings.Contains(err.Error(), "agents.defaults.workspace") {
		t.Errorf("a workspace that cannot be made: %v", err)
	}
}
