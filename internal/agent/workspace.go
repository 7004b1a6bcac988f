package agent

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
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

// Prompt is the system prompt SystemPrompt builds, kept between turns: it
// is built again only when a bootstrap file appeared, went or changed (its
// size or modification time), and the files are looked at no more than
// once a second (recheck), so a turn costs nothing rather than reading
// them. An edit of SYSTEM.md applies within a second.
type Prompt struct {
	base, workspace string

	mu      sync.Mutex
	built   bool
	checked time.Time
	stamps  []fileStamp
	text    string
	err     error
}

// recheck is how long a built prompt is used before its files are looked
// at again.
const recheck = time.Second

// fileStamp is what a bootstrap file looked like when the prompt was built.
type fileStamp struct {
	exists bool
	size   int64
	mod    time.Time
}

// NewPrompt returns the prompt of base and the bootstrap files in
// workspace.
func NewPrompt(base, workspace string) *Prompt {
	return &Prompt{base: base, workspace: workspace, stamps: make([]fileStamp, len(BootstrapFiles))}
}

// SetBase replaces the configured prompt the bootstrap files are added
// to (a reloaded config's); the next Text builds anew.
func (p *Prompt) SetBase(base string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if base != p.base {
		p.base, p.built = base, false
	}
}

// Text returns the prompt as SystemPrompt would build it now, with its
// error (the prompt is then incomplete, and built again next time).
func (p *Prompt) Text() (string, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.built && p.err == nil && time.Since(p.checked) < recheck {
		return p.text, nil
	}
	p.checked = time.Now()
	same := p.built && p.err == nil
	for i, name := range BootstrapFiles {
		var st fileStamp
		if fi, err := os.Stat(filepath.Join(p.workspace, name)); err == nil {
			st = fileStamp{exists: true, size: fi.Size(), mod: fi.ModTime()}
		} else if !errors.Is(err, fs.ErrNotExist) {
			same = false // let SystemPrompt report it
		}
		if st != p.stamps[i] {
			same = false
		}
		p.stamps[i] = st
	}
	if !same {
		p.text, p.err = SystemPrompt(p.base, p.workspace)
		p.built = true
	}
	return p.text, p.err
}
