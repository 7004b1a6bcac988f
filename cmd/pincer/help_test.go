package main

import (
	"strings"
	"testing"
)

// TestEverySubcommandHasHelp: `pincer <sub> -h` and `--help` print that
// subcommand's usage on stdout, nothing on stderr, and exit 0.
func TestEverySubcommandHasHelp(t *testing.T) {
	tests := []struct {
		args []string
		want []string
	}{
		{[]string{"serve"}, []string{"Usage: pincer serve [--config FILE | FILE]", "-config"}},
		{[]string{"config"}, []string{"Usage: pincer config check [--config FILE | FILE]", "pincer config example"}},
		{[]string{"config", "check"}, []string{"Usage: pincer config check [--config FILE | FILE]", "Without FILE", "-config"}},
		{[]string{"config", "example"}, []string{"Usage: pincer config example"}},
		{[]string{"config", "explain"}, []string{"Usage: pincer config explain [--config FILE] CHAT", "onebot:default:group:123456", "-config"}},
		{[]string{"init"}, []string{"Usage: pincer init", "-non-interactive", "-from"}},
		{[]string{"doctor"}, []string{"Usage: pincer doctor [--config FILE | FILE]", "-json"}},
		{[]string{"send"}, []string{"Usage: pincer send", "--target TARGET", "group:<id>", "-account"}},
		{[]string{"dev"}, []string{"Usage: pincer dev onebot-sim", "feishu-sim"}},
		{[]string{"dev", "onebot-sim"}, []string{"Usage: pincer dev onebot-sim", "-listen"}},
		{[]string{"dev", "feishu-sim"}, []string{"Usage: pincer dev feishu-sim", "-webhook"}},
		{[]string{"bench"}, []string{"Usage: pincer bench", "-scenario"}},
		{[]string{"status"}, []string{"Usage: pincer status", "-url"}},
		{[]string{"trace"}, []string{"Usage: pincer trace [flags] CHAT [MESSAGE-ID]", "CHAT is the chat", "onebot:default:group:123456", "group:123456", "MESSAGE-ID shows that message alone", "-n"}},
		{[]string{"version"}, []string{"Usage: pincer version"}},
		{[]string{"help"}, []string{"Usage:\n  pincer serve"}},
	}
	for _, tt := range tests {
		for _, flag := range []string{"-h", "--help"} {
			args := append(append([]string(nil), tt.args...), flag)
			t.Run(strings.Join(args, " "), func(t *testing.T) {
				code, stdout, stderr := runCmd(t, args...)
				if code != 0 || stderr != "" {
					t.Errorf("exit %d, stderr %q; want 0 and nothing", code, stderr)
				}
				for _, w := range tt.want {
					if !strings.Contains(stdout, w) {
						t.Errorf("stdout lacks %q:\n%s", w, stdout)
					}
				}
			})
		}
	}
}

// TestBadFlagsStillGoToStderr: a flag a command does not know is an error,
// with the usage, on stderr and exit 2.
func TestBadFlagsStillGoToStderr(t *testing.T) {
	for _, args := range [][]string{{"serve", "--nope"}, {"config", "check", "--nope"}, {"trace", "--nope"}, {"version", "--nope"}, {"dev", "--nope"}} {
		code, stdout, stderr := runCmd(t, args...)
		if code != 2 || stdout != "" || !strings.Contains(stderr, "flag provided but not defined: -nope") || !strings.Contains(stderr, "Usage: pincer") {
			t.Errorf("%v: exit %d, stdout %q, stderr %q", args, code, stdout, stderr)
		}
	}
}

// TestTraceTakesTheChatFormsOfSend: pincer trace names a QQ chat as pincer
// send does, on the one QQ account configured (or the default one), and
// asks to be told which account when several are and none is the default.
func TestTraceTakesTheChatFormsOfSend(t *testing.T) {
	one := writeConfig(t, `{ channels: { onebot: { accounts: { work: { wsUrl: 'ws://127.0.0.1:1' } } } } }`)
	two := writeConfig(t, `{ channels: { onebot: { wsUrl: 'ws://127.0.0.1:1', accounts: { work: { wsUrl: 'ws://127.0.0.1:2' } } } } }`)
	tests := []struct {
		cfg, chat, want string
	}{
		{one, "group:123456", "onebot:work:group:123456"},
		{one, "onebot:group:123456", "onebot:work:group:123456"},
		{one, "private:10001", "onebot:work:direct:10001"},
		{one, "10001", "onebot:work:direct:10001"},
		{one, "onebot:default:group:1", "onebot:default:group:1"},
		{two, "onebot:work:group:1", "onebot:work:group:1"},
		{two, "group:1", "onebot:default:group:1"},
		{two, "webchat:default:direct:abc", "webchat:default:direct:abc"},
	}
	for _, tt := range tests {
		cfg, _, _, err := loadLenient(tt.cfg)
		if err != nil {
			t.Fatal(err)
		}
		if got, err := chatName(cfg.Channels.OneBot, tt.chat); err != nil || got != tt.want {
			t.Errorf("%s: got %q, %v; want %q", tt.chat, got, err, tt.want)
		}
	}
	cfg, _, _, _ := loadLenient(writeConfig(t, `{ channels: { onebot: { accounts: { home: { wsUrl: 'ws://127.0.0.1:1' }, work: { wsUrl: 'ws://127.0.0.1:2' } } } } }`))
	if _, err := chatName(cfg.Channels.OneBot, "group:1"); err == nil || !strings.Contains(err.Error(), "home, work") || !strings.Contains(err.Error(), "onebot:<account>:group:1") {
		t.Errorf("two accounts: %v", err)
	}
	if _, err := chatName(cfg.Channels.OneBot, "group:abc"); err == nil {
		t.Error("group:abc was taken")
	}
}
