package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"time"

	"github.com/pincerbot/pincer/internal/msg"
	"github.com/pincerbot/pincer/internal/trace"
)

var _ trace.Store = (*DB)(nil)

const qTraceRecord = `INSERT INTO traces (chat, msg, key, sender, preview, at, steps) VALUES (?, ?, ?, ?, ?, ?, ?)
	ON CONFLICT (chat, msg) DO UPDATE SET sender = excluded.sender, preview = excluded.preview, steps = excluded.steps`

// AddTraceRecords implements trace.Store: the records are written by one
// job of the writer's next batch, without waiting for it.
func (d *DB) AddTraceRecords(ctx context.Context, recs []trace.Record) error {
	type row struct {
		rec        trace.Record
		key, steps string
	}
	rows := make([]row, 0, len(recs))
	var buf []byte
	for _, r := range recs {
		key := string(r.Key.AppendJSON(buf[:0]))
		var err error
		if buf, err = trace.AppendStepsJSON(buf[:0], r.Steps); err != nil {
			return fmt.Errorf("trace of %s: %w", r.Key.ID, err)
		}
		rows = append(rows, row{r, key, string(buf)})
	}
	return d.w.post(func(tx *sql.Conn) error {
		for _, r := range rows {
			if _, err := d.exec(ctx, tx, qTraceRecord, r.rec.Chat, string(r.rec.Key.ID), r.key, r.rec.Sender, r.rec.Preview, millis(r.rec.At), r.steps); err != nil {
				return err
			}
		}
		return nil
	}, several(len(rows)))
}

// TraceRecords implements trace.Store.
func (d *DB) TraceRecords(ctx context.Context, chat string, id msg.MessageID, limit int) ([]trace.Record, error) {
	if limit <= 0 {
		limit = 50
	}
	q := `SELECT key, sender, preview, at, steps FROM traces WHERE chat = ? ORDER BY at DESC LIMIT ?`
	args := []any{chat, limit}
	if id != "" {
		q = `SELECT key, sender, preview, at, steps FROM traces WHERE chat = ? AND msg = ?`
		args = []any{chat, string(id)}
	}
	var out []trace.Record
	err := d.each(ctx, q, args, func(rows *sql.Rows) error {
		var key, steps string
		var at int64
		rec := trace.Record{Chat: chat}
		if err := rows.Scan(&key, &rec.Sender, &rec.Preview, &at, &steps); err != nil {
			return err
		}
		rec.At = fromMillis(at)
		if err := json.Unmarshal([]byte(key), &rec.Key); err != nil {
			return fmt.Errorf("trace key %q: %w", key, err)
		}
		if err := json.Unmarshal([]byte(steps), &rec.Steps); err != nil {
			return fmt.Errorf("trace steps of %s: %w", rec.Key.ID, err)
		}
		out = append(out, rec)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("traces of %s: %w", chat, err)
	}
	return out, nil
}

// qPruneTraces deletes the records begun before ?1 from the start of the
// table up to the first one begun since, which the table's order (the
// order records began in) makes a walk over the rows it deletes, not over
// the whole table. A record that began before ?1 but was stored after a
// newer one (its message's time was behind pincer's) stays until the
// records before it go.
const qPruneTraces = `DELETE FROM traces WHERE at < ?1 AND id < coalesce(
	(SELECT id FROM traces WHERE at >= ?1 ORDER BY id LIMIT 1),
	(SELECT coalesce(max(id), 0) + 1 FROM traces))`

// PruneTraces implements trace.Store.
func (d *DB) PruneTraces(ctx context.Context, before time.Time) error {
	if _, err := d.exec(ctx, nil, qPruneTraces, millis(before)); err != nil {
		return fmt.Errorf("prune traces: %w", err)
	}
	return nil
}
