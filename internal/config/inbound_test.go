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
