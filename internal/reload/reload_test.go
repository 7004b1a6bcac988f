package reload

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/pincerbot/pincer/internal/config"
)

// records hands each log record to a channel.
type records chan slog.Record

func (r records) Enabled(context.Context, slog.Level) bool        { return true }
func (r records) Handle(_ context.Context, rec slog.Record) error { r <- rec; return nil }
func (r records) WithAttrs([]slog.Attr) slog.Handler              { return r }
func (r records) WithGroup(string) slog.Handler                   { return r }

type rig struct {
	path    string
	applied chan config.Config
	logs    records
	hup     chan os.Signal
}

func start(t *testing.T) *rig {
	t.Helper()
	dir := t.TempDir()
	r := &rig{path: filepath.Join(dir, "pincer.json5"), applied: make(chan config.Config, 16), logs: make(records, 64), hup: make(chan os.Signal, 1)}
	r.write(t, "v1")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- Watch(ctx, Options{
			Path: r.path,
			Load: func(p string) (config.Config, error) {
				return config.LoadFile(p, func(string) (string, bool) { return "", false })
			},
			Apply:   func(c config.Config) { r.applied <- c },
			Signals: r.hup, Settle: 50 * time.Millisecond, Logger: slog.New(r.logs),
		})
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	// The watch is in place once a signal is answered.
	r.hup <- syscall.SIGHUP
	if got := r.next(t).Agents.Defaults.SystemPrompt; got != "v1" {
		t.Fatalf("first reload read %q", got)
	}
	return r
}

// write writes a config whose system prompt is prompt.
func (r *rig) write(t *testing.T, prompt string) {
	t.Helper()
	if err := os.WriteFile(r.path, []byte(`{ agents: { defaults: { systemPrompt: '`+prompt+`' } } }`), 0o600); err != nil {
		t.Fatal(err)
	}
}

// next waits for the next config applied.
func (r *rig) next(t *testing.T) config.Config {
	t.Helper()
	select {
	case c := <-r.applied:
		return c
	case <-time.After(10 * time.Second):
		t.Fatal("no config applied within 10s")
		return config.Config{}
	}
}

// refused waits for the log of a refused reload and returns it.
func (r *rig) refused(t *testing.T) string {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		select {
		case rec := <-r.logs:
			if rec.Level == slog.LevelError {
				var b strings.Builder
				b.WriteString(rec.Message)
				rec.Attrs(func(a slog.Attr) bool { b.WriteString(" " + a.String()); return true })
				return b.String()
			}
		case <-deadline:
			t.Fatal("no refusal logged within 10s")
			return ""
		}
	}
}

// TestRewriteIsApplied: a file written anew is read and applied once it
// settles: the last of several quick writes is what is applied.
func TestRewriteIsApplied(t *testing.T) {
	r := start(t)
	for _, p := range []string{"v2", "v3", "v4"} {
		r.write(t, p)
	}
	got := r.next(t).Agents.Defaults.SystemPrompt
	for got != "v4" {
		// A slow machine may have let a write settle before the next.
		if got != "v2" && got != "v3" {
			t.Fatalf("applied %q, want v4", got)
		}
		got = r.next(t).Agents.Defaults.SystemPrompt
	}
}

// TestRenameOverIsFollowed: a file replaced by renaming another over it,
// as editors save, is followed, and so are the changes after it.
func TestRenameOverIsFollowed(t *testing.T) {
	r := start(t)
	tmp := r.path + ".tmp"
	if err := os.WriteFile(tmp, []byte(`{ agents: { defaults: { systemPrompt: 'renamed' } } }`), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, r.path); err != nil {
		t.Fatal(err)
	}
	if got := r.next(t).Agents.Defaults.SystemPrompt; got != "renamed" {
		t.Fatalf("applied %q after a rename", got)
	}
	r.write(t, "after")
	if got := r.next(t).Agents.Defaults.SystemPrompt; got != "after" {
		t.Fatalf("applied %q after writing the renamed file", got)
	}
}

// TestBrokenRewriteKeepsTheRunningConfig: a version that fails the checks
// is not applied, its problem (with the key) is logged, and the next good
// version is applied.
func TestBrokenRewriteKeepsTheRunningConfig(t *testing.T) {
	r := start(t)
	if err := os.WriteFile(r.path, []byte(`{ agents: { defaults: { systemPromt: 'typo' } } }`), 0o600); err != nil {
		t.Fatal(err)
	}
	logged := r.refused(t)
	if !strings.Contains(logged, "running one is kept") || !strings.Contains(logged, "agents.defaults.systemPromt") {
		t.Errorf("refusal logged as %q; want the key named and the running config kept", logged)
	}
	select {
	case c := <-r.applied:
		t.Fatalf("a broken version was applied: %+v", c.Agents.Defaults)
	default:
	}
	r.write(t, "fixed")
	if got := r.next(t).Agents.Defaults.SystemPrompt; got != "fixed" {
		t.Fatalf("applied %q after the fix", got)
	}
}

// TestSignalReloads: SIGHUP reloads the file at once, changed or not.
func TestSignalReloads(t *testing.T) {
	r := start(t)
	r.hup <- syscall.SIGHUP
	if got := r.next(t).Agents.Defaults.SystemPrompt; got != "v1" {
		t.Fatalf("applied %q on SIGHUP", got)
	}
}

// TestOtherFilesDoNotWakeTheWatch: writes to other files in the config's
// directory (a database kept beside it) reach the watch not at all, even
// after the file was replaced by a rename.
func TestOtherFilesDoNotWakeTheWatch(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "pincer.json5")
	write := func(p, prompt string) {
		t.Helper()
		if err := os.WriteFile(p, []byte(`{ agents: { defaults: { systemPrompt: '`+prompt+`' } } }`), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(path, "v1")
	applied := make(chan string, 8)
	var mu sync.Mutex
	var others []string
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- Watch(ctx, Options{
			Path: path,
			Load: func(p string) (config.Config, error) {
				return config.LoadFile(p, func(string) (string, bool) { return "", false })
			},
			Apply:  func(c config.Config) { applied <- c.Agents.Defaults.SystemPrompt },
			Settle: 20 * time.Millisecond,
			seen: func(ev fsnotify.Event) {
				if filepath.Base(ev.Name) != "pincer.json5" && !strings.HasSuffix(ev.Name, ".tmp") {
					mu.Lock()
					others = append(others, ev.String())
					mu.Unlock()
				}
			},
		})
	}()
	next := func(want string) {
		t.Helper()
		for {
			select {
			case got := <-applied:
				if got == want {
					return
				}
			case <-time.After(10 * time.Second):
				t.Fatalf("%q not applied within 10s", want)
			}
		}
	}
	// The watch is in place once a write of the file is applied.
	for i := 0; ; i++ {
		write(path, "ready")
		select {
		case got := <-applied:
			if got != "ready" {
				t.Fatalf("applied %q", got)
			}
		case <-time.After(200 * time.Millisecond):
			if i < 50 {
				continue
			}
			t.Fatal("the watch never saw the file")
		}
		break
	}
	db := filepath.Join(dir, "pincer.db-wal")
	for i := range 50 {
		write(db, fmt.Sprint(i))
	}
	// Replaced by a rename, as editors save; then the database again.
	write(path+".tmp", "renamed")
	if err := os.Rename(path+".tmp", path); err != nil {
		t.Fatal(err)
	}
	next("renamed")
	for i := range 50 {
		write(db, fmt.Sprint(i))
	}
	write(path, "last")
	next("last")
	mu.Lock()
	defer mu.Unlock()
	if len(others) > 0 {
		t.Errorf("the watch read %d events of other files, e.g. %s", len(others), others[0])
	}
	cancel()
	if err := <-done; err != nil {
		t.Error(err)
	}
}
