package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/pincerbot/pincer/internal/msg"
	"github.com/pincerbot/pincer/internal/store"
)

const (
	qJournal = `INSERT INTO pending_turns (key, body, at, n) VALUES (?, ?, ?, ?)
		ON CONFLICT (key) DO UPDATE SET body = excluded.body, at = excluded.at, attempts = 0`
	qAddOutbox = `INSERT INTO outbox (id, channel, account, peer, body, sent, attempts, state, last_error, created_at, updated_at)
		VALUES (?, ?, ?, ?, ?, 0, 0, ?, '', ?, ?) ON CONFLICT (id) DO NOTHING`
	qUpdateOutbox = `UPDATE outbox SET sent = ?, attempts = ?, state = ?, last_error = ?, updated_at = ? WHERE id = ?`
	// The outbox's partial indexes (migration 10) and the queries that use
	// them name store.OutboxPending in SQL: 'pending'.
	qPendingOutbox = `SELECT id, channel, body, sent, attempts, state, last_error, created_at, updated_at FROM outbox
		WHERE channel = ? AND account = ? AND state = 'pending' ORDER BY created_at, rowid`
	// The id range [prefix, prefix+U+10FFFF) holds every id starting with
	// prefix and uses the primary key's index, unlike LIKE.
	qOutboxEntries = `SELECT id, channel, body, sent, attempts, state, last_error, created_at, updated_at FROM outbox
		WHERE id >= ? AND id < ? ORDER BY created_at, rowid`
)

// PendingTurns implements store.Journal.
func (d *DB) PendingTurns(ctx context.Context) ([]store.PendingTurn, error) {
	var out []store.PendingTurn
	err := d.each(ctx, `SELECT key, body, attempts, at FROM pending_turns ORDER BY at, n`, nil, func(rows *sql.Rows) error {
		var p store.PendingTurn
		var at int64
		if err := rows.Scan(&p.Key, &p.Turn, &p.Attempts, &at); err != nil {
			return err
		}
		p.At = fromMillis(at)
		out = append(out, p)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("pending turns: %w", err)
	}
	return out, nil
}

// ResumeTurn implements store.Journal.
func (d *DB) ResumeTurn(ctx context.Context, key string) (int, error) {
	var n int
	err := d.row(ctx, `UPDATE pending_turns SET attempts = attempts + 1 WHERE key = ? RETURNING attempts`, []any{key}, &n)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return 0, nil
	case err != nil:
		return 0, fmt.Errorf("resume turn %s: %w", key, err)
	}
	return n, nil
}

// FinishTurn implements store.Journal. It does not wait for the writer:
// a crash that loses the deletion makes the next start resume the turn,
// which finds its reply in the outbox (committed before the reply was
// sent and again once the platform took it) and sends nothing again; a
// turn that had failed is tried once more.
func (d *DB) FinishTurn(ctx context.Context, keys ...string) error {
	if len(keys) == 0 {
		return nil
	}
	err := d.w.post(func(tx *sql.Conn) error {
		for _, k := range keys {
			if _, err := d.exec(ctx, tx, `DELETE FROM pending_turns WHERE key = ?`, k); err != nil {
				return err
			}
		}
		return nil
	}, several(len(keys)))
	if err != nil {
		return fmt.Errorf("finish turns %v: %w", keys, err)
	}
	return nil
}

// AddOutbox implements store.Outbox. It returns once the entry, and
// everything written before it (the turn's admission), is committed: a
// reply is never sent before the record that it is on its way.
func (d *DB) AddOutbox(ctx context.Context, e store.OutboxEntry) (bool, error) {
	body, err := json.Marshal(e.Out)
	if err != nil {
		return false, fmt.Errorf("outbox %s: %w", e.ID, err)
	}
	var n int64
	err = d.durableOne(ctx, func(tx *sql.Conn) error {
		t := millis(now())
		res, err := d.exec(ctx, tx, qAddOutbox, e.ID, string(e.Channel), string(e.Out.Account), e.Out.Peer.String(),
			string(body), string(store.OutboxPending), t, t)
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	if err != nil {
		return false, fmt.Errorf("outbox %s: %w", e.ID, err)
	}
	return n == 1, nil
}

// UpdateOutbox implements store.Outbox. It returns once the update is
// committed: the platform took a chunk the moment before, and only a
// crash within that moment can send it again.
func (d *DB) UpdateOutbox(ctx context.Context, id string, sent, attempts int, state store.OutboxState, lastErr string) error {
	err := d.durableOne(ctx, func(tx *sql.Conn) error {
		_, err := d.exec(ctx, tx, qUpdateOutbox, sent, attempts, string(state), lastErr, millis(now()), id)
		return err
	})
	if err != nil {
		return fmt.Errorf("outbox %s: %w", id, err)
	}
	return nil
}

// PendingOutbox implements store.Outbox.
func (d *DB) PendingOutbox(ctx context.Context, ch msg.ChannelID, acct msg.AccountID) ([]store.OutboxEntry, error) {
	var out []store.OutboxEntry
	err := d.each(ctx, qPendingOutbox, []any{string(ch), string(acct)}, func(rows *sql.Rows) error {
		e, err := scanOutbox(rows)
		if err != nil {
			return err
		}
		out = append(out, e)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("pending outbox: %w", err)
	}
	return out, nil
}

// scanOutbox reads one outbox row of the columns qPendingOutbox selects.
func scanOutbox(rows *sql.Rows) (store.OutboxEntry, error) {
	var e store.OutboxEntry
	var channel, body, state string
	var created, updated int64
	if err := rows.Scan(&e.ID, &channel, &body, &e.Sent, &e.Attempts, &state, &e.LastError, &created, &updated); err != nil {
		return e, err
	}
	if err := json.Unmarshal([]byte(body), &e.Out); err != nil {
		return e, fmt.Errorf("%s: %w", e.ID, err)
	}
	e.Channel, e.State = msg.ChannelID(channel), store.OutboxState(state)
	e.Created, e.Updated = fromMillis(created), fromMillis(updated)
	return e, nil
}

// HasOutbox implements store.Outbox.
func (d *DB) HasOutbox(ctx context.Context, prefix string) (bool, error) {
	var one int
	// The id range [prefix, prefix+U+10FFFF) holds every id starting with
	// prefix and uses the primary key's index, unlike LIKE.
	err := d.row(ctx, `SELECT 1 FROM outbox WHERE id >= ? AND id < ? LIMIT 1`, []any{prefix, prefix + "\U0010FFFF"}, &one)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("outbox %s*: %w", prefix, err)
	}
	return true, nil
}

// OutboxEntries implements store.Outbox.
func (d *DB) OutboxEntries(ctx context.Context, prefix string) ([]store.OutboxEntry, error) {
	var out []store.OutboxEntry
	err := d.each(ctx, qOutboxEntries, []any{prefix, prefix + "\U0010FFFF"}, func(rows *sql.Rows) error {
		e, err := scanOutbox(rows)
		if err != nil {
			return err
		}
		out = append(out, e)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("outbox %s*: %w", prefix, err)
	}
	return out, nil
}

// qPruneOutbox deletes the settled entries last updated before ?1 among
// those added before the first entry added from ?1 on: an entry is
// updated after it is added, so none added later qualifies, and the
// entries are visited in the order they were added (the rowid), the
// oldest first, without an index (see migration 16).
const qPruneOutbox = `DELETE FROM outbox
	WHERE rowid < coalesce((SELECT rowid FROM outbox WHERE created_at >= ?1 ORDER BY rowid LIMIT 1), 9223372036854775807)
	AND state != 'pending' AND updated_at < ?1`

// PruneOutbox implements store.Outbox.
func (d *DB) PruneOutbox(ctx context.Context, before time.Time) (int64, error) {
	res, err := d.exec(ctx, nil, qPruneOutbox, millis(before))
	if err != nil {
		return 0, fmt.Errorf("prune outbox: %w", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, fmt.Errorf("prune outbox: %w", err)
	}
	return n, nil
}

// Probe implements store.Store: one small write, in a transaction that
// must commit, tells a writable database from a read-only one, a full disk
// or a removed file.
func (d *DB) Probe(ctx context.Context) error {
	_, err := d.exec(ctx, nil, `INSERT INTO meta (key, value) VALUES ('probe', ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value`,
		now().Format(time.RFC3339Nano))
	if err == nil {
		err = d.fileGone()
	}
	if err != nil {
		d.health.Failed(err)
		return fmt.Errorf("store is not writable: %w", err)
	}
	d.health.OK()
	return nil
}

// Health reports the store's condition: the last write error, if the
// latest write failed.
func (d *DB) Health() error { return d.health.Last() }

// fileGone reports a database file that was removed (with its directory)
// while open: SQLite goes on writing to the unlinked file, and everything
// would be lost at the next start.
func (d *DB) fileGone() error {
	if d.path == "" || d.path == ":memory:" {
		return nil
	}
	if _, err := os.Stat(d.path); err != nil {
		return fmt.Errorf("the database file is gone: %w", err)
	}
	return nil
}
