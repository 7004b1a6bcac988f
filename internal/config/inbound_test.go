package config

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestInboundMaxChars(t *testing.T) {
	if got := Default().Messages.Inbound.MaxChars; got != 20000 {
		t.Errorf("default maxChars = %d, want 20000", got)
	}
	if got := (Inbound{}).MaxCharsOrDefault(); got != 20000 {
		t.Errorf("unset MaxCharsOrDefault() = %d, want 20000", got)
	}
	tests := []struct {
		doc  string
		want int // 0: refused
	}{
		{`{}`, 20000},
		{`{ maxChars: 1 }`, 1},
		{`{ maxChars: 500000 }`, 500000},
		{`{ maxChars: 0 }`, 0},
		{`{ maxChars: -3 }`, 0},
	}
	for _, tt := range tests {
		cfg, err := Parse([]byte(`{ messages: { inbound: `+tt.doc+` } }`), noEnv)
		if tt.want == 0 {
			if diff := cmp.Diff([]string{"messages.inbound.maxChars"}, paths(err)); diff != "" {
				t.Errorf("%s: problem paths (-want +got):\n%s", tt.doc, diff)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tt.doc, err)
			continue
		}
		if got := cfg.Messages.Inbound.MaxCharsOrDefault(); got != tt.want {
			t.Errorf("%s: MaxCharsOrDefault() = %d, want %d", tt.doc, got, tt.want)
		}
	}
}

// TestInboundDebounceOnlyWhereItActs: messages.inbound debounces the web
// chat alone, so a setting of it that would do nothing — for QQ or Feishu
// (which merge bursts in their receive.realtime windows), for a channel
// that does not exist, or while the web chat is off — is refused by its
// key path, saying what to set instead.
func TestInboundDebounceOnlyWhereItActs(t *testing.T) {
	tests := []struct {
		name string
		doc  string
		want []string // the whole problems; none: accepted
	}{
		{"web chat", `messages: { inbound: { debounceMs: 1500, maxWaitMs: 6000, byChannel: { webchat: 2000 } } }`, nil},
		{"web chat off, nothing debounced", `channels: { webchat: { enabled: false } }, messages: { inbound: { debounceMs: 0, byChannel: { webchat: 0 } } }`, nil},
		{"QQ", `messages: { inbound: { byChannel: { onebot: 1500 } } }`, []string{
			"messages.inbound.byChannel.onebot: has no effect: QQ merges bursts in channels.onebot.receive.realtime (windowMs, maxWindowMs); set those instead",
		}},
		{"Feishu, even 0", `messages: { inbound: { byChannel: { feishu: 0 } } }`, []string{
			"messages.inbound.byChannel.feishu: has no effect: Feishu merges bursts in channels.feishu.receive.realtime (windowMs, maxWindowMs); set those instead",
		}},
		{"unknown channel", `messages: { inbound: { byChannel: { telegram: 1500 } } }`, []string{
			`messages.inbound.byChannel.telegram: unknown channel "telegram": only webchat is debounced here (QQ and Feishu merge bursts in channels.onebot.receive.realtime and channels.feishu.receive.realtime)`,
		}},
		{"web chat off", `channels: { webchat: { enabled: false } }, messages: { inbound: { debounceMs: 1500, maxWaitMs: 6000, byChannel: { webchat: 800 } } }`, []string{
			"messages.inbound.byChannel.webchat: has no effect while channels.webchat.enabled is false: only the web chat is debounced here (QQ and Feishu merge bursts in channels.<channel>.receive.realtime); remove it or enable the web chat",
			"messages.inbound.debounceMs: has no effect while channels.webchat.enabled is false: only the web chat is debounced here (QQ and Feishu merge bursts in channels.<channel>.receive.realtime); remove it or enable the web chat",
			"messages.inbound.maxWaitMs: has no effect while channels.webchat.enabled is false: only the web chat is debounced here (QQ and Feishu merge bursts in channels.<channel>.receive.realtime); remove it or enable the web chat",
		}},
		{"a cap without a window", `messages: { inbound: { maxWaitMs: 3000 } }`, []string{
			"messages.inbound.maxWaitMs: has no effect: the web chat's bursts are not merged (debounceMs and byChannel.webchat are 0)",
		}},
		{"a cap below the window", `messages: { inbound: { debounceMs: 1500, maxWaitMs: 1000 } }`, []string{
			"messages.inbound.maxWaitMs: must not be below the web chat's quiet window (1500)",
		}},
		// An enabled flag that could not be read is reported alone, not
		// again as a debounce that does nothing.
		{"unreadable enabled", `channels: { webchat: { enabled: 'no' } }, messages: { inbound: { debounceMs: 1500 } }`, []string{
			"channels.webchat.enabled: want true or false, got a string",
		}},
	}
	for _, tt := range tests {
		_, err := Parse([]byte(`{ `+tt.doc+` }`), noEnv)
		var got []string
		for _, p := range Problems(err) {
			got = append(got, p.Error())
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("%s: problems (-want +got):\n%s", tt.name, diff)
		}
	}
}
