package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/pincerbot/pincer/internal/store"
)

const (
	qSession        = `SELECT key, agent_id, model_override, generation, created_at, updated_at, options::text FROM sessions WHERE key = $1`
	qBumpGeneration = `UPDATE sessions SET generation = generation + 1, updated_at = $1 WHERE key = $2`
	qInsertReset    = `INSERT INTO session_resets (session_key, generation, at, reason) VALUES ($1, $2, $3, $4)`
	qInsertSession  = `INSERT INTO sessions (key, agent_id, created_at, updated_at) VALUES ($1, $2, $3, $4) ON CONFLICT (key) DO NOTHING`
)

func scanSession(row pgx.Row) (store.Session, error) {
	var s store.Session
	var created, updated int64
	var options string
	err := row.Scan(&s.Key, &s.AgentID, &s.ModelOverride, &s.Generation, &created, &updated, &options)
	if errors.Is(err, pgx.ErrNoRows) {
		return s, store.ErrNotFound
	}
	if err != nil {
		return s, err
	}
	s.CreatedAt, s.UpdatedAt = fromMillis(created), fromMillis(updated)
	s.Options, err = store.SessionOptions(options)
	return s, err
}

// OpenSession implements store.Sessions.
func (d *DB) OpenSession(ctx context.Context, key, agentID string) (store.Session, bool, error) {
	var s store.Session
	created := false
	err := d.w.do(func(ctx context.Context, tx pgx.Tx) error {
		var err error
		s, created, err = openIn(ctx, tx, key, agentID)
		return err
	}, true, false)
	if err != nil {
		return store.Session{}, false, fmt.Errorf("open session %s: %w", key, err)
	}
	return s, created, nil
}

// OpenWithTranscript implements store.Sessions.
func (d *DB) OpenWithTranscript(ctx context.Context, key, agentID string) (store.Session, bool, []store.Turn, error) {
	var s store.Session
	var turns []store.Turn
	created := false
	err := d.w.do(func(ctx context.Context, tx pgx.Tx) error {
		var err error
		if s, created, err = openIn(ctx, tx, key, agentID); err != nil || created {
			return err
		}
		turns, err = transcriptIn(ctx, tx, key)
		return err
	}, true, false)
	if err != nil {
		return store.Session{}, false, nil, fmt.Errorf("open session %s: %w", key, err)
	}
	return s, created, turns, nil
}

// openIn reads the session for key, creating it when it does not exist.
func openIn(ctx context.Context, tx pgx.Tx, key, agentID string) (s store.Session, created bool, err error) {
	if s, err = scanSession(tx.QueryRow(ctx, qSession, key)); !errors.Is(err, store.ErrNotFound) {
		return s, false, err
	}
	t := millis(now())
	tag, err := tx.Exec(ctx, qInsertSession, key, agentID, t, t)
	if err != nil {
		return s, false, err
	}
	s, err = scanSession(tx.QueryRow(ctx, qSession, key))
	return s, tag.RowsAffected() == 1, err
}

// Session implements store.Sessions.
func (d *DB) Session(ctx context.Context, key string) (store.Session, error) {
	var s store.Session
	err := d.w.do(func(ctx context.Context, tx pgx.Tx) error {
		var err error
		s, err = scanSession(tx.QueryRow(ctx, qSession, key))
		return err
	}, false, false)
	if err != nil {
		return s, fmt.Errorf("session %s: %w", key, err)
	}
	return s, nil
}

// update runs one statement that must touch the session key.
func (d *DB) update(key, query string, args ...any) error {
	return d.w.do(func(ctx context.Context, tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, query, args...)
		if err != nil {
			return err
		}
		return mustAffect(tag, "session "+key)
	}, true, false)
}

// SetModelOverride implements store.Sessions.
func (d *DB) SetModelOverride(ctx context.Context, key, model string) error {
	if err := d.update(key, `UPDATE sessions SET model_override = $1, updated_at = $2 WHERE key = $3`, model, millis(now()), key); err != nil {
		return fmt.Errorf("set model of %s: %w", key, err)
	}
	return nil
}

// SetSessionOption implements store.Sessions.
func (d *DB) SetSessionOption(ctx context.Context, key, name, value string) error {
	var err error
	if value == "" {
		err = d.update(key, `UPDATE sessions SET options = options - $1::text, updated_at = $2 WHERE key = $3`, name, millis(now()), key)
	} else {
		err = d.update(key, `UPDATE sessions SET options = options || jsonb_build_object($1::text, $2::text), updated_at = $3 WHERE key = $4`, name, value, millis(now()), key)
	}
	if err != nil {
		return fmt.Errorf("set option %s of %s: %w", name, key, err)
	}
	return nil
}

// ResetSession implements store.Sessions.
func (d *DB) ResetSession(ctx context.Context, key, reason string) (store.Session, error) {
	var s store.Session
	err := d.w.do(func(ctx context.Context, tx pgx.Tx) error {
		var err error
		s, err = reset(ctx, tx, key, reason)
		return err
	}, true, false)
	if err != nil {
		return store.Session{}, fmt.Errorf("reset session %s: %w", key, err)
	}
	return s, nil
}

// CompactSession implements store.Sessions.
func (d *DB) CompactSession(ctx context.Context, key, summary string, keep []store.Turn) (store.Session, error) {
	var s store.Session
	err := d.w.do(func(ctx context.Context, tx pgx.Tx) error {
		var err error
		if s, err = reset(ctx, tx, key, "compact"); err != nil {
			return err
		}
		turns := append([]store.Turn{{Role: store.RoleSummary, Text: summary}}, keep...)
		for i, t := range turns {
			if err := insertTurn(ctx, tx, key, s.Generation, int64(i+1), t); err != nil {
				return err
			}
		}
		return nil
	}, true, false)
	if err != nil {
		return store.Session{}, fmt.Errorf("compact session %s: %w", key, err)
	}
	return s, nil
}

// reset starts the session's next generation and records why.
func reset(ctx context.Context, tx pgx.Tx, key, reason string) (store.Session, error) {
	t := millis(now())
	tag, err := tx.Exec(ctx, qBumpGeneration, t, key)
	if err != nil {
		return store.Session{}, err
	}
	if err := mustAffect(tag, "session "+key); err != nil {
		return store.Session{}, err
	}
	s, err := scanSession(tx.QueryRow(ctx, qSession, key))
	if err != nil {
		return s, err
	}
	_, err = tx.Exec(ctx, qInsertReset, key, s.Generation, t, reason)
	return s, err
}

// Resets implements store.Sessions.
func (d *DB) Resets(ctx context.Context, key string) ([]store.Reset, error) {
	var out []store.Reset
	err := d.w.do(func(ctx context.Context, tx pgx.Tx) error {
		rows, _ := tx.Query(ctx, `SELECT generation, at, reason FROM session_resets WHERE session_key = $1 ORDER BY generation`, key)
		var err error
		out, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (store.Reset, error) {
			var r store.Reset
			var at int64
			err := row.Scan(&r.Generation, &at, &r.Reason)
			r.At = fromMillis(at)
			return r, err
		})
		return err
	}, false, false)
	if err != nil {
		return nil, fmt.Errorf("resets of %s: %w", key, err)
	}
	return out, nil
}

func mustAffect(tag pgconn.CommandTag, what string) error {
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("%s: %w", what, store.ErrNotFound)
	}
	return nil
}

const (
	qNextTurn = `INSERT INTO turns (session_key, generation, seq, role, text, tool_calls, tool_call_id, partial, at, images)
		SELECT s.key, s.generation,
			COALESCE((SELECT MAX(t.seq) FROM turns t WHERE t.session_key = s.key AND t.generation = s.generation), 0) + 1,
			$1, $2, $3, $4, $5, $6, $7
		FROM sessions s WHERE s.key = $8`
	qAppendTurn   = qNextTurn + ` RETURNING seq`
	qTouchSession = `UPDATE sessions SET updated_at = $1 WHERE key = $2`
	qInsertTurn   = `INSERT INTO turns (session_key, generation, seq, role, text, tool_calls, tool_call_id, partial, at, images) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`
)

// AppendTurn implements store.Transcripts.
func (d *DB) AppendTurn(ctx context.Context, key string, t store.Turn) (store.Turn, error) {
	if t.At.IsZero() {
		t.At = now()
	}
	t.At = t.At.Truncate(time.Millisecond)
	calls, images, err := store.TurnColumns(t)
	if err != nil {
		return t, fmt.Errorf("append turn to %s: %w", key, err)
	}
	err = d.w.do(func(ctx context.Context, tx pgx.Tx) error {
		err := tx.QueryRow(ctx, qAppendTurn, string(t.Role), t.Text, calls, t.ToolCallID, t.Partial, millis(t.At), images, key).Scan(&t.Seq)
		if errors.Is(err, pgx.ErrNoRows) {
			return store.ErrNotFound
		}
		if err != nil {
			return err
		}
		_, err = tx.Exec(ctx, qTouchSession, millis(now()), key)
		return err
	}, true, false)
	if err != nil {
		return t, fmt.Errorf("append turn to %s: %w", key, err)
	}
	return t, nil
}

var _ store.TurnPoster = (*DB)(nil)

// PostTurn implements store.TurnPoster: the append goes with the posted
// writes; a session that is gone is reported to the log.
func (d *DB) PostTurn(ctx context.Context, key string, t store.Turn) error {
	if t.At.IsZero() {
		t.At = now()
	}
	t.At = t.At.Truncate(time.Millisecond)
	calls, images, err := store.TurnColumns(t)
	if err != nil {
		return fmt.Errorf("post turn to %s: %w", key, err)
	}
	err = d.w.post(
		stmt{sql: qNextTurn, args: []any{string(t.Role), t.Text, calls, t.ToolCallID, t.Partial, millis(t.At), images, key},
			check: func(tag pgconn.CommandTag) error {
				if tag.RowsAffected() == 0 {
					return fmt.Errorf("post turn to %s: %w", key, store.ErrNotFound)
				}
				return nil
			}},
		stmt{sql: qTouchSession, args: []any{millis(now()), key}})
	if err != nil {
		return fmt.Errorf("post turn to %s: %w", key, err)
	}
	return nil
}

func insertTurn(ctx context.Context, tx pgx.Tx, key string, gen int, seq int64, t store.Turn) error {
	calls, images, err := store.TurnColumns(t)
	if err != nil {
		return err
	}
	if t.At.IsZero() {
		t.At = now()
	}
	_, err = tx.Exec(ctx, qInsertTurn, key, gen, seq, string(t.Role), t.Text, calls, t.ToolCallID, t.Partial, millis(t.At), images)
	return err
}

// Transcript implements store.Transcripts.
func (d *DB) Transcript(ctx context.Context, key string) ([]store.Turn, error) {
	var out []store.Turn
	err := d.w.do(func(ctx context.Context, tx pgx.Tx) error {
		var err error
		out, err = transcriptIn(ctx, tx, key)
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
	WHERE t.session_key = $1 ORDER BY t.seq`

func transcriptIn(ctx context.Context, tx pgx.Tx, key string) ([]store.Turn, error) {
	rows, _ := tx.Query(ctx, qTranscript, key)
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (store.Turn, error) {
		var t store.Turn
		var role, calls, images string
		var at int64
		if err := row.Scan(&t.Seq, &role, &t.Text, &calls, &t.ToolCallID, &t.Partial, &at, &images); err != nil {
			return t, err
		}
		t.Role, t.At = store.Role(role), fromMillis(at)
		if err := store.ReadTurnColumns(&t, calls, images); err != nil {
			return t, err
		}
		return t, nil
	})
}
