package sqlite

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"hash/maphash"
	"sync"

	"github.com/pincerbot/pincer/internal/store"
)

// Opening a session is on every turn's way to the model:
//
//   - a session whose key was never seen (its hash not held) is new: it is
//     made in memory, its row handed to the writer without waiting;
//   - any other is read by the writer, after the writes handed in before
//     (so with its own writes, committed or not), on the connection whose
//     page cache holds what the writer wrote last.
//
// A session known to exist was once read on a connection of its own, a
// reader of the write-ahead log, so as not to wait for the writer. At a
// trickle that cost more than the wait: SQLite drops a connection's whole
// page cache when it begins to read after another connection wrote, so
// every such read fetched the pages of both tables again from the files
// (about 275 µs of CPU a read by the profile of a steady run in which
// groups hear several @s, where the writer reads from its cache), and the
// wait for the writer it spared did not show in the latency of an @ (see
// docs/performance.md, "Measured at" the change).
//
// The tables are the process's own (as the data directory is), so the
// sessions that exist are all known here. Sessions are never deleted, so
// a held hash only ever means "may exist".

// sessionMirror knows the sessions (hashes of their keys) and the new
// sessions whose row is being handed in.
type sessionMirror struct {
	mu    sync.Mutex
	seed  maphash.Seed
	known map[uint64]struct{}
	// creating holds the new sessions whose row is being handed in,
	// closed once it is queued.
	creating map[string]chan struct{}
}

// loadSessions fills the mirror from the table.
func (d *DB) loadSessions(ctx context.Context) error {
	d.sessions.seed = maphash.MakeSeed()
	d.sessions.known = map[uint64]struct{}{}
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
	d.sessions.known[h] = struct{}{} // the writer makes it if it does not exist
	d.sessions.mu.Unlock()
	err = d.w.do(func(tx *sql.Conn) error {
		var err error
		if s, created, err = d.openIn(ctx, tx, key, agentID); err != nil || created || !transcript {
			return err
		}
		turns, err = d.transcriptIn(ctx, tx, key)
		return err
	}, false, false)
	return s, created, turns, err
}

// create makes the new session key, whose hash h is not held, in memory
// and hands its row to the writer; the caller holds the mirror's lock,
// which create releases. The row is handed in without the lock (a full
// queue waits for the writer), and an open of the key meanwhile waits
// until it is queued, then asks the writer, behind the row.
func (d *DB) create(ctx context.Context, h uint64, key, agentID string) (store.Session, error) {
	d.sessions.known[h] = struct{}{}
	queued := make(chan struct{})
	d.sessions.creating[key] = queued
	d.sessions.mu.Unlock()
	t := millis(now())
	err := d.w.post(func(tx *sql.Conn) error {
		res, err := d.exec(ctx, tx, qInsertSession, key, agentID, t, t)
		if err != nil {
			return fmt.Errorf("open session %s: %w", key, err)
		}
		if n, err := res.RowsAffected(); err != nil || n == 0 {
			return fmt.Errorf("open session %s: %w", key, cmp.Or(err, errors.New("it existed though its key was not known")))
		}
		return nil
	}, false)
	d.sessions.mu.Lock()
	delete(d.sessions.creating, key)
	d.sessions.mu.Unlock()
	close(queued)
	if err != nil {
		return store.Session{}, fmt.Errorf("open session %s: %w", key, err)
	}
	return store.Session{Key: key, AgentID: agentID, Options: map[string]string{}, CreatedAt: fromMillis(t), UpdatedAt: fromMillis(t)}, nil
}
