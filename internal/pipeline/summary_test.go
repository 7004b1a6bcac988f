package pipeline

import "testing"

func TestParseSummary(t *testing.T) {
	cmds := []string{"/summary", "/总结"}
	tests := []struct {
		text  string
		count int
		ok    bool
	}{
		{"/summary", 100, true},
		{"/summary 30", 30, true},
		{"/总结50", 50, true},
		{"/SUMMARY", 100, true},
		{"/summary 最近聊了什么", 100, true},
		{"/summarylater", 0, false},
		{"帮我 /summary 一下", 0, false},
		{"  /summary\t7  ", 7, true},
		{"/summary 500", 200, true},
		{"/summary 0", 100, true},
		{"/summary 12345", 100, true},
		{"/summary30", 30, true},
		{"/summary -5", 100, true},
		{"/总", 0, false},
		{"", 0, false},
	}
	for _, tt := range tests {
		count, ok := ParseSummary(tt.text, cmds, 100, 200)
		if ok != tt.ok || count != tt.count {
			t.Errorf("%q: got %d %v, want %d %v", tt.text, count, ok, tt.count, tt.ok)
		}
	}
}

func FuzzParseSummary(f *testing.F) {
	f.Add("/summary 12")
	f.Add("/总结٣")
	f.Fuzz(func(t *testing.T, s string) {
		if n, ok := ParseSummary(s, []string{"/summary", "/总结", "/ß"}, 100, 200); ok && (n < 1 || n > 200) {
			t.Fatalf("count %d out of range for %q", n, s)
		}
	})
}
