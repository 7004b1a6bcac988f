package sqlite

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"
	"time"

	"github.com/pincerbot/pincer/internal/msg"
	"github.com/pincerbot/pincer/internal/store"
	"github.com/pincerbot/pincer/internal/trace"
)

// TestSavepointsOnlyForSeveralStatements: a job that writes one statement
// runs without a savepoint of its own (the statement is atomic by itself),
// a turn's insert among them; one that writes several statements runs
// under one, and each kind still does its work. A turn's
// single-statement jobs used to spend two statements of three on
// SAVEPOINT and RELEASE.
func TestSavepointsOnlyForSeveralStatements(t *testing.T) {
	ctx := context.Background()
	db, err := Open(ctx, filepath.Join(t.TempDir(), "sp.db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	peer := msg.Peer{Kind: msg.Group, ID: "1"}
	single := []struct {
		name string
		run  func() error
	}{
		{"OpenWithTranscript", func() error { _, _, _, err := db.OpenWithTranscript(ctx, "s", "main"); return err }},
		{"OpenSession", func() error { _, _, err := db.OpenSession(ctx, "s", "main"); return err }},
		{"AddOutbox", func() error {
			_, err := db.AddOutbox(ctx, store.OutboxEntry{ID: "k#1", Channel: "onebot", Out: msg.Outbound{Account: "default", Peer: peer, Text: "hi"}})
			return err
		}},
		{"UpdateOutbox", func() error { return db.UpdateOutbox(ctx, "k#1", 1, 1, store.OutboxSent, "") }},
		{"RecordSent one", func() error { return db.RecordSent(ctx, "onebot", "default", "m1") }},
		{"FinishTurn one", func() error { return db.FinishTurn(ctx, "k") }},
		{"AddTraceRecords one", func() error {
			return db.AddTraceRecords(ctx, []trace.Record{{Key: trace.Key{Channel: "onebot", Account: "default", ID: "m1"}, Chat: peer.String(), At: time.Now()}})
		}},
		{"AddTokens two keys", func() error { return db.AddTokens(ctx, "2026-12-06", 7, "user:1", "chat:1") }},
		{"AppendTurn", func() error {
			_, err := db.AppendTurn(ctx, "s", store.Turn{Role: store.RoleUser, Text: "hi"})
			return err
		}},
		{"PostTurn", func() error { return db.PostTurn(ctx, "s", store.Turn{Role: store.RoleAssistant, Text: "hello"}) }},
	}
	for _, c := range single {
		before := db.w.savepoints.Load()
		if err := c.run(); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if err := db.w.do(func(*sql.Conn) error { return nil }, false, false); err != nil { // after what was posted
			t.Fatal(err)
		}
		if n := db.w.savepoints.Load() - before; n != 0 {
			t.Errorf("%s ran under %d savepoint(s); it writes one statement", c.name, n)
		}
	}
	several := []struct {
		name string
		run  func() error
	}{
		{"RecordSent two", func() error { return db.RecordSent(ctx, "onebot", "default", "m2", "m3") }},
		{"FinishTurn two", func() error { return db.FinishTurn(ctx, "a", "b") }},
	}
	for _, c := range several {
		before := db.w.savepoints.Load()
		if err := c.run(); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if err := db.w.do(func(*sql.Conn) error { return nil }, false, false); err != nil {
			t.Fatal(err)
		}
		if n := db.w.savepoints.Load() - before; n != 1 {
			t.Errorf("%s ran under %d savepoint(s), want 1: it writes several statements", c.name, n)
		}
	}
	// What the single-statement jobs wrote is there.
	entries, err := db.PendingOutbox(ctx, "onebot", "default")
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 0 {
		t.Errorf("the sent outbox entry is still pending: %+v", entries)
	}
	if sent, err := db.WasSent(ctx, "onebot", "default", "m1"); err != nil || !sent {
		t.Errorf("the recorded sent id is not known: %v", err)
	}
	recs, err := db.TraceRecords(ctx, peer.String(), "m1", 1)
	if err != nil || len(recs) != 1 {
		t.Errorf("trace record: %v, %+v", err, recs)
	}
	used, err := db.TokensUsed(ctx, "2026-12-06", "user:1", "chat:1")
	if err != nil || used["user:1"] != 7 || used["chat:1"] != 7 {
		t.Errorf("tokens of both keys: %v, %v", err, used)
	}
	turns, err := db.Transcript(ctx, "s")
	if err != nil || len(turns) != 2 || turns[1].Text != "hello" || turns[1].Seq != 2 {
		t.Errorf("transcript: %v, %+v", err, turns)
	}
}
