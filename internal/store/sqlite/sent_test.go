package sqlite

import (
	"context"
	"path/filepath"
	"testing"
	"testing/synctest"
	"time"

	"github.com/pincerbot/pincer/internal/msg"
	"github.com/pincerbot/pincer/internal/store"
)

// TestSentIDsAreKnownAfterAReopen: the sent log read from memory is the
// table's: what was recorded, and not what was pruned, is known again
// after the store is opened anew.
func TestSentIDsAreKnownAfterAReopen(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "pincer.db")
	db, err := Open(ctx, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.RecordSent(ctx, "onebot", "default", "-101", "102"); err != nil {
		t.Fatal(err)
	}
	if _, err := db.PruneSent(ctx, time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if err := db.RecordSent(ctx, "onebot", "default", "103"); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db, err = Open(ctx, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for id, want := range map[string]bool{"-101": false, "102": false, "103": true, "104": false} {
		if got, err := db.WasSent(ctx, "onebot", "default", msg.MessageID(id)); got != want || err != nil {
			t.Errorf("WasSent(%s) = %v, %v; want %v", id, got, err, want)
		}
	}
	if got, _ := db.WasSent(ctx, "feishu", "default", "103"); got {
		t.Error("another channel's id")
	}
}

// TestWasSentNeverWaitsForTheWriter: asking whether an id is the bot's
// is answered while the writer is busy (a burst being written, which a
// lane asking about a quote must not wait behind).
func TestWasSentNeverWaitsForTheWriter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		db := openFresh(t)
		if err := db.RecordSent(ctx, "onebot", "default", "7"); err != nil {
			t.Fatal(err)
		}
		release := holdWriter(t, db)
		answered := make(chan bool, 1)
		go func() {
			ok, _ := db.WasSent(ctx, "onebot", "default", "7")
			answered <- ok
		}()
		synctest.Wait()
		select {
		case ok := <-answered:
			if !ok {
				t.Error("7 was sent")
			}
		default:
			t.Error("WasSent waits for the writer")
		}
		release()
	})
}

// TestWhatFollowsASendDoesNotWaitForTheWriter: recording a reply's ids
// and finishing its turn, the bookkeeping after a send, return while the
// writer is busy, and are written all the same: the journal no longer has
// the turn and the ids are known after a reopening. (A crash before they
// are written costs the turn's journal entry a resume that finds the reply
// delivered, and the ids what a crash costs every write nobody waits for.)
func TestWhatFollowsASendDoesNotWaitForTheWriter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		path := filepath.Join(t.TempDir(), "pincer.db")
		db, err := Open(ctx, path, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := db.AdmitTurn(ctx, "turn", time.Hour, []byte("t"), store.Consumed{}); err != nil {
			t.Fatal(err)
		}
		release := holdWriter(t, db)
		returned := make(chan error, 2)
		go func() { returned <- db.RecordSent(ctx, "onebot", "default", "8") }()
		go func() { returned <- db.FinishTurn(ctx, "turn") }()
		synctest.Wait()
		for range 2 {
			select {
			case err := <-returned:
				if err != nil {
					t.Error(err)
				}
			default:
				t.Error("RecordSent or FinishTurn waits for the writer")
			}
		}
		release()
		if pending, err := db.PendingTurns(ctx); err != nil || len(pending) != 0 {
			t.Errorf("journal after FinishTurn: %+v, %v", pending, err)
		}
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
		db, err = Open(ctx, path, Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		if ok, _ := db.WasSent(ctx, "onebot", "default", "8"); !ok {
			t.Error("the id recorded while the writer was busy is not known after a reopening")
		}
	})
}
