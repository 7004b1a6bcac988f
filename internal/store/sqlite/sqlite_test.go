package sqlite

import (
	"strconv"
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
