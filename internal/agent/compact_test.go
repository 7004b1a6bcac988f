package agent

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/pincerbot/pincer/internal/llm"
	"github.com/pincerbot/pincer/internal/store"
)

func TestCompact(t *testing.T) {
	p := &fakeProvider{id: "a", steps: []step{{text: []string{"  The user is Ann; she wants a trip plan.  "}}}}
	r := runner(p)
	tr := []store.Turn{
		{Role: store.RoleUser, Text: "I am Ann"},
		{Role: store.RoleAssistant, Text: "Hi Ann"},
		{Role: store.RoleUser, Text: "plan a trip"},
		{Role: store.RoleAssistant, Text: "Where to?"},
		{Role: store.RoleUser, Text: "Hangzhou"},
		{Role: store.RoleAssistant, Text: "Great"},
	}
	summary, keep, err := r.Compact(context.Background(), chain("a/m"), tr, 3)
	if err != nil {
		t.Fatal(err)
	}
	if summary != "The user is Ann; she wants a trip plan." {
		t.Errorf("summary %q", summary)
	}
	// Keeping 3 would start with an assistant turn, so the cut moves back.
	if len(keep) != 4 || keep[0].Text != "plan a trip" {
		t.Errorf("kept %+v", keep)
	}
	req := p.reqs[0]
	if req.System != CompactionPrompt || !strings.Contains(req.Messages[0].Text, "user: I am Ann") || strings.Contains(req.Messages[0].Text, "Hangzhou") {
		t.Errorf("compaction request %+v", req)
	}
	if _, _, err := r.Compact(context.Background(), chain("a/m"), tr[:2], 4); !errors.Is(err, ErrNothingToCompact) {
		t.Errorf("short transcript: %v", err)
	}
}

func TestNeedsCompaction(t *testing.T) {
	r := NewRunner(Options{Providers: map[string]llm.Provider{}, MaxTokens: 100, ContextTokens: 1100})
	small := []store.Turn{{Role: store.RoleUser, Text: strings.Repeat("a", 400)}}
	big := []store.Turn{{Role: store.RoleUser, Text: strings.Repeat("a", 3300)}}
	if r.NeedsCompaction("", small) {
		t.Error("104 of 1000 tokens needs no compaction")
	}
	if !r.NeedsCompaction("", big) {
		t.Error("829 of 1000 tokens is past 80%")
	}
}
