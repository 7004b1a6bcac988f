package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pincerbot/pincer/internal/channel/onebot/onebottest"
	"github.com/pincerbot/pincer/internal/config"
	"github.com/pincerbot/pincer/internal/llm/llmsim"
)

// initFakes starts a OneBot implementation wanting token and an
// OpenAI-compatible model server (llmsim, with the model list such
// servers serve) wanting key.
func initFakes(t *testing.T, token, key string) (qq *onebottest.Peer, modelBase string) {
	qq = onebottest.New(t, func(action string, _ json.RawMessage) (any, int, string) {
		switch action {
		case "get_login_info":
			return map[string]any{"user_id": 3300000001, "nickname": "bot"}, 0, ""
		case "get_version_info":
			return map[string]any{"app_name": "onebotsim", "app_version": "1"}, 0, ""
		}
		return nil, 1404, "unsupported"
	})
	qq.Token = token
	mux := http.NewServeMux()
	mux.Handle("/", llmsim.New(llmsim.Options{}).Handler())
	mux.HandleFunc("GET /v1/models", func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+key {
			http.Error(w, `{"error":{"message":"bad key"}}`, http.StatusUnauthorized)
			return
		}
		fmt.Fprint(w, `{"object":"list","data":[{"id":"sim-model"}]}`)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return qq, srv.URL + "/v1"
}

func TestInitNonInteractiveWritesAConfigThatChecks(t *testing.T) {
	tests := []struct {
		name  string
		flags []string
		check func(t *testing.T, cfg config.Config)
	}{
		{
			name: "forward websocket and an OpenAI-compatible server",
			flags: []string{"--onebot-ws", "ws://127.0.0.1:3001", "--onebot-token-env", "INIT_QQ_TOKEN",
				"--provider", "openai", "--provider-id", "deepseek", "--base-url", "https://api.deepseek.com/v1",
				"--api-key-env", "INIT_KEY", "--model", "deepseek-chat"},
			check: func(t *testing.T, cfg config.Config) {
				p := cfg.Models.Providers["deepseek"]
				if cfg.Channels.OneBot.WSURL != "ws://127.0.0.1:3001" || cfg.Channels.OneBot.AccessToken.Value() != "qq-secret" ||
					p.API != "openai" || p.BaseURL != "https://api.deepseek.com/v1" || p.APIKey.Value() != "sk-secret" ||
					cfg.Agents.Defaults.Model.Primary != "deepseek/deepseek-chat" {
					t.Errorf("got %+v %+v %+v", cfg.Channels.OneBot.OneBotAccount, p, cfg.Agents.Defaults.Model)
				}
			},
		},
		{
			name:  "reverse websocket and anthropic",
			flags: []string{"--onebot-reverse", "--onebot-token", "lit${eral", "--onebot-self-id", "3300000001", "--provider", "anthropic", "--api-key-env", "INIT_KEY", "--model", "claude-sonnet-4-5"},
			check: func(t *testing.T, cfg config.Config) {
				ob := cfg.Channels.OneBot
				if !ob.ReverseWS.Enabled || ob.ReverseWS.Path != config.DefaultReverseWSPath || ob.AccessToken.Value() != "lit${eral" || ob.SelfID != "3300000001" ||
					cfg.Models.Providers["anthropic"].ResolvedAPI("anthropic") != "anthropic" || cfg.Agents.Defaults.Model.Primary != "anthropic/claude-sonnet-4-5" {
					t.Errorf("got %+v %+v", ob.OneBotAccount, cfg.Models.Providers)
				}
			},
		},
		{
			name:  "nothing but the defaults",
			flags: nil,
			check: func(t *testing.T, cfg config.Config) {
				if cfg.Gateway.Listen != "127.0.0.1:18789" || len(cfg.Models.Providers) != 0 {
					t.Errorf("got %+v", cfg)
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Chdir(t.TempDir())
			t.Setenv("INIT_QQ_TOKEN", "qq-secret")
			t.Setenv("INIT_KEY", "sk-secret")
			code, stdout, stderr := runCmd(t, append([]string{"init", "--non-interactive", "--no-doctor"}, tt.flags...)...)
			if code != 0 || !strings.Contains(stdout, "wrote pincer.json5") {
				t.Fatalf("init: exit %d\n%s\n%s", code, stdout, stderr)
			}
			data, _ := os.ReadFile("pincer.json5")
			if bytes.Contains(data, []byte("qq-secret")) || bytes.Contains(data, []byte("sk-secret")) {
				t.Errorf("a secret named by its variable was written into the file:\n%s", data)
			}
			code, stdout, stderr = runCmd(t, "config", "check", "pincer.json5")
			if code != 0 || !strings.Contains(stdout, "pincer.json5: ok") {
				t.Fatalf("config check: exit %d\n%s\n%s\n%s", code, stdout, stderr, data)
			}
			cfg, err := config.LoadFile("pincer.json5", os.LookupEnv)
			if err != nil {
				t.Fatal(err)
			}
			tt.check(t, cfg)
		})
	}
}

func TestInitRefusesToOverwrite(t *testing.T) {
	t.Chdir(t.TempDir())
	if err := os.WriteFile("pincer.json5", []byte("{ /* mine */ }"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, _, stderr := runCmd(t, "init", "--non-interactive", "--no-doctor", "--model", "m")
	if code != 1 || !strings.Contains(stderr, "pincer.json5 exists; pass --force") {
		t.Errorf("exit %d, stderr %s", code, stderr)
	}
	if data, _ := os.ReadFile("pincer.json5"); string(data) != "{ /* mine */ }" {
		t.Errorf("the file was changed: %s", data)
	}
	if code, _, stderr := runCmd(t, "init", "--non-interactive", "--no-doctor", "--force", "--model", "m"); code != 0 {
		t.Errorf("--force: exit %d, %s", code, stderr)
	}
	if data, _ := os.ReadFile("pincer.json5"); !strings.Contains(string(data), `primary: "openai/m"`) {
		t.Errorf("--force did not overwrite: %s", data)
	}
}

func TestInitRefusesBadFlags(t *testing.T) {
	t.Chdir(t.TempDir())
	code, _, stderr := runCmd(t, "init", "--non-interactive", "--onebot-ws", "http://127.0.0.1:3001", "--api-key-env", "not a name")
	if code != 2 || !strings.Contains(stderr, "--onebot-ws: want a ws://") || !strings.Contains(stderr, "--api-key-env: want an environment variable name") ||
		!strings.Contains(stderr, "--model is required") {
		t.Errorf("exit %d, stderr %s", code, stderr)
	}
	if _, err := os.Stat("pincer.json5"); err == nil {
		t.Error("a file was written")
	}
}

// TestInitRunsDoctor: init checks what it wrote against the live
// endpoints and shows the result; a failure there does not fail init.
func TestInitRunsDoctor(t *testing.T) {
	qq, base := initFakes(t, "qq-secret", "sk-secret")
	t.Chdir(t.TempDir())
	t.Setenv("INIT_QQ_TOKEN", "qq-secret")
	t.Setenv("INIT_KEY", "sk-secret")
	args := []string{"init", "--non-interactive", "--onebot-ws", qq.URL, "--onebot-token-env", "INIT_QQ_TOKEN",
		"--base-url", base, "--api-key-env", "INIT_KEY", "--model", "sim-model"}
	code, stdout, stderr := runCmd(t, args...)
	if code != 0 || !strings.Contains(stdout, "all 5 checks ok") || !strings.Contains(stdout, "QQ 3300000001 (bot)") {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	t.Setenv("INIT_QQ_TOKEN", "wrong")
	code, stdout, stderr = runCmd(t, append(args, "--force")...)
	if code != 0 || !strings.Contains(stdout, "fail  qq default ws") || !strings.Contains(stdout, "the access token is wrong (HTTP 403)") {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
}

func TestInitInteractive(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	t.Setenv("MY_QQ_TOKEN", "tok")
	t.Setenv("MY_KEY", "sk")
	out := filepath.Join(dir, "conf", "my.json5")
	if err := os.Mkdir(filepath.Join(dir, "conf"), 0o700); err != nil {
		t.Fatal(err)
	}
	script := strings.Join([]string{
		"http://wrong-scheme", // refused, asked again
		"ws://127.0.0.1:3001",
		"MY_QQ_TOKEN",
		"", // openai
		"http://127.0.0.1:11434/v1",
		"MY_KEY",
		"qwen2.5",
		out,
	}, "\n") + "\n"
	var stdout, stderr bytes.Buffer
	code := initCmd([]string{"--no-doctor"}, strings.NewReader(script), &stdout, &stderr)
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout.String(), stderr.String())
	}
	if !strings.Contains(stdout.String(), "want a ws:// or wss:// URL") {
		t.Errorf("the bad address was not refused:\n%s", stdout.String())
	}
	cfg, err := config.LoadFile(out, os.LookupEnv)
	if err != nil {
		t.Fatalf("%v\n%s", err, stdout.String())
	}
	p := cfg.Models.Providers["openai"]
	if cfg.Channels.OneBot.WSURL != "ws://127.0.0.1:3001" || cfg.Channels.OneBot.AccessToken.Value() != "tok" ||
		p.BaseURL != "http://127.0.0.1:11434/v1" || p.APIKey.Value() != "sk" || cfg.Agents.Defaults.Model.Primary != "openai/qwen2.5" {
		t.Errorf("got %+v %+v %+v", cfg.Channels.OneBot.OneBotAccount, p, cfg.Agents.Defaults.Model)
	}
	if code, stdout, stderr := runCmd(t, "config", "check", out); code != 0 {
		t.Errorf("config check: exit %d\n%s\n%s", code, stdout, stderr)
	}
}

// TestInitInteractiveReverseWithoutKey: "reverse" and "none" answers.
func TestInitInteractiveReverseWithoutKey(t *testing.T) {
	t.Chdir(t.TempDir())
	script := "reverse\nnone\nopenai\nhttp://127.0.0.1:11434/v1\nnone\nllama3\n\n"
	var stdout, stderr bytes.Buffer
	if code := initCmd([]string{"--no-doctor"}, strings.NewReader(script), &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout.String(), stderr.String())
	}
	cfg, err := config.LoadFile(config.DefaultFile, func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	ob := cfg.Channels.OneBot
	if !ob.ReverseWS.Enabled || ob.WSURL != "" || ob.AccessToken != "" || cfg.Models.Providers["openai"].APIKey != "" {
		t.Errorf("got %+v %+v", ob.OneBotAccount, cfg.Models.Providers)
	}
}

const sampleOpenClaw = `{
  meta: { lastTouchedVersion: '2026.5.2' },
  models: { providers: { deepseek: { baseUrl: 'https://api.deepseek.com/v1', apiKey: '${DEEPSEEK_API_KEY}', api: 'openai-completions', models: [{ id: 'deepseek-chat' }] } } },
  agents: { defaults: { model: { primary: 'deepseek/deepseek-chat' }, typingMode: 'instant' } },
  channels: {
    snowluma: { wsUrl: 'ws://127.0.0.1:3001', accessToken: 'tok', streaming: true },
    feishu: { appId: 'cli_a1', appSecret: 'sec', connectionMode: 'websocket', dmPolicy: 'pairing' },
  },
  gateway: { port: 18800, auth: { mode: 'token', token: 'gw' } },
  plugins: { entries: { 'openclaw-snowluma': { enabled: true } } },
}`

func TestInitFromOpenClaw(t *testing.T) {
	t.Chdir(t.TempDir())
	t.Setenv("DEEPSEEK_API_KEY", "sk-d")
	if err := os.WriteFile("openclaw.json", []byte(sampleOpenClaw), 0o600); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := runCmd(t, "init", "--from", "openclaw.json", "--no-doctor")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	for _, want := range []string{"wrote pincer.json5", "not carried over from openclaw.json", "  - channels.snowluma.streaming: ", "  - plugins: ", "  - agents.defaults.typingMode: "} {
		if !strings.Contains(stdout, want) {
			t.Errorf("output lacks %q:\n%s", want, stdout)
		}
	}
	data, _ := os.ReadFile("pincer.json5")
	if !strings.Contains(string(data), "//   - channels.feishu.dmPolicy: ") {
		t.Errorf("the file does not list what was left out:\n%s", data)
	}
	if code, stdout, stderr := runCmd(t, "config", "check", "pincer.json5"); code != 0 {
		t.Fatalf("config check: exit %d\n%s\n%s\n%s", code, stdout, stderr, data)
	}
	cfg, err := config.LoadFile("pincer.json5", os.LookupEnv)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Gateway.Listen != "127.0.0.1:18800" || cfg.Gateway.Token.Value() != "gw" || cfg.Models.Providers["deepseek"].APIKey.Value() != "sk-d" ||
		cfg.Agents.Defaults.Model.Primary != "deepseek/deepseek-chat" || cfg.Channels.OneBot.AccessToken.Value() != "tok" || cfg.Channels.Feishu.AppSecret.Value() != "sec" {
		t.Errorf("got %+v", cfg)
	}
}

func TestConfigCheckRecognizesOpenClaw(t *testing.T) {
	path := filepath.Join(t.TempDir(), "openclaw.json")
	if err := os.WriteFile(path, []byte(sampleOpenClaw), 0o600); err != nil {
		t.Fatal(err)
	}
	code, _, stderr := runCmd(t, "config", "check", path)
	if code != 1 {
		t.Errorf("exit %d, want 1: the file is not a pincer configuration", code)
	}
	for _, want := range []string{"is an OpenClaw configuration", "pincer init --from " + path, "+ channels.onebot.wsUrl", "+ gateway.token", "- channels.snowluma.streaming: "} {
		if !strings.Contains(stderr, want) {
			t.Errorf("report lacks %q:\n%s", want, stderr)
		}
	}
	if strings.Contains(stderr, "unknown key") {
		t.Errorf("report lists unknown keys:\n%s", stderr)
	}
}

// TestInitRefusesAnExistingFileFirst: without --force, an existing output
// file is refused before any question is asked.
func TestInitRefusesAnExistingFileFirst(t *testing.T) {
	t.Chdir(t.TempDir())
	if err := os.WriteFile(config.DefaultFile, []byte("{}"), 0o600); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	code := initCmd([]string{"--no-doctor"}, strings.NewReader("ws://127.0.0.1:3001\n"), &stdout, &stderr)
	if code != 1 || !strings.Contains(stderr.String(), "pincer.json5 exists; pass --force") {
		t.Errorf("exit %d, stderr %q", code, stderr.String())
	}
	if stdout.Len() > 0 {
		t.Errorf("asked before refusing:\n%s", stdout.String())
	}
	if data, _ := os.ReadFile(config.DefaultFile); string(data) != "{}" {
		t.Errorf("the file was changed: %q", data)
	}
}

// TestInitAsksAgainForAnExistingOutput: an output named in the last answer
// that exists is refused and asked again.
func TestInitAsksAgainForAnExistingOutput(t *testing.T) {
	t.Chdir(t.TempDir())
	if err := os.WriteFile("taken.json5", []byte("{}"), 0o600); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	script := "none\n\n\n\n\ntaken.json5\nfree.json5\n"
	if code := initCmd([]string{"--no-doctor"}, strings.NewReader(script), &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout.String(), stderr.String())
	}
	if !strings.Contains(stdout.String(), "taken.json5 exists") {
		t.Errorf("the existing file was not refused:\n%s", stdout.String())
	}
	if _, err := os.Stat("free.json5"); err != nil {
		t.Error(err)
	}
}

// TestInitProviderAnswers: the provider prompt takes the numbers and names
// it lists, in any case, and fills the provider's defaults.
func TestInitProviderAnswers(t *testing.T) {
	tests := []struct {
		answer, provider, baseURL, primary string
	}{
		{"deepseek", "deepseek", "https://api.deepseek.com/v1", "deepseek/deepseek-chat"},
		{"DeepSeek", "deepseek", "https://api.deepseek.com/v1", "deepseek/deepseek-chat"},
		{" DEEPSEEK ", "deepseek", "https://api.deepseek.com/v1", "deepseek/deepseek-chat"},
		{"2", "deepseek", "https://api.deepseek.com/v1", "deepseek/deepseek-chat"},
		{"qwen", "qwen", "https://dashscope.aliyuncs.com/compatible-mode/v1", "qwen/qwen-plus"},
		{"通义千问", "qwen", "https://dashscope.aliyuncs.com/compatible-mode/v1", "qwen/qwen-plus"},
		{"Anthropic", "anthropic", "https://api.anthropic.com", "anthropic/claude-sonnet-4-5"},
		{"claude", "anthropic", "https://api.anthropic.com", "anthropic/claude-sonnet-4-5"},
		{"", "openai", "https://api.openai.com/v1", "openai/gpt-4o-mini"},
		{"1", "openai", "https://api.openai.com/v1", "openai/gpt-4o-mini"},
		{"ollama", "ollama", "http://127.0.0.1:11434/v1", "ollama/qwen2.5"},
	}
	for _, tt := range tests {
		t.Run(tt.answer, func(t *testing.T) {
			t.Chdir(t.TempDir())
			// QQ: none; the provider; then every default.
			script := "none\n" + tt.answer + "\n\n\n\n\n"
			var stdout, stderr bytes.Buffer
			if code := initCmd([]string{"--no-doctor"}, strings.NewReader(script), &stdout, &stderr); code != 0 {
				t.Fatalf("exit %d\n%s\n%s", code, stdout.String(), stderr.String())
			}
			if strings.Contains(stdout.String(), "want a number") {
				t.Errorf("%q was refused:\n%s", tt.answer, stdout.String())
			}
			cfg, err := config.LoadFile(config.DefaultFile, func(string) (string, bool) { return "k", true })
			if err != nil {
				t.Fatal(err)
			}
			p, ok := cfg.Models.Providers[tt.provider]
			if !ok || p.BaseURL != tt.baseURL || cfg.Agents.Defaults.Model.Primary != tt.primary {
				t.Errorf("providers %+v, primary %q", cfg.Models.Providers, cfg.Agents.Defaults.Model.Primary)
			}
		})
	}
	t.Run("refused", func(t *testing.T) {
		t.Chdir(t.TempDir())
		var stdout, stderr bytes.Buffer
		initCmd([]string{"--no-doctor"}, strings.NewReader("none\n7\ngemini\ndeepseek\n\n\n\n\n"), &stdout, &stderr)
		if n := strings.Count(stdout.String(), "want a number from 1 to 6"); n != 2 {
			t.Errorf("%d refusals, want 2:\n%s", n, stdout.String())
		}
	})
}
