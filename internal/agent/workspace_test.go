package agent

import (
	"os"
	"path/filepath"
	"testing"
	"testing/synctest"
	"time"
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

// TestPromptFollowsTheFiles: the kept prompt is the one SystemPrompt
// builds, a second after a file is added, edited (even to the same
// length), and removed; within the second the files are not looked at.
func TestPromptFollowsTheFiles(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dir := t.TempDir()
		p := NewPrompt("Be kind.", dir)
		check := func(want string) {
			t.Helper()
			got, err := p.Text()
			if err != nil || got != want {
				t.Fatalf("got %q (%v), want %q", got, err, want)
			}
		}
		check("Be kind.")
		path := filepath.Join(dir, "SYSTEM.md")
		if err := os.WriteFile(path, []byte("You are pincer."), 0o644); err != nil {
			t.Fatal(err)
		}
		check("Be kind.") // within the second
		time.Sleep(time.Second)
		check("Be kind.\n\n# SYSTEM.md\nYou are pincer.")
		if err := os.WriteFile(path, []byte("You are Pincer."), 0o644); err != nil {
			t.Fatal(err)
		}
		// The same size: the modification time tells the edit.
		later := time.Now().Add(time.Hour)
		if err := os.Chtimes(path, later, later); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Second)
		check("Be kind.\n\n# SYSTEM.md\nYou are Pincer.")
		if err := os.Remove(path); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Second)
		check("Be kind.")
	})
}

// TestPromptTakesANewBase: a reloaded config's prompt is used at once,
// within the second the files are not looked at, with the files still
// added to it.
func TestPromptTakesANewBase(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "SYSTEM.md"), []byte("You are pincer."), 0o644); err != nil {
			t.Fatal(err)
		}
		p := NewPrompt("Be kind.", dir)
		if got, _ := p.Text(); got != "Be kind.\n\n# SYSTEM.md\nYou are pincer." {
			t.Fatalf("first prompt %q", got)
		}
		p.SetBase("你是学习助手。")
		if got, err := p.Text(); err != nil || got != "你是学习助手。\n\n# SYSTEM.md\nYou are pincer." {
			t.Errorf("after SetBase: %q (%v)", got, err)
		}
	})
}
