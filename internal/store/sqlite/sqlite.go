// Package sqlite implements store.Store on an embedded SQLite database
// (modernc.org/sqlite, no cgo) in WAL mode with embedded migrations.
package sqlite

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/pressly/goose/v3"
	_ "modernc.org/sqlite" // registers the "sqlite" driver

	"github.com/pincerbot/pincer/internal/store"
)

//go:embed migrations/*.sql
var migrations embed.FS

// Options tune Open.
type Options struct {
	// BusyTimeout is how long a writer waits for a lock; 5s when zero.
	BusyTimeout time.Duration
}

// DB is a store.Store backed by one SQLite file.
type DB struct {
	db *sql.DB
	// stmts caches prepared statements by query text: parsing SQL was the
	// largest cost of a message's path through the store.
	stmts sync.Map // string -> *sql.Stmt
	path  string
	// health is the outcome of the latest write.
	health dbHealth
}

var _ store.Store = (*DB)(nil)

// Open opens (creating if needed) the database at path, with its parent
// directory, and applies pending migrations.
func Open(ctx context.Context, path string, opts Options) (*DB, error) {
	if opts.BusyTimeout == 0 {
		opts.BusyTimeout = 5 * time.Second
	}
	if dir := filepath.Dir(path); dir != "" {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, fmt.Errorf("sqlite: create directory: %w", err)
		}
	}
	q := url.Values{}
	q.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", opts.BusyTimeout.Milliseconds()))
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_pragma", "synchronous(NORMAL)")
	q.Add("_pragma", "foreign_keys(ON)")
	q.Set("_txlock", "immediate")
	dsn := "file:" + (&url.URL{Path: path}).EscapedPath() + "?" + q.Encode()
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	// One connection: SQLite takes one writer at a time, and queueing in
	// Go is cheaper than SQLite's sleeping busy handler.
	db.SetMaxOpenConns(1)
	if err := migrate(ctx, db); err != nil {
		db.Close()
		return nil, fmt.Errorf("sqlite: migrate %s: %w", path, err)
	}
	d := &DB{db: db, path: path}
	for _, q := range txQueries {
		if _, err := d.stmt(ctx, q); err != nil {
			d.Close()
			return nil, fmt.Errorf("sqlite: prepare: %w", err)
		}
	}
	// A database that opens but cannot be written would drop messages
	// later, silently: refuse it now.
	if err := d.Probe(ctx); err != nil {
		d.Close()
		return nil, fmt.Errorf("sqlite: %s: %w", path, err)
	}
	return d, nil
}

// txQueries run inside transactions; they are prepared at open, because
// preparing needs the connection a transaction holds.
var txQueries = []string{qSession, qBumpGeneration, qInsertReset, qInsertTurn, qAppendTurn, qTouchSession, qClaim, qLogInbound, qBuffer, qUnbuffer, qRecordSent, qJournal}

func migrate(ctx context.Context, db *sql.DB) error {
	sub, err := fs.Sub(migrations, "migrations")
	if err != nil {
		return err
	}
	p, err := goose.NewProvider(goose.DialectSQLite3, db, sub)
	if err != nil {
		return err
	}
	_, err = p.Up(ctx)
	return err
}

// Close closes the database.
func (d *DB) Close() error {
	var errs []error
	d.stmts.Range(func(_, v any) bool {
		errs = append(errs, v.(*sql.Stmt).Close())
		return true
	})
	return errors.Join(append(errs, d.db.Close())...)
}

// quick detaches a statement's context from cancellation. Statements here
// take microseconds, and the driver watches a cancellable context with a
// goroutine per statement, which was the largest cost of a turn's store
// calls; a turn cut short still records what it did.
func quick(ctx context.Context) context.Context { return context.WithoutCancel(ctx) }

// stmt returns the prepared statement for query, preparing it once.
func (d *DB) stmt(ctx context.Context, query string) (*sql.Stmt, error) {
	if s, ok := d.stmts.Load(query); ok {
		return s.(*sql.Stmt), nil
	}
	s, err := d.db.PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	if prev, loaded := d.stmts.LoadOrStore(query, s); loaded {
		s.Close()
		return prev.(*sql.Stmt), nil
	}
	return s, nil
}

// exec runs a cached statement, inside tx when it is not nil.
func (d *DB) exec(ctx context.Context, tx *sql.Tx, query string, args ...any) (res sql.Result, err error) {
	defer func() {
		if tx == nil {
			d.note(err)
		}
	}()
	ctx = quick(ctx)
	if tx != nil {
		if s, ok := d.stmts.Load(query); ok {
			return tx.StmtContext(ctx, s.(*sql.Stmt)).ExecContext(ctx, args...)
		}
		return tx.ExecContext(ctx, query, args...)
	}
	s, err := d.stmt(ctx, query)
	if err != nil {
		return nil, err
	}
	return s.ExecContext(ctx, args...)
}

// queryRow runs a cached single-row query, inside tx when it is not nil.
func (d *DB) queryRow(ctx context.Context, tx *sql.Tx, query string, args ...any) *sql.Row {
	ctx = quick(ctx)
	if tx != nil {
		if s, ok := d.stmts.Load(query); ok {
			return tx.StmtContext(ctx, s.(*sql.Stmt)).QueryRowContext(ctx, args...)
		}
		return tx.QueryRowContext(ctx, query, args...)
	}
	s, err := d.stmt(ctx, query)
	if err != nil {
		// Let Scan report the error: run the query unprepared.
		return d.db.QueryRowContext(ctx, query, args...)
	}
	return s.QueryRowContext(ctx, args...)
}

// query runs a cached multi-row query.
func (d *DB) query(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	ctx = quick(ctx)
	s, err := d.stmt(ctx, query)
	if err != nil {
		return nil, err
	}
	return s.QueryContext(ctx, args...)
}

// Check runs SQLite's integrity check and returns an error unless it
// reports "ok".
func (d *DB) Check(ctx context.Context) error {
	var res string
	if err := d.db.QueryRowContext(ctx, "PRAGMA integrity_check").Scan(&res); err != nil {
		return fmt.Errorf("sqlite: integrity check: %w", err)
	}
	if res != "ok" {
		return fmt.Errorf("sqlite: integrity check: %s", res)
	}
	return nil
}

func (d *DB) tx(ctx context.Context, fn func(*sql.Tx) error) (err error) {
	defer func() { d.note(err) }()
	tx, err := d.db.BeginTx(quick(ctx), nil)
	if err != nil {
		return err
	}
	if err := fn(tx); err != nil {
		return errors.Join(err, tx.Rollback())
	}
	return tx.Commit()
}

// note records the outcome of a write for Health.
func (d *DB) note(err error) {
	if err != nil {
		d.health.failed(err)
	} else {
		d.health.ok()
	}
}

func millis(t time.Time) int64 { return t.UnixMilli() }

func fromMillis(ms int64) time.Time { return time.UnixMilli(ms) }

func now() time.Time { return time.Now().Truncate(time.Millisecond) }
