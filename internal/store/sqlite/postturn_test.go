package sqlite

import (
	"bytes"
	"context"
	"database/sql"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/pincerbot/pincer/internal/store"
)

// TestPostTurnIsReadBackInOrder: a posted turn is in the transcript read
// right after it, between the turns appended before and after it, and
// survives a reopening; a turn posted to no session fails in the store's
// log, not the caller's call.
func TestPostTurnIsReadBackInOrder(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "post.db")
	var logged bytes.Buffer
	db, err := Open(ctx, path, Options{Logger: slog.New(slog.NewTextHandler(&logged, nil))})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := db.OpenSession(ctx, "k", "main"); err != nil {
		t.Fatal(err)
	}
	if _, err := db.AppendTurn(ctx, "k", store.Turn{Role: store.RoleUser, Text: "one"}); err != nil {
		t.Fatal(err)
	}
	if err := db.PostTurn(ctx, "k", store.Turn{Role: store.RoleUser, Text: "two"}); err != nil {
		t.Fatal(err)
	}
	tr, err := db.Transcript(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	if len(tr) != 2 || tr[1].Text != "two" || tr[1].Seq <= tr[0].Seq {
		t.Fatalf("transcript after a post: %+v", tr)
	}
	if _, err := db.AppendTurn(ctx, "k", store.Turn{Role: store.RoleAssistant, Text: "three"}); err != nil {
		t.Fatal(err)
	}
	if err := db.PostTurn(ctx, "nobody", store.Turn{Role: store.RoleUser, Text: "lost"}); err != nil {
		t.Fatalf("a post fails later, not now: %v", err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(logged.String(), "store write failed") || !strings.Contains(logged.String(), "nobody") {
		t.Errorf("the failed post was not logged:\n%s", logged.String())
	}
	db, err = Open(ctx, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	tr, err = db.Transcript(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	var texts []string
	for _, turn := range tr {
		texts = append(texts, turn.Text)
	}
	if len(texts) != 3 || texts[0] != "one" || texts[1] != "two" || texts[2] != "three" {
		t.Errorf("after reopening: %q", texts)
	}
}

// TestATurnIsNumberedWithoutATemporaryTable: the statement that numbers
// and inserts a turn reads the turns table it inserts into without
// SQLite first copying what it reads into a temporary table, which an
// INSERT … SELECT from the same table does (a third of its time).
func TestATurnIsNumberedWithoutATemporaryTable(t *testing.T) {
	db := openFresh(t)
	var ops []string
	err := db.each(context.Background(), "EXPLAIN "+qNextTurn, []any{"user", "x", "", "", false, 1, "", 1, "k"}, func(rows *sql.Rows) error {
		cols, err := rows.Columns()
		if err != nil {
			return err
		}
		vals := make([]any, len(cols))
		var op string
		vals[1] = &op
		for i := range vals {
			if i != 1 {
				vals[i] = new(any)
			}
		}
		if err := rows.Scan(vals...); err != nil {
			return err
		}
		ops = append(ops, op)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(ops) == 0 {
		t.Fatal("EXPLAIN returned no program")
	}
	if slices.Contains(ops, "OpenEphemeral") {
		t.Errorf("the turn's insert builds a temporary table: %v", ops)
	}
}
