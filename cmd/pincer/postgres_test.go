package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/pincerbot/pincer/internal/channel/webchat"
	"github.com/pincerbot/pincer/internal/channel/webchat/webchattest"
	"github.com/pincerbot/pincer/internal/store/postgres/pgtest"
)

// TestServeOnPostgres: pincer serve with store.driver 'postgres' and the
// DSN from the environment answers, keeps what it did in the database
// (and no SQLite file), and pincer doctor checks the connection.
func TestServeOnPostgres(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	// A schema of its own, named by the DSN's search_path.
	dsn := pgtest.SchemaDSN(t)
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	t.Setenv("PINCER_PG_DSN", dsn)

	dir := t.TempDir()
	cfg := freePortConfig(`store: { driver: 'postgres', dsn: '${PINCER_PG_DSN}' }`)
	p, _ := startServe(t, dir, cfg)
	defer p.cmd.Process.Kill()
	res, _, err := webchattest.New(p.url).Post("hello from postgres", "")
	if err != nil {
		t.Fatal(err)
	}
	events, err := webchattest.Events(res)
	if err != nil {
		t.Fatal(err)
	}
	if got := webchattest.Text(events, webchat.EventReply); !strings.Contains(got, "hello from postgres") {
		t.Errorf("reply %q", got)
	}
	if err := p.stop(); err != nil {
		t.Errorf("exit after SIGTERM: %v\n%s", err, p.stderr)
	}
	if strings.Contains(p.stderr.String(), "postgres://") {
		t.Errorf("the DSN is in the log:\n%s", p.stderr)
	}
	var turns int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM turns WHERE text LIKE '%hello from postgres%'`).Scan(&turns); err != nil || turns == 0 {
		t.Errorf("turns in the database: %d, %v", turns, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "data", "pincer.db")); err == nil {
		t.Error("a SQLite database was made as well")
	}

	doctor := exec.Command(binary(t), "doctor", "--config", filepath.Join(dir, "test.json5"))
	doctor.Dir = dir
	doctor.Env = append(os.Environ(), "PINCER_CONFIG=")
	out, _ := doctor.CombinedOutput()
	noRace(t, "pincer doctor", string(out))
	if !strings.Contains(string(out), "PostgreSQL") || strings.Contains(string(out), "data directory") {
		t.Errorf("pincer doctor on postgres:\n%s", out)
	}
}
