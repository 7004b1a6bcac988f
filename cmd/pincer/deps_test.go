package main

import (
	"errors"
	"os/exec"
	"strings"
	"testing"
)

// TestBinaryDoesNotLinkTesting keeps test helpers out of the release
// binary: a package that imports testing (onebottest, llmtest,
// webchattest, storetest …) brings the testing package and its flags
// with it.
func TestBinaryDoesNotLinkTesting(t *testing.T) {
	const self = "github.com/pincerbot/pincer/cmd/pincer"
	out, err := exec.Command("go", "list", "-deps", "-f", `{{.ImportPath}}{{range .Imports}} {{.}}{{end}}`, self).Output()
	if err != nil {
		var stderr string
		if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("go list -deps %s: %v\n%s", self, err, stderr)
	}
	var linked bool
	var importers []string
	for line := range strings.Lines(string(out)) {
		fields := strings.Fields(line)
		if len(fields) == 0 {
			continue
		}
		if fields[0] == "testing" {
			linked = true
		}
		for _, imp := range fields[1:] {
			if imp == "testing" {
				importers = append(importers, fields[0])
			}
		}
		if strings.HasPrefix(fields[0], "github.com/pincerbot/pincer/") && strings.HasSuffix(fields[0], "test") {
			t.Errorf("the binary links the test helper %s", fields[0])
		}
	}
	if linked {
		t.Errorf("the binary links the testing package, imported by %s", strings.Join(importers, ", "))
	}
}

// TestBinaryDoesNotExecuteTemplates keeps text/template's executor out of
// the binary's own packages: it calls methods by name through reflection,
// which makes the linker keep every exported method of every type that
// could reach it (about 48 MB of a 121 MB binary, and the pages of them a
// running pincer maps). The pages fill in their title with
// internal/htmlpage instead.
func TestBinaryDoesNotExecuteTemplates(t *testing.T) {
	const self = "github.com/pincerbot/pincer/cmd/pincer"
	out, err := exec.Command("go", "list", "-deps", "-f", `{{.ImportPath}}{{range .Imports}} {{.}}{{end}}`, self).Output()
	if err != nil {
		t.Fatalf("go list -deps %s: %v", self, err)
	}
	for line := range strings.Lines(string(out)) {
		fields := strings.Fields(line)
		if len(fields) == 0 || !strings.HasPrefix(fields[0], "github.com/pincerbot/pincer/") {
			continue
		}
		for _, imp := range fields[1:] {
			if imp == "text/template" || imp == "html/template" {
				t.Errorf("%s imports %s", fields[0], imp)
			}
		}
	}
}
