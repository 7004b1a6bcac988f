package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"hash/maphash"
	"maps"
	"sync"
	"time"

	"github.com/pincerbot/pincer/internal/msg"
)

// The sent table is appended to, in the order the ids were sent, and has
// no index (see migration 17): the ids are read at open, and pruned from
// the oldest.
const (
	qRecordSent = `INSERT INTO sent (channel, account, message_id, sent_at) VALUES (?, ?, ?, ?)`
	// qPruneSent deletes the ids sent before ?1 among those added before
	// the first sent from ?1 on, visiting them in the order they were
	// added, the oldest first, as qPruneOutbox does.
	qPruneSent = `DELETE FROM sent
	WHERE rowid < coalesce((SELECT rowid FROM sent WHERE sent_at >= ?1 ORDER BY rowid LIMIT 1), 9223372036854775807)
	AND sent_at < ?1`
)

// The sent log is asked about every quote of a message pincer does not
// know, on the chat's lane: it is kept in memory too (the table is the
// process's own, as the data directory is), so asking never waits for
// the writer, behind the burst it is writing. A week of a busy bot's
// messages is tens of thousands of ids, kept as 64-bit hashes with their
// times (two ids share a hash with odds far below those of a disk
// failing).

// sentMirror is the sent table in memory.
type sentMirror struct {
	mu   sync.RWMutex
	seed maphash.Seed
	at   map[uint64]int64 // hash of channel, account and id -> sent_at (ms)
}

func (m *sentMirror) key(ch, acct, id string) uint64 {
	var h maphash.Hash
	h.SetSeed(m.seed)
	h.WriteString(ch)
	h.WriteByte(0)
	h.WriteString(acct)
	h.WriteByte(0)
	h.WriteString(id)
	return h.Sum64()
}

// loadSent fills the mirror from the table.
func (d *DB) loadSent(ctx context.Context) error {
	d.sent.seed = maphash.MakeSeed()
	d.sent.at = map[uint64]int64{}
	rows, err := d.db.QueryContext(ctx, `SELECT channel, account, message_id, sent_at FROM sent`)
	if err != nil {
		return fmt.Errorf("read sent ids: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var ch, acct, id string
		var at int64
		if err := rows.Scan(&ch, &acct, &id, &at); err != nil {
			return fmt.Errorf("read sent ids: %w", err)
		}
		// An id recorded twice is known from its later time.
		k := d.sent.key(ch, acct, id)
		d.sent.at[k] = max(d.sent.at[k], at)
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("read sent ids: %w", err)
	}
	return nil
}

// RecordSent implements store.SentLog: the ids of one send (its chunks)
// are known at once and written in one transaction, which it does not
// wait for (as the ingest path does not wait for the log).
func (d *DB) RecordSent(ctx context.Context, ch msg.ChannelID, acct msg.AccountID, ids ...msg.MessageID) error {
	if len(ids) == 0 {
		return nil
	}
	// In memory first: a lookup in between knows the ids are the bot's,
	// which they are, written or not.
	at := millis(now())
	d.sent.mu.Lock()
	for _, id := range ids {
		d.sent.at[d.sent.key(string(ch), string(acct), string(id))] = at
	}
	d.sent.mu.Unlock()
	err := d.w.post(func(tx *sql.Conn) error {
		for _, id := range ids {
			if _, err := d.exec(ctx, tx, qRecordSent, string(ch), string(acct), string(id), at); err != nil {
				return err
			}
		}
		return nil
	}, several(len(ids)))
	if err != nil {
		return fmt.Errorf("record sent %v: %w", ids, err)
	}
	return nil
}

// WasSent implements store.SentLog, from memory.
func (d *DB) WasSent(_ context.Context, ch msg.ChannelID, acct msg.AccountID, id msg.MessageID) (bool, error) {
	k := d.sent.key(string(ch), string(acct), string(id))
	d.sent.mu.RLock()
	_, ok := d.sent.at[k]
	d.sent.mu.RUnlock()
	return ok, nil
}

// PruneSent implements store.SentLog. It reports the ids it forgot: an
// id recorded twice is one id in two rows, pruned once both are old. An
// id the clock put out of order (sent before the cut-off, added after an
// id sent since) stays in the table until a later prune reaches it, and
// is known again if the store is opened before then: it is the bot's all
// the same.
func (d *DB) PruneSent(ctx context.Context, before time.Time) (int64, error) {
	cut := millis(before)
	if _, err := d.exec(ctx, nil, qPruneSent, cut); err != nil {
		return 0, fmt.Errorf("prune sent: %w", err)
	}
	d.sent.mu.Lock()
	n := len(d.sent.at)
	maps.DeleteFunc(d.sent.at, func(_ uint64, at int64) bool { return at < cut })
	n -= len(d.sent.at)
	d.sent.mu.Unlock()
	return int64(n), nil
}
