package command

import (
	"testing"
)

func registry(t *testing.T) *Registry {
	t.Helper()
	r := NewRegistry()
	for _, s := range []*Spec{
		{Name: "status"},
		{Name: "new", Aliases: []string{"reset"}},
		{Name: "model", AcceptsArgs: true, OwnerOnly: true},
	} {
		if err := r.Register(s); err != nil {
			t.Fatal(err)
		}
	}
	return r
}

func TestParse(t *testing.T) {
	r := registry(t)
	tests := []struct {
		text, name, args string
		ok               bool
	}{
		{"/status", "status", "", true},
		{"  /STATUS  ", "status", "", true},
		{"!status", "status", "", true},
		{"/reset", "new", "", true},
		{"/model gpt-4o", "model", "gpt-4o", true},
		{"/model\topenai/gpt-4o  ", "model", "openai/gpt-4o", true},
		{"/model", "model", "", true},
		{"/status please", "", "", false}, // takes no arguments: plain text
		{"/statusx", "", "", false},
		{"hey /status", "", "", false},
		{"/", "", "", false},
		{"/unknown", "", "", false},
		{"status", "", "", false},
	}
	for _, tt := range tests {
		c, ok := r.Parse(tt.text)
		if ok != tt.ok || (ok && (c.Spec.Name != tt.name || c.Args != tt.args)) {
			t.Errorf("Parse(%q) = %v %q %v, want %q %q %v", tt.text, c.Spec, c.Args, ok, tt.name, tt.args, tt.ok)
		}
	}
}

func TestRegisterRejectsClashes(t *testing.T) {
	r := registry(t)
	if err := r.Register(&Spec{Name: "x", Aliases: []string{"reset"}}); err == nil {
		t.Error("a taken alias must be refused")
	}
	if err := r.Register(&Spec{Name: "Bad"}); err == nil {
		t.Error("names are lower case")
	}
	if _, ok := r.Parse("/x"); ok {
		t.Error("a refused command must not be half registered")
	}
}

func TestInlineTokensAndAbort(t *testing.T) {
	for text, want := range map[string]bool{"hey /status": true, "/new": true, "a/b": false, "see !x": true, "http://x": false} {
		if got := HasInlineTokens(text); got != want {
			t.Errorf("HasInlineTokens(%q) = %v", text, got)
		}
	}
	for text, want := range map[string]bool{"stop": true, " Stop! ": true, "停止": true, "停止。": true, "cancel": true, "stop it": false, "please stop": false} {
		if got := IsAbort(text); got != want {
			t.Errorf("IsAbort(%q) = %v", text, got)
		}
	}
	if !registry(t).IsControl("stop") || !registry(t).IsControl("/status") || registry(t).IsControl("hello") {
		t.Error("IsControl")
	}
}

func TestPolicy(t *testing.T) {
	p := Policy{AllowFrom: []string{"onebot:1", "feishu:*"}, OwnerAllowFrom: []string{"webchat:*", "onebot:9"}}
	model := &Spec{Name: "model", OwnerOnly: true}
	status := &Spec{Name: "status"}
	tests := []struct {
		ch, sender          string
		authorized, ownerOK bool
	}{
		{"onebot", "1", true, false},
		{"onebot", "2", false, false},
		{"onebot", "9", true, true},
		{"feishu", "ou_x", true, false},
		{"webchat", "b", true, true},
		{"webchat", "", false, false},
	}
	for _, tt := range tests {
		if got := p.May(status, tt.ch, tt.sender); got != tt.authorized {
			t.Errorf("May(status, %s:%s) = %v", tt.ch, tt.sender, got)
		}
		if got := p.May(model, tt.ch, tt.sender); got != tt.ownerOK {
			t.Errorf("May(model, %s:%s) = %v", tt.ch, tt.sender, got)
		}
	}
	if (Policy{}).Authorized("onebot", "1") {
		t.Error("an empty policy grants nothing: deny by default")
	}
	if !(Policy{AllowFrom: []string{"*"}}).Authorized("x", "y") {
		t.Error("* admits everyone")
	}
}

func FuzzParse(f *testing.F) {
	f.Add("/model gpt")
	f.Add("!STATUS\n")
	f.Fuzz(func(t *testing.T, text string) {
		r := NewRegistry()
		_ = r.Register(&Spec{Name: "model", AcceptsArgs: true})
		c, ok := r.Parse(text)
		if ok && c.Spec == nil {
			t.Fatal("matched without a spec")
		}
	})
}
