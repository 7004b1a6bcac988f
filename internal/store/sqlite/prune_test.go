package sqlite

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/pincerbot/pincer/internal/msg"
)

// TestPruneInboundInBatches: more entries than one statement deletes are
// all pruned, batch after batch.
func TestPruneInboundInBatches(t *testing.T) {
	ctx := context.Background()
	db, err := Open(ctx, filepath.Join(t.TempDir(), "p.db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	peer := msg.Peer{Kind: msg.Group, ID: "g"}
	const total = pruneBatch + pruneBatch/2
	for i := range total {
		m := msg.Message{ID: msg.MessageID(fmt.Sprint(i)), Channel: "onebot", Account: msg.DefaultAccount, Peer: peer, Text: "x"}
		if _, err := db.LogInbound(ctx, m, 0); err != nil {
			t.Fatal(err)
		}
	}
	n, err := db.PruneInbound(ctx, time.Now().Add(time.Hour))
	if err != nil || n != total {
		t.Fatalf("pruned %d, %v; want %d", n, err, total)
	}
	var left int
	if err := db.row(ctx, `SELECT count(*) FROM messages`, nil, &left); err != nil || left != 0 {
		t.Errorf("%d entries left, %v", left, err)
	}
}
