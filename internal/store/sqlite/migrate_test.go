package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/pressly/goose/v3"

	"github.com/pincerbot/pincer/internal/msg"
	"github.com/pincerbot/pincer/internal/store"
)

// migratedTo is a database at path migrated up to version v, for a test
// to fill as that version would have, close and open with Open.
func migratedTo(t *testing.T, path string, v int64) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	sub, err := fs.Sub(migrations, "migrations")
	if err != nil {
		t.Fatal(err)
	}
	p, err := goose.NewProvider(goose.DialectSQLite3, db, sub)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.UpTo(context.Background(), v); err != nil {
		t.Fatal(err)
	}
	return db
}

// execIn runs statements on db, failing t with the statement that failed.
// upgraded closes old, a database migratedTo an earlier version, and opens
// its file as the store, which applies the migrations after it; the store
// is closed when the test ends.
func upgraded(t *testing.T, old *sql.DB, path string) *DB {
	t.Helper()
	if err := old.Close(); err != nil {
		t.Fatal(err)
	}
	d, err := Open(context.Background(), path, Options{})
	if err != nil {
		t.Fatalf("open after the migration: %v", err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

func execIn(t *testing.T, db *sql.DB) func(q string, args ...any) {
	return func(q string, args ...any) {
		t.Helper()
		if _, err := db.ExecContext(context.Background(), q, args...); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
}

// TestMigrationMovesTheLogAndBuffersIntoViews: a database of the version
// before the message log (an inbound table; history and digest entries
// buffered with their bodies) opens with its log readable in order, what
// the history and digest buffers held held by their views, the realtime
// entries still buffered, and the numbering going on after the last entry.
func TestMigrationMovesTheLogAndBuffersIntoViews(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "old.db")
	old := migratedTo(t, path, 5)
	g := msg.Peer{Kind: msg.Group, ID: "7"}
	at := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	m := func(id, text string, sec int) msg.Message {
		return msg.Message{ID: msg.MessageID(id), Channel: "onebot", Account: "default", Peer: g, Sender: msg.Sender{ID: "1", Name: "A"}, Time: at.Add(time.Duration(sec) * time.Second), Text: text}
	}
	exec := execIn(t, old)
	body := func(m msg.Message) string {
		b, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	for i, x := range []msg.Message{m("1", "one", 1), m("2", "two", 2), m("3", "three", 3)} {
		exec(`INSERT INTO inbound (channel, account, peer, message_id, sent_at, logged_at, body) VALUES ('onebot', 'default', ?, ?, ?, ?, ?)`,
			g.String(), string(x.ID), x.Time.UnixMilli(), at.UnixMilli()+int64(i), body(x))
	}
	exec(`INSERT INTO buffered (scope, kind, key, trigger, at, body) VALUES ('onebot/default', 'history', ?, '', 1, ?)`, g.String(), body(m("2", "two", 2)))
	exec(`INSERT INTO buffered (scope, kind, key, trigger, at, body) VALUES ('onebot/default', 'history', ?, '', 1, ?)`, g.String(), body(m("3", "three", 3)))
	exec(`INSERT INTO buffered (scope, kind, key, trigger, at, body) VALUES ('onebot/default', 'digest', ?, '', 1, ?)`, g.String(), body(m("3", "three", 3)))
	exec(`INSERT INTO buffered (scope, kind, key, trigger, at, body) VALUES ('onebot/default', 'realtime', ?, 'mention', 1, ?)`, g.String()+"::1", body(m("3", "three", 3)))
	d := upgraded(t, old, path)
	texts := func(lms []store.LoggedMessage, err error) []string {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, lm := range lms {
			out = append(out, lm.Message.Text)
		}
		return out
	}
	check := func(what string, got []string, want ...string) {
		t.Helper()
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", what, diff)
		}
	}
	check("the log, each message once", texts(d.RecentInbound(ctx, "onebot", "default", g, 10)), "one", "two", "three")
	check("history", texts(d.HeldInbound(ctx, "onebot", "default", store.ViewHistory, 20)), "two", "three")
	check("digest", texts(d.HeldInbound(ctx, "onebot", "default", store.ViewDigest, 50)), "three")
	rt, err := d.BufferedEntries(ctx, "onebot/default")
	if err != nil || len(rt) != 1 || rt[0].Kind != "realtime" || rt[0].Trigger != msg.TriggerMention || rt[0].Message.Text != "three" {
		t.Errorf("realtime entries after the migration: %+v %v", rt, err)
	}
	held, _ := d.HeldInbound(ctx, "onebot", "default", store.ViewHistory, 20)
	if len(held) == 0 {
		t.Fatal("no history after the migration")
	}
	seq, err := d.LogInbound(ctx, m("4", "four", 4), store.ViewHistory)
	if err != nil || seq <= held[len(held)-1].Seq {
		t.Errorf("a new entry numbered %d (%v) after %d", seq, err, held[len(held)-1].Seq)
	}
	check("history with the new entry", texts(d.HeldInbound(ctx, "onebot", "default", store.ViewHistory, 20)), "two", "three", "four")
}

// TestMigrationToFewerTrees: a database of version 9 opens with its
// dedup claims, sent ids, journal (in the order its turns were admitted,
// however the clock stood) and buffered entries as they were, buffered
// entries numbered on after the last, and its log's chains complete.
func TestMigrationToFewerTrees(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "v9.db")
	old := migratedTo(t, path, 9)
	exec := execIn(t, old)
	far := time.Now().Add(time.Hour).UnixMilli()
	exec(`INSERT INTO dedup (key, expires_at) VALUES ('seen', ?)`, far)
	exec(`INSERT INTO sent (channel, account, message_id, sent_at) VALUES ('onebot', 'default', '99', ?)`, time.Now().UnixMilli())
	exec(`INSERT INTO pending_turns (key, body, at) VALUES ('second', X'62', 5), ('first', X'61', 1), ('third', X'63', 5)`)
	exec(`INSERT INTO buffered (scope, kind, key, trigger, at, body) VALUES ('onebot/default', 'realtime', 'k', '', 1, '{}'), ('onebot/default', 'realtime', 'k', '', 1, '{}')`)
	exec(`DELETE FROM buffered WHERE id = 2`)
	g := msg.Peer{Kind: msg.Group, ID: "7"}
	for seq, text := range []string{"", "one", "two"} {
		if seq == 0 {
			continue
		}
		b, err := json.Marshal(msg.Message{ID: msg.MessageID(text), Channel: "onebot", Account: "default", Peer: g, Text: text})
		if err != nil {
			t.Fatal(err)
		}
		exec(`INSERT INTO messages (seq, chat, message_id, views, logged_at, body, prev) VALUES (?, ?, ?, 1, 1, ?, ?)`, seq, chatKey("onebot", "default", g), text, b, seq-1)
	}
	exec(`INSERT INTO chats (chat, last, views) VALUES (?, 2, 1)`, chatKey("onebot", "default", g))
	d := upgraded(t, old, path)
	if ok, err := d.ClaimDedup(ctx, "seen", time.Hour); err != nil || ok {
		t.Errorf("a claim made before the migration claimed again: %v, %v", ok, err)
	}
	if ok, _ := d.WasSent(ctx, "onebot", "default", "99"); !ok {
		t.Error("a sent id recorded before the migration is not known")
	}
	pending, err := d.PendingTurns(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, pt := range pending {
		keys = append(keys, pt.Key)
	}
	if diff := cmp.Diff([]string{"first", "second", "third"}, keys); diff != "" {
		t.Errorf("journal order (-want +got):\n%s", diff)
	}
	if _, err := d.AdmitTurn(ctx, "fourth", time.Hour, []byte("d"), store.Consumed{}); err != nil {
		t.Fatal(err)
	}
	if pending, err = d.PendingTurns(ctx); err != nil || len(pending) != 4 || pending[3].Key != "fourth" {
		t.Errorf("a turn admitted after the migration: %+v, %v", pending, err)
	}
	ids, err := d.Buffer(ctx, []store.Buffered{{Scope: "onebot/default", Kind: "realtime", Key: "k", Message: msg.Message{ID: "x"}}})
	if err != nil || len(ids) != 1 || ids[0] != 2 {
		t.Errorf("the next buffered entry is numbered %v (%v), want 2 after the last one there", ids, err)
	}
	lms, err := d.RecentInbound(ctx, "onebot", "default", g, 10)
	if err != nil || len(lms) != 2 || lms[0].Message.Text != "one" || lms[1].Message.Text != "two" {
		t.Errorf("the log after the migration: %+v, %v", lms, err)
	}
}

// TestOutboxIndexesNameThePendingState: the outbox's partial index and
// the queries that use it say 'pending' in SQL, which must be the state
// the store writes, the pending entries are read through it, and the
// prune reads a range of rowids, not the whole table.
func TestOutboxIndexesNameThePendingState(t *testing.T) {
	if store.OutboxPending != "pending" {
		t.Fatalf("store.OutboxPending is %q; the outbox's indexes and queries say 'pending'", store.OutboxPending)
	}
	ctx := context.Background()
	d, err := Open(ctx, filepath.Join(t.TempDir(), "plan.db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	for q, index := range map[string]string{
		qPendingOutbox: "outbox_pending",
		qPruneOutbox:   "USING INTEGER PRIMARY KEY (rowid<?)",
	} {
		plan := queryPlan(t, d, q, []any{"a", "b"}[:strings.Count(q, "?")]...)
		if !strings.Contains(plan, index) {
			t.Errorf("%s\nplan %q does not use %s", q, plan, index)
		}
	}
}

// TestMigrationToTurnsBySession: the transcripts a database of version
// 12 holds are read back after the migration, in order and per
// generation, a turn appended after it follows the last one, and the
// turns still go with their session.
func TestMigrationToTurnsBySession(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "v12.db")
	old := migratedTo(t, path, 12)
	exec := execIn(t, old)
	exec(`INSERT INTO sessions (key, agent_id, generation, created_at, updated_at) VALUES ('a', 'main', 1, 1, 1), ('b', 'main', 0, 1, 1)`)
	long := strings.Repeat("长回答。", 400) // past a page: an overflow page
	exec(`INSERT INTO turns (session_key, generation, seq, role, text, at) VALUES
		('b', 0, 1, 'user', 'b one', 1), ('a', 1, 2, 'assistant', ?, 3), ('a', 0, 1, 'user', 'old generation', 1), ('a', 1, 1, 'user', 'a one', 2)`, long)
	d := upgraded(t, old, path)
	texts := func(key string) []string {
		t.Helper()
		turns, err := d.Transcript(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, tr := range turns {
			out = append(out, tr.Text)
		}
		return out
	}
	if diff := cmp.Diff([]string{"a one", long}, texts("a")); diff != "" {
		t.Errorf("session a after the migration (-want +got):\n%s", diff)
	}
	if got, err := d.AppendTurn(ctx, "a", store.Turn{Role: store.RoleUser, Text: "a three"}); err != nil || got.Seq != 3 {
		t.Errorf("a turn appended after the migration: seq %d, %v; want 3", got.Seq, err)
	}
	if diff := cmp.Diff([]string{"b one"}, texts("b")); diff != "" {
		t.Errorf("session b after the migration (-want +got):\n%s", diff)
	}
	if err := d.w.do(func(tx *sql.Conn) error {
		_, err := tx.ExecContext(ctx, `DELETE FROM sessions WHERE key = 'a'`)
		return err
	}, false, false); err != nil {
		t.Fatal(err)
	}
	var left int
	if err := d.row(ctx, `SELECT count(*) FROM turns WHERE session_key = 'a'`, nil, &left); err != nil || left != 0 {
		t.Errorf("turns of a deleted session: %d (%v), want none", left, err)
	}
}
