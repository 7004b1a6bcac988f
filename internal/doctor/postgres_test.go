package doctor

import (
	"strings"
	"testing"

	"github.com/pincerbot/pincer/internal/config"
	"github.com/pincerbot/pincer/internal/store/postgres/pgtest"
)

func TestCheckPostgres(t *testing.T) {
	r := checkPostgres(t.Context(), config.Store{Driver: "postgres", DSN: "postgres://pincer:pw@127.0.0.1:1/none?connect_timeout=2"})
	if r.Status != Fail || strings.Contains(r.Detail, "pw") || r.Hint == "" {
		t.Errorf("no server: %s %q (hint %q); want a failure that hides the password", r.Status, r.Detail, r.Hint)
	}
	dsn := pgtest.DSN(t)
	r = checkPostgres(t.Context(), config.Store{Driver: "postgres", DSN: config.Secret(dsn)})
	if r.Status != OK || !strings.Contains(r.Detail, "PostgreSQL") {
		t.Errorf("a server: %s %q", r.Status, r.Detail)
	}
}
