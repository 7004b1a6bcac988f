// Package pgtest gives tests the PostgreSQL server named by
// PINCER_TEST_PG_DSN, and a schema of their own on it.
package pgtest

import (
	"context"
	"crypto/rand"
	"fmt"
	"net/url"
	"os"
	"testing"

	"github.com/jackc/pgx/v5"
)

// DSN returns the server the tests use, or skips tb when none is given.
func DSN(tb testing.TB) string {
	tb.Helper()
	dsn := os.Getenv("PINCER_TEST_PG_DSN")
	if dsn == "" {
		tb.Skip("PINCER_TEST_PG_DSN is not set: the PostgreSQL store's tests need a server, e.g. postgres://pincer@127.0.0.1:5432/pincer_test?sslmode=disable")
	}
	return dsn
}

// Schema names a schema of its own for tb on the server at dsn, dropped
// with what it holds when tb ends; the store creates it.
func Schema(tb testing.TB, dsn string) string {
	tb.Helper()
	schema := fmt.Sprintf("t_%x", rand.Text()[:10])
	tb.Cleanup(func() {
		ctx := context.Background()
		conn, err := pgx.Connect(ctx, dsn)
		if err != nil {
			tb.Errorf("drop schema %s: %v", schema, err)
			return
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, `DROP SCHEMA IF EXISTS `+pgx.Identifier{schema}.Sanitize()+` CASCADE`); err != nil {
			tb.Errorf("drop schema %s: %v", schema, err)
		}
	})
	return schema
}

// SchemaDSN is the DSN of the tests' server with a schema of tb's own,
// created now and dropped when tb ends, as its search_path: for a store
// configured by its DSN alone (store.dsn). It skips tb when no server is
// given.
func SchemaDSN(tb testing.TB) string {
	tb.Helper()
	dsn := DSN(tb)
	schema := Schema(tb, dsn)
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		tb.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `CREATE SCHEMA `+pgx.Identifier{schema}.Sanitize()); err != nil {
		tb.Fatal(err)
	}
	u, err := url.Parse(dsn)
	if err != nil {
		tb.Fatal(err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}
