package postgres

import (
	"context"
	"crypto/rand"
	"fmt"
	"os"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/pincerbot/pincer/internal/store"
	"github.com/pincerbot/pincer/internal/store/storetest"
)

// testDSN returns the server the tests use, or skips the test.
func testDSN(t *testing.T) string {
	t.Helper()
	dsn := os.Getenv("PINCER_TEST_PG_DSN")
	if dsn == "" {
		t.Skip("PINCER_TEST_PG_DSN is not set: the PostgreSQL store's tests need a server, e.g. postgres://pincer@127.0.0.1:5432/pincer_test?sslmode=disable")
	}
	return dsn
}

// freshSchema names a schema of its own for one test, dropped after it.
func freshSchema(t *testing.T, dsn string) string {
	t.Helper()
	schema := fmt.Sprintf("t_%x", rand.Text()[:10])
	t.Cleanup(func() {
		ctx := context.Background()
		conn, err := pgx.Connect(ctx, dsn)
		if err != nil {
			t.Errorf("drop schema %s: %v", schema, err)
			return
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, `DROP SCHEMA IF EXISTS `+pgx.Identifier{schema}.Sanitize()+` CASCADE`); err != nil {
			t.Errorf("drop schema %s: %v", schema, err)
		}
	})
	return schema
}

// openTest opens a store in a fresh schema.
func openTest(t *testing.T) *DB {
	t.Helper()
	dsn := testDSN(t)
	db, err := Open(context.Background(), dsn, Options{Schema: freshSchema(t, dsn)})
	if err != nil {
		t.Fatal(err)
	}
	return db
}

func TestConformance(t *testing.T) {
	testDSN(t)
	storetest.Run(t, func(t *testing.T) store.Store { return openTest(t) })
}
