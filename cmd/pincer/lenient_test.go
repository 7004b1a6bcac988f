package main

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/pincerbot/pincer/internal/channel/onebot/onebottest"
	"github.com/pincerbot/pincer/internal/dashboard"
)

// TestInspectNeedsOnlyTheGateway: pincer status and pincer trace run from
// a shell that has the gateway's token but not the model's or Feishu's
// secrets, and say so clearly when the token itself is missing.
func TestInspectNeedsOnlyTheGateway(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer s3cret" {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		switch r.URL.Path {
		case "/api/dashboard/status":
			_ = json.NewEncoder(w).Encode(dashboard.Status{Version: "test"})
		case "/api/trace":
			_, _ = w.Write([]byte(`{"records":[]}`))
		}
	}))
	defer srv.Close()
	cfg := writeConfig(t, `{
		gateway: { listen: '`+strings.TrimPrefix(srv.URL, "http://")+`', token: '${PINCER_TEST_GATEWAY_TOKEN}' },
		models: { providers: { deepseek: { baseUrl: 'https://api.deepseek.com', apiKey: '${PINCER_TEST_UNSET_KEY}' } } },
		agents: { defaults: { model: { primary: 'deepseek/deepseek-chat' } } },
		channels: { feishu: { appId: 'cli_x', appSecret: '${PINCER_TEST_UNSET_SECRET}' } },
	}`)

	t.Run("token set", func(t *testing.T) {
		t.Setenv("PINCER_TEST_GATEWAY_TOKEN", "s3cret")
		if code, stdout, stderr := runCmd(t, "status", "--config", cfg); code != 0 || !strings.Contains(stdout, "pincer test") {
			t.Errorf("status: exit %d\n%s%s", code, stdout, stderr)
		}
		// No trace is there: the command got as far as asking.
		if code, _, stderr := runCmd(t, "trace", "--config", cfg, "onebot:default:group:1"); code != 1 || !strings.Contains(stderr, "no trace of") {
			t.Errorf("trace: exit %d: %s", code, stderr)
		}
	})
	t.Run("token unset", func(t *testing.T) {
		code, _, stderr := runCmd(t, "status", "--config", cfg)
		const want = "gateway.token: environment variable PINCER_TEST_GATEWAY_TOKEN is not set"
		if code == 0 || !strings.Contains(stderr, want) || strings.Contains(stderr, "PINCER_TEST_UNSET") {
			t.Errorf("exit %d, stderr %q; want it to name only %q", code, stderr, want)
		}
	})
}

// TestSendNeedsOnlyItsAccount: pincer send runs while a secret of another
// section is unset, and names the account's own unset variable.
func TestSendNeedsOnlyItsAccount(t *testing.T) {
	p := onebottest.New(t, func(string, json.RawMessage) (any, int, string) {
		return map[string]any{"message_id": 78}, 0, ""
	})
	cfg := writeConfig(t, `{
		channels: { onebot: { httpUrl: '`+p.HTTPURL+`', accounts: { work: { httpUrl: '`+p.HTTPURL+`', accessToken: '${PINCER_TEST_UNSET_TOKEN}' } } } },
		models: { providers: { deepseek: { baseUrl: 'https://api.deepseek.com', apiKey: '${PINCER_TEST_UNSET_KEY}' } } },
		agents: { defaults: { model: { primary: 'deepseek/deepseek-chat' } } },
	}`)
	if code, stdout, stderr := runCmd(t, "send", "--config", cfg, "--target", "group:1", "hi"); code != 0 || !strings.Contains(stdout, "message id 78") {
		t.Errorf("send: exit %d\n%s%s", code, stdout, stderr)
	}
	code, _, stderr := runCmd(t, "send", "--config", cfg, "--account", "work", "--target", "group:1", "hi")
	if code != 1 || !strings.Contains(stderr, "channels.onebot.accounts.work.accessToken: environment variable PINCER_TEST_UNSET_TOKEN is not set") {
		t.Errorf("send --account work: exit %d: %s", code, stderr)
	}
}
