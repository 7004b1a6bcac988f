// Package postgres implements store.Store on a PostgreSQL server, with
// github.com/jackc/pgx/v5 and embedded migrations.
//
// # Durability
//
// The contract is the SQLite store's. One writer goroutine runs every
// statement, in the order callers hand them in, inside a transaction on
// one connection of the pool, and commits it once the batch is
// maxBatchAge old or holds maxBatch jobs, or at once when a caller waits
// for the commit (see writer.go):
//
//   - Reads see every write handed in before them: they run in the same
//     transaction, after those writes.
//   - AddOutbox, UpdateOutbox and Probe return once their write, and
//     every write handed in before it, is committed.
//   - The other calls that write return once their job ran, before the
//     commit; the writes of the ingest path (LogInbound and its kin,
//     Buffer, Unbuffer, RecordSent, AddTokens, FinishTurn, PostTurn,
//     CompleteInbound, traces) do not even wait for that: they are queued
//     and sent to the server together, a batch's worth in one round trip.
//     Their failures go to the log and to Health, not to the caller.
//
// After a crash (of pincer or of the server), at most the last batch —
// maxBatchAge of work — can be missing. A batch that fails on the server
// (a lost connection, a statement the server refuses) is rolled back
// whole: its posted writes are lost with it, logged, and the jobs that
// wait for its commit are told.
//
// # Several pincers on one database
//
// Nothing the store answers from is kept only in memory: the inbound
// log, its views and marks, the sent ids and the counters are read from
// the database. Log entries and buffered entries are numbered from
// sequences, a block at a time, so two processes never hand out the same
// number; migrations take a PostgreSQL advisory lock, so instances that
// start together migrate once. What still assumes one writer per chat or
// session is listed in docs/postgres.md.
package postgres

import (
	"context"
	"embed"
	"fmt"
	"io/fs"
	"log/slog"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"

	"github.com/pincerbot/pincer/internal/store"
)

//go:embed migrations/*.sql
var migrations embed.FS

// Options tune Open.
type Options struct {
	// Logger receives the failures of writes nobody waits for (the
	// inbound log, buffered entries); they also show in Health.
	Logger *slog.Logger
	// Schema, when set, is the schema the store's tables live in (it is
	// created when missing); else the connection's search_path decides.
	Schema string
}

// DB is a store.Store backed by a PostgreSQL database.
type DB struct {
	pool *pgxpool.Pool
	w    *writer
	// health is the outcome of the latest write.
	health store.WriteHealth
	// seq and bufferID hand out the numbers of log entries and buffered
	// entries from the database's sequences (see numbers.go).
	seq, bufferID *numbers
	log           *slog.Logger
	closeOnce     sync.Once
}

var _ store.Store = (*DB)(nil)

// Open connects to the database dsn names (a postgres:// URL or a
// key=value string) and applies pending migrations.
func Open(ctx context.Context, dsn string, opts Options) (*DB, error) {
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("postgres: dsn: %w", err)
	}
	if opts.Schema != "" {
		cfg.ConnConfig.RuntimeParams["search_path"] = opts.Schema
	}
	if cfg.ConnConfig.ConnectTimeout == 0 {
		// The writer waits for a connection before each batch: a server
		// that does not answer fails the batch in time rather than
		// holding every caller for the system's TCP timeout.
		cfg.ConnConfig.ConnectTimeout = connectTimeout
	}
	if err := migrate(ctx, cfg.ConnConfig, opts.Schema); err != nil {
		return nil, fmt.Errorf("postgres: migrate: %w", err)
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("postgres: connect: %w", err)
	}
	d := &DB{pool: pool, log: opts.Logger}
	d.health.NoRows = pgx.ErrNoRows
	if d.log == nil {
		d.log = slog.New(slog.DiscardHandler)
	}
	d.seq = &numbers{pool: pool, sequence: "message_seq", block: 100}
	d.bufferID = &numbers{pool: pool, sequence: "buffered_id_seq", block: 100}
	d.w = newWriter(pool, d.note, d.writeFailed)
	if err := d.Probe(ctx); err != nil {
		d.Close()
		return nil, fmt.Errorf("postgres: %w", err)
	}
	return d, nil
}

// connectTimeout bounds a connection attempt when the DSN sets none
// (connect_timeout).
const connectTimeout = 10 * time.Second

// migrationLock is the advisory lock that makes the instances starting
// together migrate one after the other: the first migrates, the others
// find nothing left to do.
const migrationLock int64 = 0x70696e636572 // "pincer"

// migrate applies the pending migrations under the advisory lock, on a
// database/sql handle of its own (goose's interface).
func migrate(ctx context.Context, cc *pgx.ConnConfig, schema string) error {
	db := stdlib.OpenDB(*cc.Copy())
	defer db.Close()
	conn, err := db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, `SELECT pg_advisory_lock($1)`, migrationLock); err != nil {
		return fmt.Errorf("lock: %w", err)
	}
	defer func() {
		_, _ = conn.ExecContext(context.WithoutCancel(ctx), `SELECT pg_advisory_unlock($1)`, migrationLock)
	}()
	if schema != "" {
		if _, err := conn.ExecContext(ctx, `CREATE SCHEMA IF NOT EXISTS `+pgx.Identifier{schema}.Sanitize()); err != nil {
			return err
		}
	}
	sub, err := fs.Sub(migrations, "migrations")
	if err != nil {
		return err
	}
	p, err := goose.NewProvider(goose.DialectPostgres, db, sub)
	if err != nil {
		return err
	}
	_, err = p.Up(ctx)
	return err
}

// Close lets the work handed in finish and commit, and closes the pool.
// Calling it again does nothing. A failure of the last commit goes where
// every posted write's does: to the log and Health.
func (d *DB) Close() error {
	d.closeOnce.Do(func() {
		d.w.close()
		d.pool.Close()
	})
	return nil
}

// writeFailed reports a write nobody waited for.
func (d *DB) writeFailed(err error) {
	d.log.Error("store write failed; what it carried may be lost", "component", "store", "err", err)
}

// note records the outcome of a write for Health.
func (d *DB) note(err error) {
	if err != nil {
		d.health.Failed(err)
	} else {
		d.health.OK()
	}
}

// Health reports the outcome of the latest write: nil when it succeeded.
func (d *DB) Health() error { return d.health.Last() }

// Probe implements store.Store: a write to the meta table, committed.
func (d *DB) Probe(ctx context.Context) error {
	err := d.w.do(func(ctx context.Context, tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `INSERT INTO meta (key, value) VALUES ('probe', $1) ON CONFLICT (key) DO UPDATE SET value = excluded.value`,
			now().Format(time.RFC3339Nano))
		return err
	}, true, true)
	if err != nil {
		d.health.Failed(err)
		return fmt.Errorf("store is not writable: %w", err)
	}
	d.health.OK()
	return nil
}

// numbers hands out the values of a sequence whose increment is block,
// a block at a time: one round trip numbers block entries, and numbers
// never repeat across the processes that share the database.
type numbers struct {
	pool     *pgxpool.Pool
	sequence string
	block    int64

	mu        sync.Mutex
	next, end int64 // the block taken: next is handed out next, end is past it
}

// take returns n numbers, in increasing order.
func (s *numbers) take(ctx context.Context, n int) ([]int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]int64, n)
	for i := range out {
		v, err := s.nextLocked(ctx)
		if err != nil {
			return nil, err
		}
		out[i] = v
	}
	return out, nil
}

// nextLocked returns the next number; s.mu is held.
func (s *numbers) nextLocked(ctx context.Context) (int64, error) {
	if s.next == s.end {
		var first int64
		if err := s.pool.QueryRow(context.WithoutCancel(ctx), `SELECT nextval('`+s.sequence+`')`).Scan(&first); err != nil {
			return 0, fmt.Errorf("number from %s: %w", s.sequence, err)
		}
		s.next, s.end = first, first+s.block
	}
	v := s.next
	s.next++
	return v, nil
}

// one returns one number.
func (s *numbers) one(ctx context.Context) (int64, error) {
	v, err := s.take(ctx, 1)
	if err != nil {
		return 0, err
	}
	return v[0], nil
}

func millis(t time.Time) int64 { return t.UnixMilli() }

func fromMillis(ms int64) time.Time { return time.UnixMilli(ms) }

func now() time.Time { return time.Now().Truncate(time.Millisecond) }

// Flush returns once everything handed to the store before it was called
// is committed: a cluster's partition owner calls it before it records
// the messages of its partition as taken in.
func (d *DB) Flush(ctx context.Context) error {
	if err := d.w.do(func(context.Context, pgx.Tx) error { return nil }, false, true); err != nil {
		return fmt.Errorf("flush: %w", err)
	}
	return nil
}

// FreshNumbers makes the log entries and buffered messages this process
// numbers from now on come after every number any process has handed out
// so far. A cluster's instance calls it when it takes a partition over,
// so the chats' entries it logs sort after those of the owner before it,
// which may have numbered from a later block than its own.
func (d *DB) FreshNumbers() {
	for _, s := range []*numbers{d.seq, d.bufferID} {
		s.mu.Lock()
		s.next = s.end
		s.mu.Unlock()
	}
}
