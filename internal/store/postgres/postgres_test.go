package postgres

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pincerbot/pincer/internal/msg"
	"github.com/pincerbot/pincer/internal/store"
	"github.com/pincerbot/pincer/internal/store/postgres/pgtest"
	"github.com/pincerbot/pincer/internal/store/storetest"
)

// openTest opens a store in a fresh schema.
func openTest(t *testing.T) *DB {
	t.Helper()
	dsn := pgtest.DSN(t)
	db, err := Open(context.Background(), dsn, Options{Schema: pgtest.Schema(t, dsn)})
	if err != nil {
		t.Fatal(err)
	}
	return db
}

func TestConformance(t *testing.T) {
	pgtest.DSN(t)
	storetest.Run(t, func(t *testing.T) store.Store { return openTest(t) })
}

// TestReopenKeepsData: what a store wrote is there when it is opened
// again (the migrations find nothing to do), and the log's numbers go on
// growing.
func TestReopenKeepsData(t *testing.T) {
	dsn := pgtest.DSN(t)
	schema := pgtest.Schema(t, dsn)
	ctx := context.Background()
	db, err := Open(ctx, dsn, Options{Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := db.OpenSession(ctx, "k", "main"); err != nil {
		t.Fatal(err)
	}
	if _, err := db.AppendTurn(ctx, "k", store.Turn{Role: store.RoleUser, Text: "hi"}); err != nil {
		t.Fatal(err)
	}
	peer := msg.Peer{Kind: msg.Group, ID: "g"}
	first, err := db.LogInbound(ctx, msg.Message{ID: "1", Channel: "onebot", Account: "default", Peer: peer, Text: "one"}, store.ViewHistory)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db, err = Open(ctx, dsn, Options{Schema: schema})
	if err != nil {
		t.Fatalf("reopen: %v", err)
	}
	defer db.Close()
	tr, err := db.Transcript(ctx, "k")
	if err != nil || len(tr) != 1 || tr[0].Text != "hi" {
		t.Fatalf("after reopen: %+v %v", tr, err)
	}
	second, err := db.LogInbound(ctx, msg.Message{ID: "2", Channel: "onebot", Account: "default", Peer: peer, Text: "two"}, store.ViewHistory)
	if err != nil || second <= first {
		t.Fatalf("entry logged after reopening: seq %d after %d, %v", second, first, err)
	}
	got, err := db.RecentInbound(ctx, "onebot", "default", peer, 10)
	if err != nil || len(got) != 2 || got[0].Message.Text != "one" || got[1].Message.Text != "two" {
		t.Fatalf("log after reopen: %+v, %v", got, err)
	}
}

// TestMigrateTogether: instances opening a new database at once migrate
// it once, one after the other, and all open.
func TestMigrateTogether(t *testing.T) {
	dsn := pgtest.DSN(t)
	schema := pgtest.Schema(t, dsn)
	const n = 4
	errs := make(chan error, n)
	dbs := make(chan *DB, n)
	for range n {
		go func() {
			db, err := Open(context.Background(), dsn, Options{Schema: schema})
			errs <- err
			dbs <- db
		}()
	}
	for range n {
		if err := <-errs; err != nil {
			t.Errorf("open: %v", err)
		}
		if db := <-dbs; db != nil {
			defer db.Close()
		}
	}
}

// TestGroupCommit: a burst of posted writes shares commits and round
// trips, and a durable write returns with everything before it committed
// (another connection reads it).
func TestGroupCommit(t *testing.T) {
	db := openTest(t)
	defer db.Close()
	ctx := context.Background()
	peer := msg.Peer{Kind: msg.Group, ID: "g"}
	commits, trips := db.w.commits.Load(), db.w.trips.Load()
	const burst = 1000
	for i := range burst {
		if _, err := db.LogInbound(ctx, msg.Message{ID: msg.MessageID(fmt.Sprint(i)), Channel: "onebot", Account: "default", Peer: peer, Text: "hi"}, 0); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := db.AddOutbox(ctx, store.OutboxEntry{ID: "turn#1", Channel: "onebot", Out: msg.Outbound{Account: "default", Peer: peer, Text: "reply"}}); err != nil {
		t.Fatal(err)
	}
	if c, r := db.w.commits.Load()-commits, db.w.trips.Load()-trips; c > burst/10 || r > burst/10 {
		t.Errorf("%d messages took %d commits and %d round trips", burst, c, r)
	}
	var logged int
	if err := db.pool.QueryRow(ctx, `SELECT count(*) FROM messages`).Scan(&logged); err != nil || logged != burst {
		t.Errorf("another connection reads %d messages, %v; want %d committed with the outbox entry", logged, err, burst)
	}
}

// TestPostedFailure: a posted write the server refuses goes to the log
// and to Health, rolls back its batch, and fails the durable write that
// waited for that batch; the next batch works.
func TestPostedFailure(t *testing.T) {
	dsn := pgtest.DSN(t)
	var logged bytes.Buffer
	var mu sync.Mutex
	log := slog.New(slog.NewTextHandler(writerFunc(func(p []byte) (int, error) {
		mu.Lock()
		defer mu.Unlock()
		return logged.Write(p)
	}), nil))
	db, err := Open(context.Background(), dsn, Options{Schema: pgtest.Schema(t, dsn), Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	if err := db.w.post(stmt{sql: `INSERT INTO no_such_table VALUES (1)`}); err != nil {
		t.Fatal(err)
	}
	if _, err := db.AddOutbox(ctx, store.OutboxEntry{ID: "a#1", Channel: "onebot"}); err == nil {
		t.Error("a durable write in a batch that was rolled back reported success")
	}
	if db.Health() == nil {
		t.Error("Health does not report the failed batch")
	}
	mu.Lock()
	if !strings.Contains(logged.String(), "no_such_table") {
		t.Errorf("the failure is not in the log: %q", logged.String())
	}
	mu.Unlock()
	if added, err := db.AddOutbox(ctx, store.OutboxEntry{ID: "a#1", Channel: "onebot"}); !added || err != nil {
		t.Errorf("the next batch: %v, %v", added, err)
	}
	if err := db.Probe(ctx); err != nil || db.Health() != nil {
		t.Errorf("probe after recovery: %v, health %v", err, db.Health())
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// TestTwoInstances: two stores on one database see each other's
// committed writes: a dedup key claimed by one is taken for the other,
// and the ids one sent are known to the other.
func TestTwoInstances(t *testing.T) {
	dsn := pgtest.DSN(t)
	schema := pgtest.Schema(t, dsn)
	ctx := context.Background()
	a, err := Open(ctx, dsn, Options{Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := Open(ctx, dsn, Options{Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if ok, err := a.ClaimDedup(ctx, "in:1", time.Hour); !ok || err != nil {
		t.Fatalf("claim: %v %v", ok, err)
	}
	if err := a.RecordSent(ctx, "onebot", "default", "m1"); err != nil {
		t.Fatal(err)
	}
	if err := a.Probe(ctx); err != nil { // commits what a handed in
		t.Fatal(err)
	}
	if ok, err := b.ClaimDedup(ctx, "in:1", time.Hour); ok || err != nil {
		t.Errorf("the other instance claimed a key already claimed: %v %v", ok, err)
	}
	if sent, err := b.WasSent(ctx, "onebot", "default", "m1"); !sent || err != nil {
		t.Errorf("the other instance does not know the id sent: %v %v", sent, err)
	}
	peer := msg.Peer{Kind: msg.Group, ID: "g"}
	s1, err := a.LogInbound(ctx, msg.Message{ID: "1", Channel: "onebot", Account: "default", Peer: peer}, 0)
	if err != nil {
		t.Fatal(err)
	}
	s2, err := b.LogInbound(ctx, msg.Message{ID: "2", Channel: "onebot", Account: "default", Peer: peer}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if s1 == s2 {
		t.Errorf("both instances numbered an entry %d", s1)
	}
}

// BenchmarkLogInbound logs messages as the ingest path does, and waits
// for them to be committed at the end.
func BenchmarkLogInbound(b *testing.B) {
	dsn := pgtest.DSN(b)
	ctx := context.Background()
	db, err := Open(ctx, dsn, Options{Schema: pgtest.Schema(b, dsn)})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	peer := msg.Peer{Kind: msg.Group, ID: "g"}
	m := msg.Message{ID: "1", Channel: "onebot", Account: "default", Peer: peer, Text: "a message of a usual length, some twenty words or so, as people write them in a group chat"}
	for b.Loop() {
		if _, err := db.LogInbound(ctx, m, store.ViewHistory); err != nil {
			b.Fatal(err)
		}
	}
	if err := db.Probe(ctx); err != nil {
		b.Fatal(err)
	}
}

// TestConnectionLost: when the server drops the store's idle
// connections, the next batch takes a new one and no write fails.
func TestConnectionLost(t *testing.T) {
	dsn := pgtest.DSN(t)
	schema := pgtest.Schema(t, dsn)
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("application_name", schema)
	u.RawQuery = q.Encode()
	ctx := context.Background()
	db, err := Open(ctx, u.String(), Options{Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	admin, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	var killed int
	if err := admin.QueryRow(ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE application_name = $1`, schema).Scan(&killed); err != nil || killed == 0 {
		t.Fatalf("terminated %d connections, %v", killed, err)
	}
	if _, err := db.AddOutbox(ctx, store.OutboxEntry{ID: "t#1", Channel: "onebot"}); err != nil {
		t.Errorf("the first write after the connections were dropped: %v", err)
	}
	if err := db.Probe(ctx); err != nil || db.Health() != nil {
		t.Errorf("after reconnecting: probe %v, health %v", err, db.Health())
	}
}

// TestFreshNumbersComeAfterEveryOther: after FreshNumbers, an instance
// numbers its entries after those of another instance that took its
// block later, so a chat taken over keeps its log in arrival order.
func TestFreshNumbersComeAfterEveryOther(t *testing.T) {
	dsn := pgtest.DSN(t)
	schema := pgtest.Schema(t, dsn)
	ctx := context.Background()
	a, err := Open(ctx, dsn, Options{Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := Open(ctx, dsn, Options{Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	peer := msg.Peer{Kind: msg.Group, ID: "g"}
	log := func(db *DB, id string) int64 {
		t.Helper()
		s, err := db.LogInbound(ctx, msg.Message{ID: msg.MessageID(id), Channel: "onebot", Account: "default", Peer: peer, Text: "在吗？"}, store.ViewHistory)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	first := log(a, "1")  // a's block
	second := log(b, "2") // b's block, after a's
	if second < first {
		t.Fatalf("blocks out of order: %d then %d", first, second)
	}
	if again := log(a, "3"); again > second {
		t.Fatalf("without FreshNumbers a keeps numbering from its block, so this test proves nothing: %d > %d", again, second)
	}
	a.FreshNumbers()
	if third := log(a, "4"); third <= second {
		t.Errorf("after FreshNumbers a numbered %d, not after b's %d", third, second)
	}
	if err := a.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	got, err := b.RecentInbound(ctx, "onebot", "default", peer, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 4 || got[len(got)-1].Message.ID != "4" {
		ids := []msg.MessageID{}
		for _, lm := range got {
			ids = append(ids, lm.Message.ID)
		}
		t.Errorf("after a's Flush the other instance reads %v, want 4 entries ending with 4", ids)
	}
}
