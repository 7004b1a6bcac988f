package gateway

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pincerbot/pincer/internal/config"
	"github.com/pincerbot/pincer/internal/store/postgres"
	"github.com/pincerbot/pincer/internal/store/postgres/pgtest"
)

// TestOpenStorePostgres: with the postgres driver the store is the
// server's, and no data directory is locked (or created) for it.
func TestOpenStorePostgres(t *testing.T) {
	// A schema of its own, named by the DSN's search_path.
	dsn := pgtest.SchemaDSN(t)
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "data")
	st, release, err := openStore(ctx, config.Store{Driver: "postgres", DSN: config.Secret(dsn), Path: filepath.Join(dir, "pincer.db")}, "test", nil)
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
