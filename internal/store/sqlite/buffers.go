package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"

	"github.com/pincerbot/pincer/internal/msg"
	"github.com/pincerbot/pincer/internal/store"
)

const (
	qBuffer   = `INSERT INTO buffered (id, scope, kind, key, trigger, at, body) VALUES (?, ?, ?, ?, ?, ?, ?)`
	qUnbuffer = `DELETE FROM buffered WHERE id = ?`
)

// Buffer implements store.Buffers: the entries are numbered now and
// written by the writer's next batch, without waiting for it.
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
	err = d.w.post(func(tx *sql.Conn) error {
		for i, e := range entries {
			if _, err := d.exec(ctx, tx, qBuffer, ids[i], e.Scope, e.Kind, e.Key, string(e.Trigger), at, bodies[i]); err != nil {
				return err
			}
		}
		return nil
	}, len(entries) > 1)
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
	if err := d.w.post(func(tx *sql.Conn) error { return d.unbuffer(ctx, tx, ids) }, false); err != nil {
		return fmt.Errorf("unbuffer: %w", err)
	}
	return nil
}

func (d *DB) unbuffer(ctx context.Context, tx *sql.Conn, ids []int64) error {
	for _, id := range ids {
		if _, err := d.exec(ctx, tx, qUnbuffer, id); err != nil {
			return err
		}
	}
	return nil
}

// BufferedEntries implements store.Buffers.
func (d *DB) BufferedEntries(ctx context.Context, scope string) ([]store.Buffered, error) {
	var out []store.Buffered
	err := d.each(ctx, `SELECT id, kind, key, trigger, at, body FROM buffered WHERE scope = ? ORDER BY id`, []any{scope}, func(rows *sql.Rows) error {
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
	})
	if err != nil {
		return nil, fmt.Errorf("buffered entries of %s: %w", scope, err)
	}
	return out, nil
}
