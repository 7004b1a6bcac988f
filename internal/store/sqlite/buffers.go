package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/pincerbot/pincer/internal/msg"
	"github.com/pincerbot/pincer/internal/store"
)

const (
	qBuffer   = `INSERT INTO buffered (id, scope, kind, key, trigger, at, body) VALUES (?, ?, ?, ?, ?, ?, ?)`
	qUnbuffer = `DELETE FROM buffered WHERE id = ?`
)

// Buffered entries are written as the writer's batch commits, not when
// they are handed in: the entry of a message that triggers a turn is taken
// out again by the turn's admission (see AdmitTurn) a fraction of a
// millisecond later, usually in the same batch, and an entry taken out
// before its batch commits is never written at all. It was an insert and
// a delete, and a page of the table and one of its index written, for
// every turn. A crash keeps or loses an entry with the rest of its batch,
// as before: the message's log entry is in that batch too (see
// LogInboundBuffered).

// heldEntry is a buffered entry handed in and not written yet.
type heldEntry struct {
	id                        int64
	scope, kind, key, trigger string
	at                        int64
	body                      string
}

// hold keeps e for the batch's commit (see flushHeld). The writer calls it.
func (d *DB) hold(e heldEntry) { d.held = append(d.held, e) }

// flushHeld writes the held entries, inside tx. Those it could not write
// stay held, for the next batch. The writer calls it, before anything
// reads the table and as the batch commits.
func (d *DB) flushHeld(tx *sql.Conn) error {
	ctx := context.Background()
	for i, e := range d.held {
		if _, err := d.exec(ctx, tx, qBuffer, e.id, e.scope, e.kind, e.key, e.trigger, e.at, e.body); err != nil {
			d.held = slices.Delete(d.held, 0, i)
			return fmt.Errorf("buffered entry %d: %w", e.id, err)
		}
	}
	clear(d.held)
	d.held = d.held[:0]
	return nil
}

// beforeCommit is the writer's last step of every batch: the held entries
// are written, then the chats' ends (see saveChains).
func (d *DB) beforeCommit(tx *sql.Conn) error {
	return errors.Join(d.flushHeld(tx), d.saveChains(tx), d.foldTokens(tx, false))
}

// Buffer implements store.Buffers: the entries are numbered now and
// written as the writer's next batch commits, without waiting for it.
func (d *DB) Buffer(ctx context.Context, entries []store.Buffered) ([]int64, error) {
	bodies, err := store.BufferedBodies(entries)
	if err != nil {
		return nil, err
	}
	ids := make([]int64, len(entries))
	for i := range ids {
		ids[i] = d.bufferID.Add(1)
	}
	at := millis(now())
	err = d.w.post(func(*sql.Conn) error {
		for i, e := range entries {
			d.hold(heldEntry{id: ids[i], scope: e.Scope, kind: e.Kind, key: e.Key, trigger: string(e.Trigger), at: at, body: bodies[i]})
		}
		return nil
	}, false)
	if err != nil {
		return nil, fmt.Errorf("buffer: %w", err)
	}
	return ids, nil
}

// Unbuffer implements store.Buffers, without waiting for the removal.
func (d *DB) Unbuffer(ctx context.Context, ids []int64) error {
	if len(ids) == 0 {
		return nil
	}
	err := d.w.post(func(tx *sql.Conn) error {
		held, err := d.unbuffer(ctx, tx, ids)
		d.drop(held)
		return err
	}, false)
	if err != nil {
		return fmt.Errorf("unbuffer: %w", err)
	}
	return nil
}

// unbuffer deletes the entries ids that are written, inside tx, and
// returns those still held, for the caller to drop once its job has
// nothing left that could fail.
func (d *DB) unbuffer(ctx context.Context, tx *sql.Conn, ids []int64) (held []int64, err error) {
	for _, id := range ids {
		if slices.ContainsFunc(d.held, func(e heldEntry) bool { return e.id == id }) {
			held = append(held, id)
			continue
		}
		if _, err := d.exec(ctx, tx, qUnbuffer, id); err != nil {
			return nil, err
		}
	}
	return held, nil
}

// drop forgets held entries: they are never written.
func (d *DB) drop(ids []int64) {
	if len(ids) == 0 {
		return
	}
	d.held = slices.DeleteFunc(d.held, func(e heldEntry) bool { return slices.Contains(ids, e.id) })
}

// BufferedEntries implements store.Buffers.
func (d *DB) BufferedEntries(ctx context.Context, scope string) ([]store.Buffered, error) {
	var out []store.Buffered
	read := func(rows *sql.Rows) error {
		e := store.Buffered{Scope: scope}
		var at int64
		var trigger, body string
		if err := rows.Scan(&e.ID, &e.Kind, &e.Key, &trigger, &at, &body); err != nil {
			return err
		}
		if err := json.Unmarshal([]byte(body), &e.Message); err != nil {
			return fmt.Errorf("entry %d: %w", e.ID, err)
		}
		e.Trigger, e.At = msg.TriggerReason(trigger), fromMillis(at)
		out = append(out, e)
		return nil
	}
	err := d.w.do(func(tx *sql.Conn) error {
		if err := d.flushHeld(tx); err != nil {
			return err
		}
		return d.eachIn(ctx, tx, `SELECT id, kind, key, trigger, at, body FROM buffered WHERE scope = ? ORDER BY id`, []any{scope}, read)
	}, false, false)
	if err != nil {
		return nil, fmt.Errorf("buffered entries of %s: %w", scope, err)
	}
	return out, nil
}
