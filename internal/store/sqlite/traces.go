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

const qTraceStep = `INSERT INTO trace_steps (chat, msg, key, sender, preview, at, stage, outcome, detail) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`

// AddTraceStep implements trace.Store: the step is written by the
// writer's next batch, without waiting for it.
func (d *DB) AddTraceStep(ctx context.Context, r trace.Record, s trace.Step) error {
	key, err := json.Marshal(r.Key)
	if err != nil {
		return fmt.Errorf("trace step: %w", err)
	}
	return d.w.post(func(tx *sql.Conn) error {
		_, err := d.exec(ctx, tx, qTraceStep, r.Chat, string(r.Key.ID), string(key), r.Sender, r.Preview, millis(s.At), s.Stage, s.Outcome, s.Detail)
		return err
	}, false)
}

// TraceRecords implements trace.Store.
func (d *DB) TraceRecords(ctx context.Context, chat string, id msg.MessageID, limit int) ([]trace.Record, error) {
	if limit <= 0 {
		limit = 50
	}
	// The newest messages of the chat first, then all their steps.
	q := `SELECT msg, key, sender, preview, at, stage, outcome, detail FROM trace_steps
		WHERE chat = ? AND msg IN (SELECT msg FROM trace_steps WHERE chat = ? GROUP BY msg ORDER BY max(id) DESC LIMIT ?)
		ORDER BY id`
	args := []any{chat, chat, limit}
	if id != "" {
		q = `SELECT msg, key, sender, preview, at, stage, outcome, detail FROM trace_steps WHERE chat = ? AND msg = ? ORDER BY id`
		args = []any{chat, string(id)}
	}
	byMsg := map[string]*trace.Record{}
	var order []string
	err := d.each(ctx, q, args, func(rows *sql.Rows) error {
		var m, key, sender, preview string
		var at int64
		var s trace.Step
		if err := rows.Scan(&m, &key, &sender, &preview, &at, &s.Stage, &s.Outcome, &s.Detail); err != nil {
			return err
		}
		s.At = fromMillis(at)
		rec := byMsg[m]
		if rec == nil {
			rec = &trace.Record{Chat: chat, At: s.At}
			if err := json.Unmarshal([]byte(key), &rec.Key); err != nil {
				return fmt.Errorf("trace key %q: %w", key, err)
			}
			byMsg[m] = rec
			order = append(order, m)
		}
		if sender != "" {
			rec.Sender = sender
		}
		if preview != "" {
			rec.Preview = preview
		}
		rec.Steps = append(rec.Steps, s)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("traces of %s: %w", chat, err)
	}
	out := make([]trace.Record, 0, len(order))
	for i := len(order) - 1; i >= 0; i-- {
		out = append(out, *byMsg[order[i]])
	}
	return out, nil
}

// PruneTraces implements trace.Store.
func (d *DB) PruneTraces(ctx context.Context, before time.Time) error {
	if _, err := d.exec(ctx, nil, `DELETE FROM trace_steps WHERE at < ?`, millis(before)); err != nil {
		return fmt.Errorf("prune traces: %w", err)
	}
	return nil
}
