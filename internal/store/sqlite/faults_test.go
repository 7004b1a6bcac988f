package sqlite

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pincerbot/pincer/internal/msg"
	"github.com/pincerbot/pincer/internal/store"
)

// TestOpenRefusesAReadOnlyDatabase: a database that opens but cannot be
// written is refused at start with one clear line.
func TestOpenRefusesAReadOnlyDatabase(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("file permissions do not bind root; TestFullDiskIsReported covers the probe")
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "p.db")
	d, err := Open(context.Background(), path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	d.Close()
	for _, p := range []string{path, path + "-wal", path + "-shm"} {
		_ = os.Chmod(p, 0o400)
	}
	if err := os.Chmod(dir, 0o500); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.Chmod(dir, 0o700) })
	_, err = Open(context.Background(), path, Options{})
	if err == nil || !strings.Contains(err.Error(), path) {
		t.Fatalf("a read-only database opened: %v", err)
	}
}

// TestFullDiskIsReported: once writes fail (here: the database may not
// grow), the caller that waits hears of it, a write nobody waits for (the
// inbound log) is logged, Probe and Health say so; when writes succeed
// again, the fault clears.
func TestFullDiskIsReported(t *testing.T) {
	ctx := context.Background()
	var logged bytes.Buffer
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
