package sqlite

import (
	"context"
	"database/sql"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/pincerbot/pincer/internal/store"
)

// openFresh opens a store in a new directory, closed when the test ends.
func openFresh(t *testing.T) *DB {
	t.Helper()
	db, err := Open(context.Background(), filepath.Join(t.TempDir(), "pincer.db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// reopen closes db and opens its file again, the new store closed when
// the test ends.
func reopen(t *testing.T, db *DB) *DB {
	t.Helper()
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db, err := Open(context.Background(), db.path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// onWriter runs statements on the writer's connection (where TEMP
// tables and triggers live).
func onWriter(t *testing.T, db *DB, queries ...string) {
	t.Helper()
	err := db.w.do(func(tx *sql.Conn) error {
		for _, q := range queries {
			if _, err := tx.ExecContext(context.Background(), q); err != nil {
				return err
			}
		}
		return nil
	}, false, false)
	if err != nil {
		t.Fatal(err)
	}
}

// holdWriter keeps the writer busy until release is called, as a batch
// being committed does.
func holdWriter(t *testing.T, db *DB) (release func()) {
	t.Helper()
	held, done := make(chan struct{}), make(chan struct{})
	if err := db.w.post(func(*sql.Conn) error {
		close(held)
		<-done
		return nil
	}, false); err != nil {
		t.Fatal(err)
	}
	<-held
	return func() { close(done) }
}

// countInserts makes the writer's connection note the id of every row
// inserted into buffered; inserted reads them.
func countInserts(t *testing.T, db *DB) (inserted func() []int64) {
	t.Helper()
	onWriter(t, db, `CREATE TEMP TABLE inserted (id INTEGER)`,
		`CREATE TEMP TRIGGER note_insert AFTER INSERT ON main.buffered BEGIN INSERT INTO inserted VALUES (new.id); END`)
	return func() []int64 {
		var ids []int64
		err := db.w.do(func(tx *sql.Conn) error {
			return db.eachIn(context.Background(), tx, `SELECT id FROM inserted ORDER BY id`, nil, func(rows *sql.Rows) error {
				var id int64
				ids = append(ids, id)
				return rows.Scan(&ids[len(ids)-1])
			})
		}, false, false)
		if err != nil {
			t.Fatal(err)
		}
		return ids
	}
}

func bufferedIDs(t *testing.T, db *DB, scope string) []int64 {
	t.Helper()
	entries, err := db.BufferedEntries(context.Background(), scope)
	if err != nil {
		t.Fatal(err)
	}
	var ids []int64
	for _, e := range entries {
		ids = append(ids, e.ID)
	}
	return ids
}

// commitBatch hands the writer a job that waits for its batch to commit,
// so that what was handed in before it is committed, and what runs last
// in a batch (beforeCommit) has run.
func commitBatch(t *testing.T, db *DB) {
	t.Helper()
	if err := db.w.do(func(*sql.Conn) error { return nil }, false, true); err != nil {
		t.Fatal(err)
	}
}

// indexesOf counts the indexes SQLite keeps of table (its key's own
// included, when it has one apart from the rows).
func indexesOf(t *testing.T, db *DB, table string) int {
	t.Helper()
	var n int
	if err := db.row(context.Background(), `SELECT count(*) FROM sqlite_schema WHERE type = 'index' AND tbl_name = ?`, []any{table}, &n); err != nil {
		t.Fatal(err)
	}
	return n
}

// queryPlan is SQLite's plan of q with args, its steps joined by "; ".
func queryPlan(t *testing.T, db *DB, q string, args ...any) string {
	t.Helper()
	var plan []string
	err := db.each(context.Background(), "EXPLAIN QUERY PLAN "+q, args, func(rows *sql.Rows) error {
		var id, parent, unused int
		var detail string
		err := rows.Scan(&id, &parent, &unused, &detail)
		plan = append(plan, detail)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return strings.Join(plan, "; ")
}

// A message that triggers a turn is logged with its window entry and
// taken out of the window by the turn's admission a moment later: in the
// same batch, the entry is never written (it was an insert and a delete,
// and two pages of the log, every turn). The entries the batch still
// holds as it commits are written with it, and are there after a reopen.
func TestABufferedEntryTakenOutInItsBatchIsNeverWritten(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		db := openFresh(t)
		inserted := countInserts(t, db)
		entry := func(i int) int64 {
			m := bufferedFor(i)
			_, id, err := db.LogInboundBuffered(ctx, m, store.ViewHistory, store.Buffered{Scope: "onebot/default", Kind: "realtime", Key: "k", Message: m})
			if err != nil {
				t.Fatal(err)
			}
			return id
		}
		// One batch: no time passes in the bubble.
		taken, trimmed, kept := entry(1), entry(2), entry(3)
		if ok, err := db.AdmitTurn(ctx, "in:1", time.Hour, []byte(`{"turn":1}`), store.Consumed{Entries: []int64{taken}}); !ok || err != nil {
			t.Fatalf("admit: %v %v", ok, err)
		}
		if err := db.Unbuffer(ctx, []int64{trimmed}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(20 * time.Millisecond) // the batch is committed at 10 ms
		synctest.Wait()
		if diff := cmp.Diff([]int64{kept}, inserted()); diff != "" {
			t.Errorf("entries written (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff([]int64{kept}, bufferedIDs(t, db, "onebot/default")); diff != "" {
			t.Errorf("entries buffered (-want +got):\n%s", diff)
		}

		// Written, an entry is deleted when it is taken.
		later := entry(4)
		if got := bufferedIDs(t, db, "onebot/default"); !slices.Equal(got, []int64{kept, later}) {
			t.Fatalf("a read sees the entries handed in before it: %v, want %v", got, []int64{kept, later})
		}
		if ok, err := db.AdmitTurn(ctx, "in:4", time.Hour, nil, store.Consumed{Entries: []int64{later}}); !ok || err != nil {
			t.Fatalf("admit: %v %v", ok, err)
		}
		db = reopen(t, db)
		if diff := cmp.Diff([]int64{kept}, bufferedIDs(t, db, "onebot/default")); diff != "" {
			t.Errorf("entries buffered after a reopen (-want +got):\n%s", diff)
		}
		logged, err := db.RecentInbound(ctx, "webchat", "default", bufferedFor(1).Peer, 10)
		if err != nil || len(logged) != 4 {
			t.Errorf("the log holds %d messages (%v), want all 4, taken or not", len(logged), err)
		}
	})
}

// An admission that fails keeps what it would have taken: the entry it
// did not take is still buffered, and written, and the next admission
// takes it. The first admission of a key is handed to the writer without
// waiting (see claims.go): its failure shows in the store's health, and
// the next admission of the key, whose hash is held now, waits for the
// table and hears of it.
func TestAFailedAdmissionKeepsItsHeldEntries(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		db := openFresh(t)
		onWriter(t, db, `CREATE TEMP TRIGGER refuse_journal BEFORE INSERT ON main.pending_turns BEGIN SELECT RAISE(ABORT, 'journal refused'); END`)
		m := bufferedFor(1)
		_, id, err := db.LogInboundBuffered(ctx, m, store.ViewHistory, store.Buffered{Scope: "s", Kind: "realtime", Key: "k", Message: m})
		if err != nil {
			t.Fatal(err)
		}
		consume := store.Consumed{Entries: []int64{id}}
		if ok, err := db.AdmitTurn(ctx, "in:1", time.Hour, []byte(`{"turn":1}`), consume); !ok || err != nil {
			t.Fatalf("a first admission is granted, its write handed in: %v %v", ok, err)
		}
		time.Sleep(20 * time.Millisecond)
		synctest.Wait()
		if err := db.Health(); err == nil || !strings.Contains(err.Error(), "journal refused") {
			t.Errorf("health after the admission failed: %v, want the failure", err)
		}
		if got := bufferedIDs(t, db, "s"); !slices.Equal(got, []int64{id}) {
			t.Fatalf("buffered after the failed admission: %v, want %v", got, []int64{id})
		}
		if ok, err := db.AdmitTurn(ctx, "in:1", time.Hour, []byte(`{"turn":1}`), consume); ok || err == nil {
			t.Fatalf("admit again with the journal refused: %v %v, want an error", ok, err)
		}
		if got := bufferedIDs(t, db, "s"); !slices.Equal(got, []int64{id}) {
			t.Fatalf("buffered after the second failed admission: %v, want %v", got, []int64{id})
		}
		onWriter(t, db, `DROP TRIGGER temp.refuse_journal`)
		if ok, err := db.AdmitTurn(ctx, "in:1", time.Hour, []byte(`{"turn":1}`), consume); !ok || err != nil {
			t.Fatalf("admit once the journal takes it: %v %v", ok, err)
		}
		if got := bufferedIDs(t, db, "s"); len(got) != 0 {
			t.Errorf("buffered after the admission: %v, want none", got)
		}
	})
}
