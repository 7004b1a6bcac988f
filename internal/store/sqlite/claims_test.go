package sqlite

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/pincerbot/pincer/internal/store"
)

// TestAFreeClaimNeverWaitsForTheWriter: the admission of a turn whose key
// was never claimed, and a dedup claim of a new key, return while the
// writer is busy (committing a batch, behind which the @ used to wait),
// and are written all the same. A duplicate waits for the table, which
// refuses it.
func TestAFreeClaimNeverWaitsForTheWriter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		db := openFresh(t)
		release := holdWriter(t, db)
		type outcome struct {
			what string
			ok   bool
			err  error
		}
		answered := make(chan outcome, 3)
		go func() {
			ok, err := db.AdmitTurn(ctx, "in:onebot:default:group:1:7", time.Hour, []byte(`{"turn":1}`), store.Consumed{})
			answered <- outcome{"admission", ok, err}
			ok, err = db.ClaimDedup(ctx, "feishu:event:e1", time.Hour)
			answered <- outcome{"claim", ok, err}
			ok, err = db.AdmitTurn(ctx, "in:onebot:default:group:1:7", time.Hour, nil, store.Consumed{})
			answered <- outcome{"duplicate", ok, err}
		}()
		synctest.Wait()
		for _, want := range []string{"admission", "claim"} {
			select {
			case o := <-answered:
				if o.what != want || !o.ok || o.err != nil {
					t.Errorf("%s: %v %v, want granted", o.what, o.ok, o.err)
				}
			default:
				t.Fatalf("the %s waits for the writer", want)
			}
		}
		select {
		case o := <-answered:
			t.Fatalf("the duplicate was answered (%v %v) without the table", o.ok, o.err)
		default:
		}
		release()
		if o := <-answered; o.ok || o.err != nil {
			t.Errorf("the duplicate: %v %v, want refused", o.ok, o.err)
		}
		// Written: a reopened store knows both keys, and the turn.
		db = reopen(t, db)
		if ok, err := db.AdmitTurn(ctx, "in:onebot:default:group:1:7", time.Hour, nil, store.Consumed{}); ok || err != nil {
			t.Errorf("the admitted key after a reopen: %v %v, want refused", ok, err)
		}
		if ok, err := db.ClaimDedup(ctx, "feishu:event:e1", time.Hour); ok || err != nil {
			t.Errorf("the claimed key after a reopen: %v %v, want refused", ok, err)
		}
		pending, err := db.PendingTurns(ctx)
		if err != nil || len(pending) != 1 {
			t.Errorf("journal after a reopen: %v %v, want the admitted turn", pending, err)
		}
	})
}

// A key claimed again after it expired, or after it was released, is
// granted; the hashes of expired keys go with the table's.
func TestClaimsExpireAndAreReleased(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		db := openFresh(t)
		claim := func(key string, ttl time.Duration, want bool) {
			t.Helper()
			if ok, err := db.ClaimDedup(ctx, key, ttl); ok != want || err != nil {
				t.Fatalf("claim %s: %v %v, want %v", key, ok, err, want)
			}
		}
		claim("a", time.Minute, true)
		claim("b", time.Hour, true)
		claim("a", time.Minute, false)
		if err := db.ReleaseDedup(ctx, "b"); err != nil {
			t.Fatal(err)
		}
		claim("b", time.Hour, true)
		time.Sleep(2 * time.Minute)
		claim("a", time.Minute, true)
		time.Sleep(2 * time.Minute)
		if n, err := db.PruneDedup(ctx); n != 1 || err != nil {
			t.Errorf("prune: %d %v, want a's claim", n, err)
		}
		db.claims.mu.Lock()
		held := len(db.claims.until)
		db.claims.mu.Unlock()
		if held != 1 {
			t.Errorf("hashes held after the prune: %d, want b's", held)
		}
		claim("b", time.Hour, false)
		claim("a", time.Minute, true)
	})
}

// A claim the table decides (here because the store's last write had
// failed) is held in memory as well: once the store is healthy again, a
// second claim of the key is refused, not granted from memory.
func TestAClaimTheTableDecidedIsKnownAfter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		db := openFresh(t)
		onWriter(t, db, `CREATE TEMP TRIGGER refuse_journal BEFORE INSERT ON main.pending_turns BEGIN SELECT RAISE(ABORT, 'journal refused'); END`)
		if ok, err := db.AdmitTurn(ctx, "in:refused", time.Hour, []byte(`{}`), store.Consumed{}); !ok || err != nil {
			t.Fatalf("admission handed in: %v %v", ok, err)
		}
		time.Sleep(20 * time.Millisecond)
		synctest.Wait()
		if db.Health() == nil {
			t.Fatal("the refused journal entry does not show in the store's health")
		}
		if ok, err := db.ClaimDedup(ctx, "feishu:event:e2", time.Hour); !ok || err != nil {
			t.Fatalf("a claim while unhealthy: %v %v, want granted by the table", ok, err)
		}
		time.Sleep(20 * time.Millisecond) // its batch commits
		synctest.Wait()
		if db.Health() != nil {
			t.Fatalf("still unhealthy after a write that succeeded: %v", db.Health())
		}
		if ok, err := db.ClaimDedup(ctx, "feishu:event:e2", time.Hour); ok || err != nil {
			t.Errorf("the same key again: %v %v, want refused", ok, err)
		}
	})
}

// Claims of one key at once: exactly one is granted, whether from memory
// or by the table, and one turn admitted.
func TestConcurrentClaimsGrantOne(t *testing.T) {
	ctx := context.Background()
	db := openFresh(t)
	for round := range 20 {
		key := "in:onebot:default:group:1:" + strconv.Itoa(round)
		n := atOnce(t, 8, func(i int) (bool, error) {
			if i%2 == 0 {
				return db.AdmitTurn(ctx, key, time.Hour, []byte(`{}`), store.Consumed{})
			}
			return db.ClaimDedup(ctx, key, time.Hour)
		})
		if n != 1 {
			t.Errorf("%s: %d claims granted, want 1", key, n)
		}
	}
}

// atOnce runs call(0) to call(n-1) at once and returns how many said
// true; an error fails t.
func atOnce(t *testing.T, n int, call func(i int) (bool, error)) int {
	t.Helper()
	var yes atomic.Int32
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			ok, err := call(i)
			if err != nil {
				t.Error(err)
			}
			if ok {
				yes.Add(1)
			}
		})
	}
	wg.Wait()
	return int(yes.Load())
}

// TestDedupIsPrunedAPartAtATime: the dedup table has no index of its
// keys' expiry; the prune walks it by key, in parts, and deletes every
// expired key of every part and no other, and an expired key is free
// again once pruned.
func TestDedupIsPrunedAPartAtATime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		d := openFresh(t)
		if n := indexesOf(t, d, "dedup"); n != 0 {
			t.Errorf("the dedup table has %d index(es) besides its key", n)
		}
		for q, args := range map[string][]any{
			qDedupPartEnd: {"a", 1}, qPruneDedup: {"a", "b", 1}, qPruneDedupTo: {"a", 1},
		} {
			plan := queryPlan(t, d, q, args...)
			if !strings.Contains(plan, "SEARCH dedup USING PRIMARY KEY (key>?") {
				t.Errorf("%s\nreads the table without its key: %s", q, plan)
			}
		}
		const keys = 2*dedupPrunePart + 500 // three parts
		for i := range keys {
			ttl := time.Hour
			if i%3 == 0 {
				ttl = time.Minute // spread over every part
			}
			if ok, err := d.ClaimDedup(ctx, fmt.Sprintf("in:%05d", i), ttl); !ok || err != nil {
				t.Fatalf("claim %d: %v %v", i, ok, err)
			}
		}
		// The smallest key there is, and keys that differ by a NUL at
		// their end, on either side of a part's end.
		for _, k := range []string{"", "in:01023\x00", "in:01023\x00\x00"} {
			if ok, err := d.ClaimDedup(ctx, k, time.Minute); !ok || err != nil {
				t.Fatalf("claim %q: %v %v", k, ok, err)
			}
		}
		time.Sleep(2 * time.Minute)
		expired := (keys+2)/3 + 3
		if n, err := d.PruneDedup(ctx); err != nil || n != int64(expired) {
			t.Fatalf("pruned %d, %v; want %d", n, err, expired)
		}
		var left, stale int
		if err := d.row(ctx, `SELECT count(*), count(*) FILTER (WHERE expires_at <= ?) FROM dedup`, []any{millis(now())}, &left, &stale); err != nil {
			t.Fatal(err)
		}
		if left != keys+3-expired || stale != 0 {
			t.Errorf("%d keys left, %d of them expired; want %d, 0", left, stale, keys+3-expired)
		}
		if n, err := d.PruneDedup(ctx); err != nil || n != 0 {
			t.Errorf("a second prune: %d, %v; want 0", n, err)
		}
		if ok, _ := d.ClaimDedup(ctx, "in:00000", time.Hour); !ok {
			t.Error("a pruned key is not free")
		}
		if ok, _ := d.ClaimDedup(ctx, "in:00001", time.Hour); ok {
			t.Error("a key that did not expire is free")
		}
	})
}
