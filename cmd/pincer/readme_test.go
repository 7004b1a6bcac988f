package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReadmeSaysHowToInstall: the README tells a new user how to get the
// binary, with the module path and Go version of go.mod, and keeps its
// quick-start and test commands.
func TestReadmeSaysHowToInstall(t *testing.T) {
	root := filepath.Join("..", "..")
	mod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	var module, goVersion string
	for line := range strings.Lines(string(mod)) {
		if rest, ok := strings.CutPrefix(line, "module "); ok {
			module = strings.TrimSpace(rest)
		}
		if rest, ok := strings.CutPrefix(line, "go "); ok {
			goVersion = strings.TrimSpace(rest)
		}
	}
	if module == "" || goVersion == "" {
		t.Fatalf("go.mod without module or go line:\n%s", mod)
	}
	for _, want := range []string{
		"go install " + module + "/cmd/pincer@latest",
		"go build -o pincer ./cmd/pincer",
		"Go " + goVersion,
		"go run ./cmd/pincer serve",
		"go test -race ./...",
	} {
		if !strings.Contains(string(readme), want) {
			t.Errorf("README.md does not say %q", want)
		}
	}
}
