package agent

import (
	"os"
	"path/filepath"
	"testing"
)

func TestSystemPrompt(t *testing.T) {
	dir := t.TempDir()
	got, err := SystemPrompt("  Be kind. ", dir)
	if err != nil || got != "Be kind." {
		t.Fatalf("no files: %q %v", got, err)
	}
	if err := os.WriteFile(filepath.Join(dir, "AGENTS.md"), []byte("Answer in Chinese.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "SYSTEM.md"), []byte("You are pincer."), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err = SystemPrompt("Be kind.", dir)
	want := "Be kind.\n\n# SYSTEM.md\nYou are pincer.\n\n# AGENTS.md\nAnswer in Chinese."
	if err != nil || got != want {
		t.Errorf("got %q, want %q (%v)", got, want, err)
	}
	if got, _ := SystemPrompt("", filepath.Join(dir, "missing")); got != "" {
		t.Errorf("missing workspace: %q", got)
	}
}
