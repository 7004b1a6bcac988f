package sqlite

import (
	"context"
	"path/filepath"
	"strings"
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
	db := openFresh(t)
	if err := db.RecordSent(ctx, "onebot", "default", "-101", "102"); err != nil {
		t.Fatal(err)
	}
	if _, err := db.PruneSent(ctx, time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if err := db.RecordSent(ctx, "onebot", "default", "103"); err != nil {
		t.Fatal(err)
	}
	db = reopen(t, db)
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
		db := openFresh(t)
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
		db = reopen(t, db)
		if ok, _ := db.WasSent(ctx, "onebot", "default", "8"); !ok {
			t.Error("the id recorded while the writer was busy is not known after a reopening")
		}
	})
}

// TestSentIDsAreAppendedWithoutAnIndex: recording an id appends a row to
// a table with no index (one page written, the table's last), the prune
// visits the rows in the order they were added, and an id recorded twice
// is known from its later time, after a prune of the earlier and after
// a reopening.
func TestSentIDsAreAppendedWithoutAnIndex(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		db := openFresh(t)
		if n := indexesOf(t, db, "sent"); n != 0 {
			t.Errorf("the sent table has %d index(es)", n)
		}
		plan := queryPlan(t, db, qPruneSent, int64(0))
		if !strings.Contains(plan, "USING INTEGER PRIMARY KEY (rowid<?)") {
			t.Errorf("the prune does not read a range of rowids: %s", plan)
		}

		if err := db.RecordSent(ctx, "onebot", "default", "1", "2"); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Hour)
		if err := db.RecordSent(ctx, "onebot", "default", "2"); err != nil { // again, later
			t.Fatal(err)
		}
		time.Sleep(time.Hour)
		// Id 1 and id 2's first row were sent before the cut; id 2 is
		// known from its second, after it.
		if n, err := db.PruneSent(ctx, time.Now().Add(-90*time.Minute)); err != nil || n != 1 {
			t.Fatalf("pruned %d ids, %v; want 1 (id 1)", n, err)
		}
		var rows int
		if err := db.row(ctx, `SELECT count(*) FROM sent`, nil, &rows); err != nil || rows != 1 {
			t.Fatalf("%d rows left (%v), want 1: id 2's later row", rows, err)
		}
		db = reopen(t, db)
		for id, want := range map[msg.MessageID]bool{"1": false, "2": true} {
			if got, _ := db.WasSent(ctx, "onebot", "default", id); got != want {
				t.Errorf("after reopening, WasSent(%s) = %v, want %v", id, got, want)
			}
		}
		// Known from its later time: pruned only once that is old.
		if n, err := db.PruneSent(ctx, time.Now().Add(-61*time.Minute)); err != nil || n != 0 {
			t.Errorf("pruned %d ids, %v; want 0", n, err)
		}
		if n, err := db.PruneSent(ctx, time.Now()); err != nil || n != 1 {
			t.Errorf("pruned %d ids, %v; want 1", n, err)
		}
	})
}

// TestMigrationToTheSentLog: the ids a database of version 16 holds are
// known after the migration, and pruned by their times.
func TestMigrationToTheSentLog(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "v16.db")
	old := migratedTo(t, path, 16)
	exec := execIn(t, old)
	at := millis(now())
	exec(`INSERT INTO sent (channel, account, message_id, sent_at) VALUES ('onebot', 'default', 'new', ?), ('onebot', 'default', 'old', ?), ('feishu', 'bot', 'om_1', ?)`,
		at, at-int64(2*time.Hour/time.Millisecond), at)
	db := upgraded(t, old, path)
	for _, c := range []struct {
		ch   msg.ChannelID
		acct msg.AccountID
		id   msg.MessageID
	}{{"onebot", "default", "new"}, {"onebot", "default", "old"}, {"feishu", "bot", "om_1"}} {
		if ok, _ := db.WasSent(ctx, c.ch, c.acct, c.id); !ok {
			t.Errorf("%s/%s/%s is not known after the migration", c.ch, c.acct, c.id)
		}
	}
	if n, err := db.PruneSent(ctx, now().Add(-time.Hour)); err != nil || n != 1 {
		t.Errorf("pruned %d, %v; want 1 (old)", n, err)
	}
	if ok, _ := db.WasSent(ctx, "onebot", "default", "new"); !ok {
		t.Error("the new id is pruned")
	}
}
