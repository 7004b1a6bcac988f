package config

import (
	"strings"
	"testing"
)

func TestLimitsSection(t *testing.T) {
	cfg, err := Parse([]byte(`{}`), noEnv)
	if err != nil {
		t.Fatal(err)
	}
	if !cfg.Limits.Zero() {
		t.Errorf("default limits %+v, want none", cfg.Limits)
	}
	cfg, err = Parse([]byte(`{ limits: { perUser: { messagesPerMinute: 2 }, perChat: { tokensPerDay: 100000 } } }`), noEnv)
	if err != nil {
		t.Fatal(err)
	}
	want := Limits{PerUser: Limit{MessagesPerMinute: 2}, PerChat: Limit{TokensPerDay: 100000}}
	if cfg.Limits != want || cfg.Limits.Zero() {
		t.Errorf("limits = %+v, want %+v", cfg.Limits, want)
	}
	_, err = Parse([]byte(`{ limits: { perUser: { messagesPerMinute: -1, tokensPerDay: -5 }, perChat: { tokensPerDay: -1 } } }`), noEnv)
	for _, want := range []string{
		"limits.perUser.messagesPerMinute: must not be negative (0 means no limit), got -1",
		"limits.perUser.tokensPerDay: must not be negative (0 means no limit), got -5",
		"limits.perChat.tokensPerDay: must not be negative (0 means no limit), got -1",
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("negative limits: %v, want %q", err, want)
		}
	}
	if _, err := Parse([]byte(`{ limits: { perUser: { messagesPerHour: 1 } } }`), noEnv); err == nil || !strings.Contains(err.Error(), "limits.perUser.messagesPerHour") {
		t.Errorf("unknown key: %v", err)
	}
}
