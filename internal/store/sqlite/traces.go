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

// AddTraceSteps implements trace.Store: the steps are written by one job
// of the writer's next batch, without waiting for it.
func (d *DB) AddTraceSteps(ctx context.Context, steps []trace.Stored) error {
	type row struct {
		key string
		st  trace.Stored
	}
	rows := make([]row, 0, len(steps))
	keys := map[trace.Key]string{}
	for _, st := range steps {
		key, ok := keys[st.Record.Key]
		if !ok {
			b, err := json.Marshal(st.Record.Key)
			if err != nil {
				return fmt.Errorf("trace steps: %w", err)
			}
			key = string(b)
			keys[st.Record.Key] = key
		}
		rows = append(rows, row{key, st})
	}
	return d.w.post(func(tx *sql.Conn) error {
		for _, r := range rows {
			rec, s := r.st.Record, r.st.Step
			if _, err := d.exec(ctx, tx, qTraceStep, rec.Chat, string(rec.Key.ID), r.key, rec.Sender, rec.Preview, millis(s.At), s.Stage, s.Outcome, s.Detail); err != nil {
				return err
			}
		}
		return nil
	}, true)
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
