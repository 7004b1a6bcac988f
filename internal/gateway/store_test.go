package gateway

import (
	"context"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/pincerbot/pincer/internal/config"
	"github.com/pincerbot/pincer/internal/store/postgres"
)

// TestOpenStorePostgres: with the postgres driver the store is the
// server's, and no data directory is locked (or created) for it.
func TestOpenStorePostgres(t *testing.T) {
	dsn := os.Getenv("PINCER_TEST_PG_DSN")
	if dsn == "" {
		t.Skip("PINCER_TEST_PG_DSN is not set: the PostgreSQL store's tests need a server, e.g. postgres://pincer@127.0.0.1:5432/pincer_test?sslmode=disable")
	}
	// A schema of its own, named by the DSN's search_path.
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `CREATE SCHEMA IF NOT EXISTS gateway_open_store`); err != nil {
		t.Fatal(err)
	}
	defer conn.Exec(ctx, `DROP SCHEMA gateway_open_store CASCADE`)
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("search_path", "gateway_open_store")
	u.RawQuery = q.Encode()
	dir := filepath.Join(t.TempDir(), "data")
	st, release, err := openStore(ctx, config.Store{Driver: "postgres", DSN: config.Secret(u.String()), Path: filepath.Join(dir, "pincer.db")}, "test", nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := st.(*postgres.DB); !ok {
		t.Errorf("store %T, want *postgres.DB", st)
	}
	if err := st.Close(); err != nil {
		t.Error(err)
	}
	if err := release(); err != nil {
		t.Error(err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("the sqlite data directory was made or locked: %v", err)
	}
}

// TestOpenStorePostgresBadDSN: a DSN that does not parse is reported
// under its key, without the DSN itself.
func TestOpenStorePostgresBadDSN(t *testing.T) {
	_, _, err := openStore(context.Background(), config.Store{Driver: "postgres", DSN: "postgres://u:secretpw@[::1"}, "test", nil)
	if err == nil {
		t.Fatal("a bad dsn opened")
	}
	if got := err.Error(); !strings.Contains(got, "store.dsn") || strings.Contains(got, "secretpw") {
		t.Errorf("error %q: want store.dsn named and the password left out", got)
	}
}
