package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"io/fs"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/pressly/goose/v3"

	"github.com/pincerbot/pincer/internal/msg"
	"github.com/pincerbot/pincer/internal/store"
)

// TestMigrationMovesTheLogAndBuffersIntoViews: a database of the version
// before the message log (an inbound table; history and digest entries
// buffered with their bodies) opens with its log readable in order, what
// the history and digest buffers held held by their views, the realtime
// entries still buffered, and the numbering going on after the last entry.
func TestMigrationMovesTheLogAndBuffersIntoViews(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "old.db")
	old, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	sub, err := fs.Sub(migrations, "migrations")
	if err != nil {
		t.Fatal(err)
	}
	p, err := goose.NewProvider(goose.DialectSQLite3, old, sub)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.UpTo(ctx, 5); err != nil {
		t.Fatal(err)
	}
	g := msg.Peer{Kind: msg.Group, ID: "7"}
	at := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	m := func(id, text string, sec int) msg.Message {
		return msg.Message{ID: msg.MessageID(id), Channel: "onebot", Account: "default", Peer: g, Sender: msg.Sender{ID: "1", Name: "A"}, Time: at.Add(time.Duration(sec) * time.Second), Text: text}
	}
	exec := func(q string, args ...any) {
		t.Helper()
		if _, err := old.ExecContext(ctx, q, args...); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
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
	if err := old.Close(); err != nil {
		t.Fatal(err)
	}

	d, err := Open(ctx, path, Options{})
	if err != nil {
		t.Fatalf("open after the migration: %v", err)
	}
	defer d.Close()
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
