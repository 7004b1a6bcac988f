package sqlite

import (
	"context"
	"fmt"
	"maps"
	"path/filepath"
	"testing"
	"testing/synctest"
	"time"

	"github.com/pincerbot/pincer/internal/store"
)

// TestMigrationToTokenUse: a database of version 13, the last before the
// token counts, opens with the counts ready to add to and read.
func TestMigrationToTokenUse(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "old.db")
	if err := migratedTo(t, path, 13).Close(); err != nil {
		t.Fatal(err)
	}
	d, err := Open(ctx, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if err := d.AddTokens(ctx, "2026-12-05", 42, "user:onebot:1", "chat:onebot:default:group:2"); err != nil {
		t.Fatal(err)
	}
	got, err := d.TokensUsed(ctx, "2026-12-05", "user:onebot:1", "chat:onebot:default:group:2")
	if err != nil || got["user:onebot:1"] != 42 || got["chat:onebot:default:group:2"] != 42 {
		t.Errorf("counts after migrating: %v %v", got, err)
	}
}

// TestTokensAreLoggedThenFolded: a turn's tokens are appended to the log
// and not to the counts; what the log holds is read with the counts; the
// first batch committed tokensFoldEvery after the last fold moves the log
// into the counts; an unfolded log survives a reopening, is read, and is
// folded by the first batch after it; the prune folds before it deletes.
func TestTokensAreLoggedThenFolded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		d := openFresh(t)
		const day = "2026-12-06"
		used := func(want map[string]int64) {
			t.Helper()
			got, err := d.TokensUsed(ctx, day, "user:a", "user:b", "chat:x")
			if err != nil {
				t.Fatal(err)
			}
			if !maps.Equal(got, want) {
				t.Errorf("TokensUsed = %v, want %v", got, want)
			}
		}
		// add adds n tokens to keys and commits the batch holding them.
		add := func(n int64, keys ...string) {
			t.Helper()
			if err := d.AddTokens(ctx, day, n, keys...); err != nil {
				t.Fatal(err)
			}
			commitBatch(t, d)
		}
		add(10, "user:a", "chat:x") // the first batch of an open folds
		tokenTables(t, d, 0, 2)
		add(5, "user:b", "chat:x")
		tokenTables(t, d, 2, 2)
		used(map[string]int64{"user:a": 10, "user:b": 5, "chat:x": 15})
		top, err := d.TopTokenUse(ctx, day, "user:", 5)
		if err != nil || len(top) != 2 || top[0] != (store.TokenCount{Key: "user:a", Tokens: 10}) || top[1] != (store.TokenCount{Key: "user:b", Tokens: 5}) {
			t.Errorf("TopTokenUse = %v, %v", top, err)
		}

		time.Sleep(tokensFoldEvery)
		add(1, "user:a")
		tokenTables(t, d, 0, 3)
		used(map[string]int64{"user:a": 11, "user:b": 5, "chat:x": 15})

		add(7, "user:b")
		d = reopen(t, d)
		tokenTables(t, d, 1, 3)
		used(map[string]int64{"user:a": 11, "user:b": 12, "chat:x": 15})
		add(1, "chat:x")
		tokenTables(t, d, 0, 3)
		used(map[string]int64{"user:a": 11, "user:b": 12, "chat:x": 16})

		// The prune folds first: the log's rows of the day pruned go too.
		if err := d.AddTokens(ctx, "2026-12-01", 3, "user:a"); err != nil {
			t.Fatal(err)
		}
		if n, err := d.PruneTokenUse(ctx, "2026-12-02"); err != nil || n != 1 {
			t.Errorf("pruned %d, %v; want 1", n, err)
		}
		tokenTables(t, d, 0, 3)
		used(map[string]int64{"user:a": 11, "user:b": 12, "chat:x": 16})
	})
}

// TestAFailedFoldLeavesTheLog: a fold that fails (here the log refuses
// to be emptied, after its rows were added to the counts) changes neither
// the counts nor the log, so nothing is counted twice or lost, and a
// later fold moves the log.
func TestAFailedFoldLeavesTheLog(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		d := openFresh(t)
		const day = "2026-12-06"
		commitBatch(t, d) // the open's fold, of nothing
		time.Sleep(tokensFoldEvery)
		if _, err := d.exec(ctx, nil, `CREATE TRIGGER refuse BEFORE DELETE ON token_log BEGIN SELECT RAISE(ABORT, 'refused'); END`); err != nil {
			t.Fatal(err)
		}
		if err := d.AddTokens(ctx, day, 4, "user:a", "chat:x"); err != nil {
			t.Fatal(err)
		}
		commitBatch(t, d) // a fold is due, and fails
		tokenTables(t, d, 2, 0)
		if _, err := d.exec(ctx, nil, `DROP TRIGGER refuse`); err != nil {
			t.Fatal(err)
		}
		if err := d.AddTokens(ctx, day, 6, "user:a"); err != nil {
			t.Fatal(err)
		}
		commitBatch(t, d) // still due: this one folds
		tokenTables(t, d, 0, 2)
		got, err := d.TokensUsed(ctx, day, "user:a", "chat:x")
		if err != nil || got["user:a"] != 10 || got["chat:x"] != 4 {
			t.Errorf("TokensUsed = %v, %v; want user:a 10, chat:x 4", got, err)
		}
	})
}

// TestAFoldTakesAPartAtATime: a fold takes the oldest tokensFoldRows
// rows of the log, and the next batch the next part, without waiting for
// tokensFoldEvery again; the counts are whole once the log is drained.
func TestAFoldTakesAPartAtATime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		d := openFresh(t)
		const day, turns = "2026-12-06", 150 // two rows a turn: more than a part
		commitBatch(t, d)                    // the open's fold, of nothing
		time.Sleep(tokensFoldEvery)
		for i := range turns {
			if err := d.AddTokens(ctx, day, 2, fmt.Sprintf("user:%03d", i), "chat:x"); err != nil {
				t.Fatal(err)
			}
		}
		commitBatch(t, d)
		// The oldest 256 rows: the first 128 turns' users and the chat.
		tokenTables(t, d, 2*turns-tokensFoldRows, tokensFoldRows/2+1)
		commitBatch(t, d)
		tokenTables(t, d, 0, turns+1)
		got, err := d.TokensUsed(ctx, day, "chat:x", "user:000", "user:149")
		if err != nil || got["chat:x"] != 2*turns || got["user:000"] != 2 || got["user:149"] != 2 {
			t.Errorf("TokensUsed = %v, %v", got, err)
		}
	})
}

// tokenTables checks how many rows the token log and the counts hold.
func tokenTables(t *testing.T, d *DB, wantLog, wantCounts int) {
	t.Helper()
	var log, counts int
	if err := d.row(context.Background(), `SELECT (SELECT count(*) FROM token_log), (SELECT count(*) FROM token_use)`, nil, &log, &counts); err != nil {
		t.Fatal(err)
	}
	if log != wantLog || counts != wantCounts {
		t.Errorf("%d rows in the log, %d counts; want %d, %d", log, counts, wantLog, wantCounts)
	}
}
