// Package reload watches the config file pincer serves from, and SIGHUP,
// and hands each version of the file that passes pincer's checks to the
// running gateway. A version that fails them is refused: its problems go
// to the log (and from there to the dashboard), and the running config
// stays.
package reload

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/pincerbot/pincer/internal/config"
)

// Options configure Watch.
type Options struct {
	// Path is the config file.
	Path string
	// Load reads and checks the file as pincer serve does at start.
	Load func(path string) (config.Config, error)
	// Apply hands a config that passed to the running gateway.
	Apply func(config.Config)
	// Signals delivers SIGHUP (see signal.Notify): each reloads the file
	// at once. Nil: only changes of the file do.
	Signals <-chan os.Signal
	// Settle is how long the file must stay unchanged before it is read,
	// as editors and deploy tools write a file in several steps (truncate
	// and write, or write another and rename it over). 0: 300 ms.
	Settle time.Duration
	Logger *slog.Logger

	// seen, when set, learns of every file event Watch reads (tests).
	seen func(fsnotify.Event)
}

// DefaultSettle is Options.Settle's default.
const DefaultSettle = 300 * time.Millisecond

// Watch reloads the file on each change and each signal until ctx ends.
// It watches the file itself, not its directory, which may hold a busy
// database whose every write would wake it; when the file is removed or
// renamed (as editors save: a new file renamed over the old), it watches
// the directory only until the file is back. It fails only when neither
// can be watched.
func Watch(ctx context.Context, o Options) error {
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	settle := o.Settle
	if settle <= 0 {
		settle = DefaultSettle
	}
	path, err := filepath.Abs(o.Path)
	if err != nil {
		return fmt.Errorf("reload: %w", err)
	}
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return fmt.Errorf("reload: watch %s: %w", path, err)
	}
	defer w.Close()
	dir := filepath.Dir(path)
	// follow watches the file when it is there, else its directory until
	// it is; onDir says which.
	onDir := false
	follow := func() error {
		if err := w.Add(path); err == nil {
			if onDir {
				_ = w.Remove(dir)
				onDir = false
			}
			return nil
		}
		if onDir {
			return nil
		}
		if err := w.Add(dir); err != nil {
			return fmt.Errorf("reload: watch %s: %w", dir, err)
		}
		onDir = true
		// The file may have come back before the directory was watched.
		if _, err := os.Stat(path); err == nil {
			return w.Add(path)
		}
		return nil
	}
	if err := follow(); err != nil {
		return err
	}
	timer := time.NewTimer(settle)
	timer.Stop()
	defer timer.Stop()
	reload := func(why string) {
		cfg, err := o.Load(path)
		if err != nil {
			problems := config.Problems(err)
			lines := make([]string, len(problems))
			for i, p := range problems {
				lines[i] = p.Error()
			}
			log.Error("config not reloaded: the running one is kept", "file", path, "trigger", why, "problems", strings.Join(lines, "; "))
			return
		}
		log.Info("config reloaded", "file", path, "trigger", why)
		o.Apply(cfg)
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-w.Events:
			if !ok {
				return nil
			}
			if o.seen != nil {
				o.seen(ev)
			}
			if filepath.Clean(ev.Name) != path || ev.Op&(fsnotify.Write|fsnotify.Create|fsnotify.Rename|fsnotify.Remove) == 0 {
				continue
			}
			timer.Reset(settle)
			if ev.Op&(fsnotify.Create|fsnotify.Rename|fsnotify.Remove) != 0 {
				// Another file has the name now, or none: the watch of the
				// old one (renamed away, or gone) is no use.
				_ = w.Remove(path)
				if err := follow(); err != nil {
					log.Warn("watching the config file", "file", path, "err", err)
				}
			}
		case err, ok := <-w.Errors:
			if !ok {
				return nil
			}
			log.Warn("watching the config file", "file", path, "err", err)
		case <-o.Signals:
			timer.Stop()
			reload("SIGHUP")
		case <-timer.C:
			reload("file changed")
		}
	}
}
