package sqlite

import (
	"context"
	"fmt"
	"hash/maphash"
	"maps"
	"sync"
)

// A claim (a turn's admission, a Feishu event's dedup key) is decided in
// memory when it can be, so the @ that asks for one does not wait for the
// writer behind whatever it is committing: the claimed keys are kept as
// 64-bit hashes with the latest expiry of the keys that share each hash
// (the table is the process's own, as the data directory is). A key whose
// hash is not held, or held expired, is not claimed in the table either:
// the claim is handed to the writer without waiting (it is committed with
// its batch, as the claim the caller waited for was) and granted. A key
// whose hash is held unexpired is a duplicate, or another key's hash, and
// the table decides, as before. Releasing a key leaves its hash held, so
// the next claim of it asks the table; expired hashes go with the
// table's expired keys (PruneDedup).

// claimMirror holds the hashes of the claimed keys.
type claimMirror struct {
	mu    sync.Mutex
	seed  maphash.Seed
	until map[uint64]int64 // hash of a key -> the latest expiry (ms) of the keys claimed with it
}

// loadClaims fills the mirror with the unexpired keys of the table.
func (d *DB) loadClaims(ctx context.Context) error {
	d.claims.seed = maphash.MakeSeed()
	d.claims.until = map[uint64]int64{}
	rows, err := d.db.QueryContext(ctx, `SELECT key, expires_at FROM dedup WHERE expires_at > ?`, millis(now()))
	if err != nil {
		return fmt.Errorf("read claimed keys: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var key string
		var until int64
		if err := rows.Scan(&key, &until); err != nil {
			return fmt.Errorf("read claimed keys: %w", err)
		}
		d.claims.hold(key, until)
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("read claimed keys: %w", err)
	}
	return nil
}

func (m *claimMirror) hash(key string) uint64 { return maphash.String(m.seed, key) }

// hold records key as claimed until until (ms); the caller holds mu or
// is alone with m.
func (m *claimMirror) hold(key string, until int64) {
	h := m.hash(key)
	m.until[h] = max(m.until[h], until)
}

// claim holds key until until (ms) and, when fast and it was free at t
// (ms) — its hash not held, or held expired — hands its write in with
// post, under the mirror's lock: a claim of the same key after it finds
// the hash held and asks the table, behind the write. (The writer never
// takes this lock, so a hand-in that waits for room in a full queue while
// holding it cannot stall the writer.) Either way the key is held from
// now on, so a claim the table decides (not fast) is known to the claims
// after it.
func (m *claimMirror) claim(key string, t, until int64, fast bool, post func() error) (free bool, err error) {
	h := m.hash(key)
	m.mu.Lock()
	defer m.mu.Unlock()
	held := m.until[h]
	m.until[h] = max(held, until)
	if held > t || !fast {
		return false, nil
	}
	return true, post()
}

// prune forgets the hashes whose keys all expired by t (ms).
func (m *claimMirror) prune(t int64) {
	m.mu.Lock()
	maps.DeleteFunc(m.until, func(_ uint64, until int64) bool { return until <= t })
	m.mu.Unlock()
}
