package sqlite

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/pincerbot/pincer/internal/store"
)

// qNextTurn inserts a turn (?1 to ?8) as the next of session ?9's
// current generation, or nothing when there is no such session: its
// generation is then NULL, which the column refuses and OR IGNORE skips
// (the table has no other constraint a turn numbered so can break). The
// values are scalar subqueries, not an INSERT … SELECT: a SELECT that
// reads the table it inserts into is first copied into a temporary table
// (about a third of the statement's time, twice a turn).
const (
	qNextTurn = `INSERT OR IGNORE INTO turns (session_key, generation, seq, role, text, tool_calls, tool_call_id, partial, at, images, written_at)
		VALUES (?9, (SELECT generation FROM sessions WHERE key = ?9),
			(SELECT COALESCE(MAX(t.seq), 0) + 1 FROM sessions s JOIN turns t ON t.session_key = s.key AND t.generation = s.generation WHERE s.key = ?9),
			?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)`
	qAppendTurn = qNextTurn + `
		RETURNING seq`
	qInsertTurn = `INSERT INTO turns (session_key, generation, seq, role, text, tool_calls, tool_call_id, partial, at, images, written_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`
)

// AppendTurn implements store.Transcripts: one statement finds the
// session's generation and next sequence number and inserts the turn,
// marked with when it was written (by pincer's clock, not the message's,
// which idle resets rely on), which makes the session's last activity
// (see qSession).
func (d *DB) AppendTurn(ctx context.Context, key string, t store.Turn) (store.Turn, error) {
	if t.At.IsZero() {
		t.At = now()
	}
	t.At = t.At.Truncate(time.Millisecond)
	calls, images, err := store.TurnColumns(t)
	if err != nil {
		return t, fmt.Errorf("append turn to %s: %w", key, err)
	}
	err = d.w.do(func(tx *sql.Conn) error {
		err := d.queryRow(ctx, tx, qAppendTurn, string(t.Role), t.Text, calls, t.ToolCallID, t.Partial, millis(t.At), images, millis(now()), key).Scan(&t.Seq)
		if errors.Is(err, sql.ErrNoRows) {
			return store.ErrNotFound
		}
		return err
	}, false, false)
	if err != nil {
		return t, fmt.Errorf("append turn to %s: %w", key, err)
	}
	return t, nil
}

var _ store.TurnPoster = (*DB)(nil)

// PostTurn implements store.TurnPoster: AppendTurn handed to the writer
// without waiting for it.
func (d *DB) PostTurn(ctx context.Context, key string, t store.Turn) error {
	if t.At.IsZero() {
		t.At = now()
	}
	t.At = t.At.Truncate(time.Millisecond)
	calls, images, err := store.TurnColumns(t)
	if err != nil {
		return fmt.Errorf("post turn to %s: %w", key, err)
	}
	err = d.w.post(func(tx *sql.Conn) error {
		// Nobody reads the turn's number back, so the insert returns
		// nothing: SQLite gathers a RETURNING clause's rows in a temporary
		// table of their own.
		res, err := d.exec(ctx, tx, qNextTurn, string(t.Role), t.Text, calls, t.ToolCallID, t.Partial, millis(t.At), images, millis(now()), key)
		if err != nil {
			return fmt.Errorf("post turn to %s: %w", key, err)
		}
		if n, err := res.RowsAffected(); err != nil || n == 0 {
			return fmt.Errorf("post turn to %s: %w", key, cmp.Or(err, store.ErrNotFound))
		}
		return nil
	}, false)
	if err != nil {
		return fmt.Errorf("post turn to %s: %w", key, err)
	}
	return nil
}

// insertTurn writes t as turn seq of a generation, inside tx.
func (d *DB) insertTurn(ctx context.Context, tx *sql.Conn, key string, gen int, seq int64, t store.Turn) error {
	calls, images, err := store.TurnColumns(t)
	if err != nil {
		return err
	}
	if t.At.IsZero() {
		t.At = now()
	}
	_, err = d.exec(ctx, tx, qInsertTurn, key, gen, seq, string(t.Role), t.Text, calls, t.ToolCallID, t.Partial, millis(t.At), images, millis(now()))
	return err
}

// Transcript implements store.Transcripts.
func (d *DB) Transcript(ctx context.Context, key string) ([]store.Turn, error) {
	var out []store.Turn
	err := d.w.do(func(tx *sql.Conn) error {
		var err error
		out, err = d.transcriptIn(ctx, tx, key)
		return err
	}, false, false)
	if err != nil {
		return nil, fmt.Errorf("transcript of %s: %w", key, err)
	}
	return out, nil
}

const qTranscript = `
	SELECT t.seq, t.role, t.text, t.tool_calls, t.tool_call_id, t.partial, t.at, t.images
	FROM turns t JOIN sessions s ON s.key = t.session_key AND s.generation = t.generation
	WHERE t.session_key = ? ORDER BY t.seq`

// transcriptIn reads the current generation's turns inside a job's tx.
func (d *DB) transcriptIn(ctx context.Context, tx *sql.Conn, key string) ([]store.Turn, error) {
	var out []store.Turn
	err := d.eachIn(ctx, tx, qTranscript, []any{key}, func(rows *sql.Rows) error {
		t, err := scanTurn(rows)
		out = append(out, t)
		return err
	})
	return out, err
}

// scanTurn reads a row of qTranscript.
func scanTurn(rows *sql.Rows) (store.Turn, error) {
	var t store.Turn
	var role, calls, images string
	var at int64
	if err := rows.Scan(&t.Seq, &role, &t.Text, &calls, &t.ToolCallID, &t.Partial, &at, &images); err != nil {
		return t, err
	}
	t.Role, t.At = store.Role(role), fromMillis(at)
	return t, store.ReadTurnColumns(&t, calls, images)
}
