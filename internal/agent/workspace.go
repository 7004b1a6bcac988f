package agent

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// BootstrapFiles are the workspace files added to the system prompt, in
// order.
var BootstrapFiles = []string{"SYSTEM.md", "AGENTS.md"}

// SystemPrompt joins base with the bootstrap files found in workspace, each
// under a "# <name>" heading. Missing files are skipped; other read errors
// are returned.
func SystemPrompt(base, workspace string) (string, error) {
	parts := []string{}
	if s := strings.TrimSpace(base); s != "" {
		parts = append(parts, s)
	}
	for _, name := range BootstrapFiles {
		b, err := os.ReadFile(filepath.Join(workspace, name))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return strings.Join(parts, "\n\n"), fmt.Errorf("workspace: %w", err)
		}
		if s := strings.TrimSpace(string(b)); s != "" {
			parts = append(parts, "# "+name+"\n"+s)
		}
	}
	return strings.Join(parts, "\n\n"), nil
}
