package sqlite

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pincerbot/pincer/internal/msg"
	"github.com/pincerbot/pincer/internal/store"
)

// TestOpenRefusesAReadOnlyDatabase: a database that opens but cannot be
// written is refused at start with one clear line naming the file and
// why, whoever runs it: a file or directory whose mode has no write bit
// is read-only to the store even for root, whom the modes do not bind.
func TestOpenRefusesAReadOnlyDatabase(t *testing.T) {
	for _, tt := range []struct {
		name   string
		chmod  func(dir, path string) error
		reason string
	}{
		{"file", func(_, path string) error {
			for _, p := range []string{path + "-wal", path + "-shm"} {
				if err := os.Chmod(p, 0o400); err != nil && !errors.Is(err, fs.ErrNotExist) {
					return err
				}
			}
			return os.Chmod(path, 0o400)
		}, "the file has no write permission (mode 0400)"},
		{"directory", func(dir, _ string) error { return os.Chmod(dir, 0o500) }, " has no write permission (mode 0500)"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "p.db")
			d, err := Open(context.Background(), path, Options{})
			if err != nil {
				t.Fatal(err)
			}
			d.Close()
			if err := tt.chmod(dir, path); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = os.Chmod(dir, 0o700) })
			if err := CheckWritable(path); err == nil {
				t.Errorf("CheckWritable: nil")
			}
			_, err = Open(context.Background(), path, Options{})
			var ro *ReadOnlyError
			if !errors.As(err, &ro) || ro.Path != path {
				t.Fatalf("a read-only database opened, or with another error: %v", err)
			}
			for _, want := range []string{path + " is read-only", tt.reason, ReadOnlyHint} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("the error %q lacks %q", err, want)
				}
			}
			if entries, _ := os.ReadDir(dir); len(entries) != 1 {
				t.Errorf("the refused Open left files: %v", entries)
			}
		})
	}
}

// TestSQLiteReadOnlyIsNamed: when SQLite itself finds it may not write
// (a user without permission on the file or its directory, a read-only
// file system), the error is the same *ReadOnlyError.
func TestSQLiteReadOnlyIsNamed(t *testing.T) {
	path := filepath.Join(t.TempDir(), "p.db")
	d, err := Open(context.Background(), path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	d.Close()
	// A connection SQLite opens read-only gets the error a user without
	// write permission gets; root included.
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	_, werr := db.Exec(`INSERT INTO meta (key, value) VALUES ('x', 'y')`)
	if werr == nil {
		t.Fatal("a read-only connection wrote")
	}
	ro := readOnly(path, fmt.Errorf("migrate: %w", werr))
	if ro == nil || !errors.Is(ro, werr) || !strings.Contains(ro.Error(), path+" is read-only: SQLite may not write it or its directory (attempt to write a readonly database") {
		t.Errorf("readOnly(%v) = %v", werr, ro)
	}
	if readOnly(path, errors.New("database disk image is malformed")) != nil {
		t.Error("another error was called read-only")
	}
}

// TestFullDiskIsReported: once writes fail (here: the database may not
// grow), the caller that waits hears of it, a write nobody waits for (the
// inbound log) is logged, Probe and Health say so; when writes succeed
// again, the fault clears.
func TestFullDiskIsReported(t *testing.T) {
	ctx := context.Background()
	// The writer logs the failures of a batch as it ends, while the test
	// reads what was logged.
	var logged lockedBuffer
	d, err := Open(ctx, filepath.Join(t.TempDir(), "p.db"), Options{Logger: slog.New(slog.NewTextHandler(&logged, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if _, _, err := d.OpenSession(ctx, "k", "main"); err != nil {
		t.Fatal(err)
	}
	var pages int
	if err := d.row(ctx, "PRAGMA page_count", nil, &pages); err != nil {
		t.Fatal(err)
	}
	if _, err := d.exec(ctx, nil, "PRAGMA max_page_count = "+strconv.Itoa(pages)); err != nil {
		t.Fatal(err)
	}
	big := strings.Repeat("x", 1<<20)
	_, werr := d.AppendTurn(ctx, "k", store.Turn{Role: store.RoleUser, Text: big})
	if werr == nil {
		t.Fatal("a write beyond the limit succeeded")
	}
	t.Logf("write error: %T %v", werr, werr)
	if err := d.Health(); err == nil || !strings.Contains(err.Error(), "full") {
		t.Errorf("health after a failed write: %v", err)
	}
	m := msg.Message{ID: "1", Channel: "onebot", Account: "default", Peer: msg.Peer{Kind: msg.Group, ID: "1"}, Text: big, Time: time.Now()}
	if _, err := d.LogInbound(ctx, m, store.ViewHistory); err != nil {
		t.Fatalf("the log does not wait for its write: %v", err)
	}
	// A read runs after the writes handed in before it.
	if got, err := d.RecentInbound(ctx, m.Channel, m.Account, m.Peer, 1); err != nil || len(got) != 0 {
		t.Fatalf("read after the failed log entry: %v %v", got, err)
	}
	if !strings.Contains(logged.String(), "store write failed") || !strings.Contains(logged.String(), "full") {
		t.Errorf("the failed log entry was not logged: %q", logged.String())
	}
	if _, err := d.exec(ctx, nil, "PRAGMA max_page_count = 1000000"); err != nil {
		t.Fatal(err)
	}
	if err := d.Probe(ctx); err != nil || d.Health() != nil {
		t.Errorf("after space came back: probe %v, health %v", err, d.Health())
	}
}

// TestRemovedDirectoryIsReported: SQLite goes on writing to a database
// whose directory was removed; the probe notices.
func TestRemovedDirectoryIsReported(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "data")
	d, err := Open(ctx, filepath.Join(dir, "p.db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	if err := d.Probe(ctx); err == nil || !strings.Contains(err.Error(), "gone") {
		t.Errorf("probe of a removed database: %v", err)
	}
	if d.Health() == nil {
		t.Error("health must report the removed database")
	}
}

// lockedBuffer is a bytes.Buffer a log handler writes and a test reads
// at once.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
