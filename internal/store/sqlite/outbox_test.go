package sqlite

import (
	"context"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/pincerbot/pincer/internal/msg"
	"github.com/pincerbot/pincer/internal/store"
)

// The outbox is pruned in the order its entries were added: the settled
// entries last updated before the cut-off go, whenever they were added;
// pending ones, ones updated since and ones added since stay.
func TestOutboxPruneInTheOrderAdded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		db := openFresh(t)
		start := time.Now()
		add := func(id string) {
			t.Helper()
			out := msg.Outbound{Account: "default", Peer: msg.Peer{Kind: msg.Group, ID: "1"}, Text: id}
			if _, err := db.AddOutbox(ctx, store.OutboxEntry{ID: id, Channel: "onebot", Out: out}); err != nil {
				t.Fatal(err)
			}
		}
		settle := func(id string) {
			t.Helper()
			if err := db.UpdateOutbox(ctx, id, 1, 1, store.OutboxSent, ""); err != nil {
				t.Fatal(err)
			}
		}
		add("sent-at-once")
		settle("sent-at-once")
		add("sent-late")
		add("still-pending")
		time.Sleep(2 * time.Minute)
		add("sent-at-2m")
		settle("sent-at-2m")
		time.Sleep(40 * time.Second)
		settle("sent-late") // at 2m40s
		time.Sleep(20 * time.Second)
		add("added-at-3m")
		settle("added-at-3m")

		n, err := db.PruneOutbox(ctx, start.Add(150*time.Second))
		if err != nil || n != 2 {
			t.Errorf("pruned %d (%v), want the 2 settled before 2m30s", n, err)
		}
		var left []string
		for _, id := range []string{"sent-at-once", "sent-late", "still-pending", "sent-at-2m", "added-at-3m"} {
			if has, err := db.HasOutbox(ctx, id); err != nil {
				t.Fatal(err)
			} else if has {
				left = append(left, id)
			}
		}
		if want := []string{"sent-late", "still-pending", "added-at-3m"}; !slices.Equal(left, want) {
			t.Errorf("left after the prune: %v, want %v", left, want)
		}
	})
}
