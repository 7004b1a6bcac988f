package dashboard_test

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/pincerbot/pincer/internal/dashboard"
)

func TestErrorLogKeepsErrorsAndPassesAllOn(t *testing.T) {
	var out bytes.Buffer
	logs := dashboard.NewErrorLog(slog.NewTextHandler(&out, &slog.HandlerOptions{Level: slog.LevelInfo}), dashboard.ErrorLogOptions{Size: 3})
	log := slog.New(logs).With("component", "channel")
	log.Debug("debug is dropped")
	log.Info("connected", "account", "main")
	log.Warn("slow", "ms", 900)
	log.Error("send failed", "err", errors.New("timeout"), slog.Group("req", "path", "/send", "access_token", "hunter2"))
	if strings.Contains(out.String(), "debug is dropped") || !strings.Contains(out.String(), "connected") || !strings.Contains(out.String(), "send failed") {
		t.Errorf("wrapped handler got:\n%s", out.String())
	}
	lines := logs.Lines()
	if len(lines) != 2 || lines[0].Message != "send failed" || lines[1].Message != "slow" {
		t.Fatalf("lines %+v", lines)
	}
	if want := "component=channel err=timeout req.path=/send req.access_token=[redacted]"; lines[0].Attrs != want {
		t.Errorf("attrs %q, want %q", lines[0].Attrs, want)
	}
	if lines[0].Level != "ERROR" || lines[1].Level != "WARN" {
		t.Errorf("levels %s, %s", lines[0].Level, lines[1].Level)
	}

	// The ring keeps the newest Size lines.
	for _, m := range []string{"e1", "e2", "e3"} {
		log.Error(m)
	}
	var got []string
	for _, l := range logs.Lines() {
		got = append(got, l.Message)
	}
	if strings.Join(got, ",") != "e3,e2,e1" {
		t.Errorf("kept %v", got)
	}
}

func TestErrorLogRedactsSecrets(t *testing.T) {
	logs := dashboard.NewErrorLog(slog.DiscardHandler, dashboard.ErrorLogOptions{Level: slog.LevelError})
	log := slog.New(logs).WithGroup("http").With("Authorization", "Bearer abc")
	log.Warn("not kept below the level")
	log.Error("refused",
		"token", "t0k3n", "app_secret", "s3", "Password", "pw", "api_key", "k1", "apiKey", "k2",
		"header", "Bearer xyz", "peer", "group:1", "text", `say "hi"`)
	lines := logs.Lines()
	if len(lines) != 1 {
		t.Fatalf("lines %+v", lines)
	}
	got := lines[0].Attrs
	for _, secret := range []string{"abc", "t0k3n", "s3", "pw", "k1", "k2", "xyz"} {
		if strings.Contains(got, "="+secret) || strings.Contains(got, " "+secret) {
			t.Errorf("%q shows the secret %q", got, secret)
		}
	}
	want := `http.Authorization=[redacted] http.token=[redacted] http.app_secret=[redacted] http.Password=[redacted] http.api_key=[redacted] http.apiKey=[redacted] http.header=[redacted] http.peer=group:1 http.text="say \"hi\""`
	if got != want {
		t.Errorf("attrs\n%s\nwant\n%s", got, want)
	}
}
