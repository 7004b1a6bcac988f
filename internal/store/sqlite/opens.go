package sqlite

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"hash/maphash"
	"net/url"
	"sync"

	"github.com/pincerbot/pincer/internal/store"
)

// Opening a session is on every turn's way to the model, and it waited
// for the writer, behind whatever batch the writer was committing. Now:
//
//   - a session whose key was never seen (its hash not held) is new: it is
//     made in memory, its row handed to the writer without waiting;
//   - a session none of whose writes is still to be committed is read on
//     a connection of its own, a reader of the write-ahead log, which sees
//     what was committed and never waits for the writer;
//   - any other (one with a write in a batch not committed yet, or whose
//     hash another key shares) is read by the writer, after the writes
//     handed in before, as before.
//
// The tables are the process's own (as the data directory is), so the
// sessions that exist and the writes still to be committed are all known
// here. Sessions are never deleted, so a held hash only ever means "may
// exist".

// sessionMirror knows the sessions (hashes of their keys) and the
// sessions with writes not committed yet.
type sessionMirror struct {
	mu    sync.Mutex
	seed  maphash.Seed
	known map[uint64]struct{}
	// pending counts, by session key, the writes handed in whose batch has
	// not committed; creating holds the new sessions whose row is being
	// handed in, closed once it is queued.
	pending  map[string]int
	creating map[string]chan struct{}
}

// loadSessions fills the mirror from the table.
func (d *DB) loadSessions(ctx context.Context) error {
	d.sessions.seed = maphash.MakeSeed()
	d.sessions.known = map[uint64]struct{}{}
	d.sessions.pending = map[string]int{}
	d.sessions.creating = map[string]chan struct{}{}
	rows, err := d.db.QueryContext(ctx, `SELECT key FROM sessions`)
	if err != nil {
		return fmt.Errorf("read sessions: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var key string
		if err := rows.Scan(&key); err != nil {
			return fmt.Errorf("read sessions: %w", err)
		}
		d.sessions.known[maphash.String(d.sessions.seed, key)] = struct{}{}
	}
	return rows.Err()
}

// openReaders opens the connections sessions are read on: deferred
// transactions (a reader takes no lock), and nothing they could write.
func (d *DB) openReaders(ctx context.Context, q url.Values) error {
	q.Set("_txlock", "deferred")
	q.Add("_pragma", "query_only(1)")
	db, err := sql.Open("sqlite", "file:"+(&url.URL{Path: d.path}).EscapedPath()+"?"+q.Encode())
	if err != nil {
		return fmt.Errorf("session readers: %w", err)
	}
	db.SetMaxOpenConns(2)
	db.SetMaxIdleConns(2)
	if d.readSession, err = db.PrepareContext(ctx, qSession); err == nil {
		d.readTranscript, err = db.PrepareContext(ctx, qTranscript)
	}
	if err != nil {
		db.Close()
		return fmt.Errorf("session readers: %w", err)
	}
	d.readers = db
	return nil
}

// writing notes a write of session key about to be handed in: the
// session is read by the writer until the write is over (its batch
// committed, or the write dropped unrun), when the writer runs the
// returned func (see job.over).
func (d *DB) writing(key string) (over func()) {
	d.sessions.mu.Lock()
	defer d.sessions.mu.Unlock()
	return d.pend(key)
}

// pend is writing with the mirror's lock held.
func (d *DB) pend(key string) (over func()) {
	d.sessions.pending[key]++
	return func() {
		d.sessions.mu.Lock()
		if d.sessions.pending[key]--; d.sessions.pending[key] <= 0 {
			delete(d.sessions.pending, key)
		}
		d.sessions.mu.Unlock()
	}
}

// sessionWrite runs fn, a write of session key, as a job (see writing).
func (d *DB) sessionWrite(key string, atomic bool, fn func(tx *sql.Conn) error) error {
	return d.w.doOver(fn, atomic, false, d.writing(key))
}

// open opens the session key for agentID (see the top of this file),
// with its transcript when transcript is set.
func (d *DB) open(ctx context.Context, key, agentID string, transcript bool) (s store.Session, created bool, turns []store.Turn, err error) {
	h := maphash.String(d.sessions.seed, key)
	d.sessions.mu.Lock()
	for {
		// A new session being made: its row is handed in first.
		queued, ok := d.sessions.creating[key]
		if !ok {
			break
		}
		d.sessions.mu.Unlock()
		<-queued
		d.sessions.mu.Lock()
	}
	_, known := d.sessions.known[h]
	if !known && d.health.Last() == nil {
		s, err = d.create(ctx, h, key, agentID)
		return s, err == nil, nil, err
	}
	clean := known && d.sessions.pending[key] == 0
	d.sessions.known[h] = struct{}{} // the writer makes it if it does not exist
	d.sessions.mu.Unlock()
	if clean {
		if s, turns, err = d.read(ctx, key, transcript); err == nil {
			return s, false, turns, nil
		}
		// Another key's hash, or a reader that failed: the writer decides.
	}
	err = d.sessionWrite(key, false, func(tx *sql.Conn) error {
		var err error
		if s, created, err = d.openIn(ctx, tx, key, agentID); err != nil || created || !transcript {
			return err
		}
		turns, err = d.transcriptIn(ctx, tx, key)
		return err
	})
	return s, created, turns, err
}

// create makes the new session key, whose hash h is not held, in memory
// and hands its row to the writer; the caller holds the mirror's lock,
// which create releases. The row is handed in without the lock (in a
// full queue that waits for the writer, which takes the lock as its
// batches end), and an open of the key meanwhile waits until it is
// queued, then finds the session pending and asks the writer, behind the
// row.
func (d *DB) create(ctx context.Context, h uint64, key, agentID string) (store.Session, error) {
	d.sessions.known[h] = struct{}{}
	over := d.pend(key)
	queued := make(chan struct{})
	d.sessions.creating[key] = queued
	d.sessions.mu.Unlock()
	t := millis(now())
	err := d.w.postOver(func(tx *sql.Conn) error {
		res, err := d.exec(ctx, tx, qInsertSession, key, agentID, t, t)
		if err != nil {
			return fmt.Errorf("open session %s: %w", key, err)
		}
		if n, err := res.RowsAffected(); err != nil || n == 0 {
			return fmt.Errorf("open session %s: %w", key, cmp.Or(err, errors.New("it existed though its key was not known")))
		}
		return nil
	}, false, over)
	d.sessions.mu.Lock()
	delete(d.sessions.creating, key)
	d.sessions.mu.Unlock()
	close(queued)
	if err != nil {
		return store.Session{}, fmt.Errorf("open session %s: %w", key, err)
	}
	return store.Session{Key: key, AgentID: agentID, Options: map[string]string{}, CreatedAt: fromMillis(t), UpdatedAt: fromMillis(t)}, nil
}

// read reads the session key, and its transcript when transcript is set,
// on a reader, in one read transaction.
func (d *DB) read(ctx context.Context, key string, transcript bool) (s store.Session, turns []store.Turn, err error) {
	ctx = quick(ctx)
	tx, err := d.readers.BeginTx(ctx, nil)
	if err != nil {
		return s, nil, err
	}
	defer tx.Rollback()
	if s, err = scanSession(tx.StmtContext(ctx, d.readSession).QueryRowContext(ctx, key)); err != nil || !transcript {
		return s, nil, err
	}
	rows, err := tx.StmtContext(ctx, d.readTranscript).QueryContext(ctx, key)
	if err != nil {
		return s, nil, err
	}
	defer rows.Close()
	for rows.Next() {
		t, err := scanTurn(rows)
		if err != nil {
			return s, nil, err
		}
		turns = append(turns, t)
	}
	return s, turns, rows.Err()
}
