package main

import (
	"bytes"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/pincerbot/pincer/internal/config"
)

func runCmd(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = run(args, &out, &errb)
	return code, out.String(), errb.String()
}

func TestConfigCheckReportsTypoPath(t *testing.T) {
	path := filepath.Join(t.TempDir(), "pincer.json5")
	doc := `{
	  // a typo two levels down, and a bad value
	  channels: { webchat: { titel: 'x' } },
	  gateway: { listen: 'nonsense' },
	}`
	if err := os.WriteFile(path, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	code, _, stderr := runCmd(t, "config", "check", "--config", path)
	if code != 1 {
		t.Errorf("exit code %d, want 1", code)
	}
	for _, want := range []string{"channels.webchat.titel: unknown key", "2 problems"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("report lacks %q:\n%s", want, stderr)
		}
	}
}

func TestConfigCheckAcceptsTheExample(t *testing.T) {
	path := filepath.Join(t.TempDir(), "example.json5")
	code, example, _ := runCmd(t, "config", "example")
	if code != 0 || !bytes.Equal([]byte(example), config.Example) {
		t.Fatalf("config example: exit %d", code)
	}
	if err := os.WriteFile(path, []byte(example), 0o600); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := runCmd(t, "config", "check", path)
	if code != 0 || !strings.Contains(stdout, "ok") {
		t.Errorf("exit %d\nstdout %s\nstderr %s", code, stdout, stderr)
	}
}

func TestConfigCheckDefaults(t *testing.T) {
	t.Chdir(t.TempDir())
	t.Setenv(config.EnvVar, "")
	code, stdout, _ := runCmd(t, "config", "check")
	if code != 0 || !strings.Contains(stdout, "built-in defaults: ok") {
		t.Errorf("exit %d: %s", code, stdout)
	}
}

func TestConfigFromEnvVar(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.json5")
	if err := os.WriteFile(path, []byte(`{log: {level: 'loud'}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv(config.EnvVar, path)
	if code, _, stderr := runCmd(t, "config", "check"); code != 1 || !strings.Contains(stderr, "log.level") {
		t.Errorf("exit %d: %s", code, stderr)
	}
}

func TestUsageErrors(t *testing.T) {
	for _, args := range [][]string{{}, {"bogus"}, {"config"}, {"config", "bogus"}, {"serve", "--nope"}, {"config", "check", "a", "b"}} {
		if code, _, _ := runCmd(t, args...); code != 2 {
			t.Errorf("%q: exit %d, want 2", args, code)
		}
	}
	if code, stdout, _ := runCmd(t, "version"); code != 0 || !strings.HasPrefix(stdout, "pincer ") {
		t.Errorf("version: %d %q", code, stdout)
	}
}

func TestServeFailsOnBadConfig(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.json5")
	if err := os.WriteFile(path, []byte(`{gateway: {listen: '0.0.0.0:0'}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	code, _, stderr := runCmd(t, "serve", "--config", path)
	if code != 1 || !strings.Contains(stderr, "gateway.token: required") {
		t.Errorf("exit %d: %s", code, stderr)
	}
}

func TestConfigCheckWarnsOfSkippedKeywords(t *testing.T) {
	path := filepath.Join(t.TempDir(), "pincer.json5")
	doc := `{ channels: { onebot: { receive: { mention: { keywordMatch: 'regex', keywords: ['天气', '(oops'] } } } } }`
	if err := os.WriteFile(path, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := runCmd(t, "config", "check", "--config", path)
	if code != 0 || !strings.Contains(stdout, "ok") {
		t.Fatalf("an invalid regex is a warning, not an error: %d %s %s", code, stdout, stderr)
	}
	if !strings.Contains(stderr, "warning: channels.onebot.receive.mention.keywords[1]") {
		t.Errorf("stderr %q", stderr)
	}
}

func TestBuildVersion(t *testing.T) {
	rev := []debug.BuildSetting{{Key: "vcs.revision", Value: "0518986b1c99f00d"}, {Key: "vcs.modified", Value: "false"}}
	for _, tt := range []struct {
		bi   *debug.BuildInfo
		want string
	}{
		{nil, "dev"},
		{&debug.BuildInfo{Main: debug.Module{Version: "v1.2.3"}, Settings: rev}, "v1.2.3"},
		{&debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: rev}, "dev-0518986b1c99"},
		{&debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "abc"}, {Key: "vcs.modified", Value: "true"}}}, "dev-abc-dirty"},
		{&debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, "dev"},
	} {
		if got := buildVersion(tt.bi); got != tt.want {
			t.Errorf("buildVersion(%+v) = %q, want %q", tt.bi, got, tt.want)
		}
	}
}
