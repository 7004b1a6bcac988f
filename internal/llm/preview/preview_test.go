package preview

import (
	"context"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/pincerbot/pincer/internal/llm"
	"github.com/pincerbot/pincer/internal/llm/llmtest"
)

var update = flag.Bool("update", false, "rewrite golden files")

func TestRenderGolden(t *testing.T) {
	req := llm.Request{
		Model:  "echo",
		System: "You are pincer, a helpful assistant.\n\n# AGENTS.md\nBe brief.",
		Messages: []llm.Message{
			{Role: llm.RoleUser, Text: "[webchat you +0s Mon 2026-11-30 10:00 UTC] hi", Images: []llm.Image{{MIME: "image/jpeg", Data: make([]byte, 2048)}}},
			{Role: llm.RoleAssistant, Text: "hello!"},
			{Role: llm.RoleUser, Text: "[webchat you +1m Mon 2026-11-30 10:01 UTC] what can you do?", Images: []llm.Image{
				{MIME: "image/png", Data: make([]byte, 12345)}, {MIME: "image/webp", Data: []byte("RIFF")},
			}},
		},
	}
	got := Render(req)
	golden := filepath.Join("testdata", "render.golden")
	if *update {
		if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(want), got); diff != "" {
		t.Errorf("preview (-want +got):\n%s", diff)
	}
}

func TestStreamYieldsTheRendering(t *testing.T) {
	req := llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Text: "ping"}}}
	text, _, done, err := llmtest.Collect(Provider{}.Stream(context.Background(), req))
	if err != nil {
		t.Fatal(err)
	}
	if text != Render(req) || done.Kind != llm.EventDone {
		t.Errorf("streamed %q, done %+v", text, done)
	}
}

func TestStreamStopsOnCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, _, _, err := llmtest.Collect(Provider{}.Stream(ctx, llm.Request{}))
	if llm.ClassOf(err) != llm.Fatal {
		t.Fatalf("want a fatal cancellation, got %v", err)
	}
}

// TestImageOnlyMessage: a user message that is only a picture shows as
// the picture's line, with no empty line for its text.
func TestImageOnlyMessage(t *testing.T) {
	got := Render(llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Images: []llm.Image{{MIME: "image/gif", Data: []byte("GIF89a")}}}}})
	if want := "\n=== User message ===\n[image image/gif, 6 bytes]\n\n=== End of preview ===\n"; !strings.Contains(got, want) {
		t.Errorf("rendering\n%s\nlacks\n%s", got, want)
	}
}
