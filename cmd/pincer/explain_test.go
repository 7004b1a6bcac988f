package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestConfigExplain: pincer config explain prints every setting of a chat
// with the layer it came from.
func TestConfigExplain(t *testing.T) {
	path := filepath.Join(t.TempDir(), "pincer.json5")
	doc := `{
	  models: { providers: { a: { baseUrl: 'http://x', apiKey: 'k' } } },
	  agents: { defaults: { model: { primary: 'a/m1' } } },
	  channels: { onebot: {
	    wsUrl: 'ws://x',
	    groups: { '*': { enabled: false }, '123': { enabled: true, systemPrompt: 'tutor', receive: { mention: { keywords: ['老师'] } } } },
	  } },
	}`
	if err := os.WriteFile(path, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := runCmd(t, "config", "explain", "--config", path, "onebot:default:group:123")
	if code != 0 || stderr != "" {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	for _, line := range []string{
		`enabled +true +channels.onebot.groups.123`,
		`systemPrompt +"tutor" +channels.onebot.groups.123`,
		`receive.mention.keywords +\["老师"\] +channels.onebot.groups.123`,
		`model.primary +"a/m1" +agents.defaults`,
		`receive.mention.requireMentionInGroup +true +default`,
		`sendGapMs +1000 +default`,
		`layers, lowest first: default < agents.defaults, messages, limits < channels.onebot < channels.onebot.groups.\* < channels.onebot.groups.123`,
	} {
		if !regexp.MustCompile(`(?m)^` + line + `$`).MatchString(stdout) {
			t.Errorf("stdout lacks %s:\n%s", line, stdout)
		}
	}
	// A group without an entry gets the '*' entry, which keeps it silent.
	code, stdout, _ = runCmd(t, "config", "explain", "--config", path, "onebot:default:group:456")
	if code != 0 || !regexp.MustCompile(`(?m)^enabled +false +channels.onebot.groups.\*$`).MatchString(stdout) || !strings.Contains(stdout, "never answers there") {
		t.Errorf("exit %d:\n%s", code, stdout)
	}
	for _, bad := range [][]string{{"onebot:default:group"}, {"onebot:nope:group:1"}, {}} {
		args := append([]string{"config", "explain", "--config", path}, bad...)
		if code, _, stderr := runCmd(t, args...); code == 0 || stderr == "" {
			t.Errorf("%v: exit %d, stderr %q", bad, code, stderr)
		}
	}
}

// TestConfigCheckNamesChatEntryPaths: pincer config check names a mistake
// inside a chat entry by its full key path.
func TestConfigCheckNamesChatEntryPaths(t *testing.T) {
	path := filepath.Join(t.TempDir(), "pincer.json5")
	doc := `{ channels: { onebot: { groups: { '123': { recieve: {}, thinking: 'max' } } } } }`
	if err := os.WriteFile(path, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	code, _, stderr := runCmd(t, "config", "check", path)
	for _, want := range []string{
		`channels.onebot.groups.123.recieve: unknown key (did you mean "receive"?)`,
		`channels.onebot.groups.123.thinking: want off, minimal, low, medium, high or xhigh, got "max"`,
	} {
		if code != 1 || !strings.Contains(stderr, want) {
			t.Errorf("exit %d; stderr lacks %q:\n%s", code, want, stderr)
		}
	}
}
