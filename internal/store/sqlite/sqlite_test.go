package sqlite

import (
	"strconv"
	"strings"
	"time"

	"context"
	"github.com/pincerbot/pincer/internal/msg"
	"path/filepath"
	"testing"

	"github.com/pincerbot/pincer/internal/store"
	"github.com/pincerbot/pincer/internal/store/storetest"
)

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store {
		db, err := Open(context.Background(), filepath.Join(t.TempDir(), "nested", "pincer.db"), Options{})
		if err != nil {
			t.Fatal(err)
		}
		return db
	})
}

func TestReopenKeepsData(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "pincer.db")
	db, err := Open(ctx, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := db.OpenSession(ctx, "k", "main"); err != nil {
		t.Fatal(err)
	}
	if _, err := db.AppendTurn(ctx, "k", store.Turn{Role: store.RoleUser, Text: "hi"}); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db, err = Open(ctx, path, Options{})
	if err != nil {
		t.Fatalf("reopen (migrations must be idempotent): %v", err)
	}
	defer db.Close()
	tr, err := db.Transcript(ctx, "k")
	if err != nil || len(tr) != 1 || tr[0].Text != "hi" {
		t.Fatalf("after reopen: %+v %v", tr, err)
	}
	if err := db.Check(ctx); err != nil {
		t.Fatal(err)
	}
}

func inboundFor(i int) msg.Message {
	return msg.Message{
		ID: msg.MessageID(strconv.Itoa(i)), Channel: "webchat", Account: msg.DefaultAccount,
		Peer: msg.Peer{Kind: msg.Direct, ID: "b"}, Time: time.Now(), Text: "hello",
	}
}

// TestLogChainsSurviveReopening: a chat's entries link back across a
// restart, and what the views hold is found again.
func TestLogChainsSurviveReopening(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "pincer.db")
	g1, g2 := msg.Peer{Kind: msg.Group, ID: "1"}, msg.Peer{Kind: msg.Group, ID: "2"}
	logIn := func(db *DB, peer msg.Peer, text string) {
		t.Helper()
		m := msg.Message{ID: msg.MessageID(text), Channel: "onebot", Account: "default", Peer: peer, Time: time.Now(), Text: text}
		if _, err := db.LogInbound(ctx, m, store.ViewHistory); err != nil {
			t.Fatal(err)
		}
	}
	texts := func(lms []store.LoggedMessage, err error) string {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, lm := range lms {
			out = append(out, lm.Message.Text)
		}
		return strings.Join(out, " ")
	}
	db, err := Open(ctx, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	logIn(db, g1, "a1")
	logIn(db, g2, "b1")
	logIn(db, g1, "a2")
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db, err = Open(ctx, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	logIn(db, g1, "a3")
	logIn(db, g2, "b2")
	if got := texts(db.RecentInbound(ctx, "onebot", "default", g1, 10)); got != "a1 a2 a3" {
		t.Errorf("chat 1 after reopening: %q", got)
	}
	if got := texts(db.RecentInbound(ctx, "onebot", "default", g2, 1)); got != "b2" {
		t.Errorf("chat 2, the last one: %q", got)
	}
	if got := texts(db.HeldInbound(ctx, "onebot", "default", store.ViewHistory, 2)); got != "a2 a3 b1 b2" {
		t.Errorf("history views: %q", got)
	}
}
