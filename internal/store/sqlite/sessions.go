package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/pincerbot/pincer/internal/store"
)

// Queries that run inside transactions are prepared when the database
// opens (see txQueries), since a transaction holds the only connection.
const (
	// A session was last active when it changed or when its last turn was
	// written, whichever is later (see migration 15).
	qSession = `SELECT s.key, s.agent_id, s.model_override, s.generation, s.created_at,
		max(s.updated_at, coalesce((SELECT t.written_at FROM turns t WHERE t.session_key = s.key AND t.generation = s.generation
			ORDER BY t.seq DESC LIMIT 1), 0)),
		s.options FROM sessions s WHERE s.key = ?`
	qBumpGeneration = `UPDATE sessions SET generation = generation + 1, updated_at = ? WHERE key = ?`
	qInsertReset    = `INSERT INTO session_resets (session_key, generation, at, reason) VALUES (?, ?, ?, ?)`
	qInsertSession  = `INSERT INTO sessions (key, agent_id, created_at, updated_at) VALUES (?, ?, ?, ?) ON CONFLICT (key) DO NOTHING`
	qCreateSession  = qInsertSession + ` RETURNING key, agent_id, model_override, generation, created_at, updated_at, options`
)

func scanSession(row interface{ Scan(...any) error }) (store.Session, error) {
	var s store.Session
	var created, updated int64
	var options string
	err := row.Scan(&s.Key, &s.AgentID, &s.ModelOverride, &s.Generation, &created, &updated, &options)
	if errors.Is(err, sql.ErrNoRows) {
		return s, store.ErrNotFound
	}
	if err != nil {
		return s, err
	}
	s.CreatedAt, s.UpdatedAt = fromMillis(created), fromMillis(updated)
	s.Options, err = store.SessionOptions(options)
	return s, err
}

// OpenSession implements store.Sessions, without waiting for the writer
// when it need not (see opens.go).
func (d *DB) OpenSession(ctx context.Context, key, agentID string) (store.Session, bool, error) {
	s, created, _, err := d.open(ctx, key, agentID, false)
	if err != nil {
		return store.Session{}, false, fmt.Errorf("open session %s: %w", key, err)
	}
	return s, created, nil
}

// OpenWithTranscript implements store.Sessions: the session and its
// transcript are read in one step, without waiting for the writer when
// they need not (see opens.go).
func (d *DB) OpenWithTranscript(ctx context.Context, key, agentID string) (store.Session, bool, []store.Turn, error) {
	s, created, turns, err := d.open(ctx, key, agentID, true)
	if err != nil {
		return store.Session{}, false, nil, fmt.Errorf("open session %s: %w", key, err)
	}
	return s, created, turns, nil
}

// openIn looks the session up and inserts it when it is new, inside a
// job's tx. It writes one statement at most (see several).
func (d *DB) openIn(ctx context.Context, tx *sql.Conn, key, agentID string) (s store.Session, created bool, err error) {
	// Most calls find the session, so look before inserting.
	if s, err = scanSession(d.queryRow(ctx, tx, qSession, key)); !errors.Is(err, store.ErrNotFound) {
		return s, false, err
	}
	// The insert returns the row it made: one statement, not a second
	// look-up. It makes none only when the session exists after all.
	t := millis(now())
	s, err = scanSession(d.queryRow(ctx, tx, qCreateSession, key, agentID, t, t))
	if !errors.Is(err, store.ErrNotFound) {
		return s, err == nil, err
	}
	s, err = scanSession(d.queryRow(ctx, tx, qSession, key))
	return s, false, err
}

// Session implements store.Sessions.
func (d *DB) Session(ctx context.Context, key string) (store.Session, error) {
	var s store.Session
	err := d.w.do(func(tx *sql.Conn) error {
		var err error
		s, err = scanSession(d.queryRow(ctx, tx, qSession, key))
		return err
	}, false, false)
	if err != nil {
		return s, fmt.Errorf("session %s: %w", key, err)
	}
	return s, nil
}

// SetModelOverride implements store.Sessions.
func (d *DB) SetModelOverride(ctx context.Context, key, model string) error {
	var res sql.Result
	err := d.w.do(func(tx *sql.Conn) error {
		var err error
		res, err = d.exec(ctx, tx, `UPDATE sessions SET model_override = ?, updated_at = ? WHERE key = ?`, model, millis(now()), key)
		return err
	}, false, false)
	if err != nil {
		return fmt.Errorf("set model of %s: %w", key, err)
	}
	return mustAffect(res, "session "+key)
}

// SetSessionOption implements store.Sessions.
func (d *DB) SetSessionOption(ctx context.Context, key, name, value string) error {
	var res sql.Result
	err := d.w.do(func(tx *sql.Conn) error {
		var err error
		if value == "" {
			res, err = d.exec(ctx, tx, `UPDATE sessions SET options = json_remove(options, '$.' || json_quote(?)), updated_at = ? WHERE key = ?`, name, millis(now()), key)
		} else {
			res, err = d.exec(ctx, tx, `UPDATE sessions SET options = json_set(options, '$.' || json_quote(?), ?), updated_at = ? WHERE key = ?`, name, value, millis(now()), key)
		}
		return err
	}, false, false)
	if err != nil {
		return fmt.Errorf("set option %s of %s: %w", name, key, err)
	}
	return mustAffect(res, "session "+key)
}

// ResetSession implements store.Sessions.
func (d *DB) ResetSession(ctx context.Context, key, reason string) (store.Session, error) {
	var s store.Session
	err := d.w.do(func(tx *sql.Conn) error {
		var err error
		s, err = d.reset(ctx, tx, key, reason)
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
	err := d.w.do(func(tx *sql.Conn) error {
		var err error
		if s, err = d.reset(ctx, tx, key, "compact"); err != nil {
			return err
		}
		turns := append([]store.Turn{{Role: store.RoleSummary, Text: summary}}, keep...)
		for i, t := range turns {
			if err := d.insertTurn(ctx, tx, key, s.Generation, int64(i+1), t); err != nil {
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

// reset starts a new generation inside tx.
func (d *DB) reset(ctx context.Context, tx *sql.Conn, key, reason string) (store.Session, error) {
	var s store.Session
	err := func() error {
		t := millis(now())
		res, err := d.exec(ctx, tx, qBumpGeneration, t, key)
		if err != nil {
			return err
		}
		if err := mustAffect(res, "session "+key); err != nil {
			return err
		}
		if s, err = scanSession(d.queryRow(ctx, tx, qSession, key)); err != nil {
			return err
		}
		_, err = d.exec(ctx, tx, qInsertReset, key, s.Generation, t, reason)
		return err
	}()
	return s, err
}

// Resets implements store.Sessions.
func (d *DB) Resets(ctx context.Context, key string) ([]store.Reset, error) {
	var out []store.Reset
	err := d.each(ctx, `SELECT generation, at, reason FROM session_resets WHERE session_key = ? ORDER BY generation`, []any{key}, func(rows *sql.Rows) error {
		var r store.Reset
		var at int64
		if err := rows.Scan(&r.Generation, &at, &r.Reason); err != nil {
			return err
		}
		r.At = fromMillis(at)
		out = append(out, r)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("resets of %s: %w", key, err)
	}
	return out, nil
}

func mustAffect(res sql.Result, what string) error {
	n, err := res.RowsAffected()
	if err != nil {
		return err
	}
	if n == 0 {
		return fmt.Errorf("%s: %w", what, store.ErrNotFound)
	}
	return nil
}
