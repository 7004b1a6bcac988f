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
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
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
	// Logger receives the failures of writes nobody waits for (the
	// inbound log, buffered entries); they also show in Health.
	Logger *slog.Logger
}

// DB is a store.Store backed by one SQLite file.
type DB struct {
	db *sql.DB
	// conn is the pool's one connection, held by the writer for good: its
	// statements are prepared once, not bound again to every batch's
	// transaction.
	conn *sql.Conn
	// stmts caches prepared statements by query text: parsing SQL was the
	// largest cost of a message's path through the store.
	stmts sync.Map // string -> *sql.Stmt
	// raw runs the writes (see rawexec.go); only the writer touches it.
	raw  rawExec
	path string
	// w runs every statement (see writer.go), cp the checkpoints.
	w  *writer
	cp *checkpointer
	// health is the outcome of the latest write.
	health store.WriteHealth
	// seq and bufferID number log entries and buffered entries as they
	// are handed in, so their writers need not wait for the database.
	seq, bufferID atomic.Int64
	// journalN orders the turns of the journal as they are admitted.
	journalN atomic.Int64
	// chains is where each chat's entries end as they are handed in
	// (under chainsMu); written is where they end in the database as the
	// writer has it, maxWritten the last entry in it, and unsaved the
	// chats whose end the chats table does not know yet, each with its
	// first entry since; saveOrder holds, while a save of them is under
	// way, the chats it has still to write, in key order, and chainsSaved
	// is when the last one ended (only the writer touches these, see
	// saveChains).
	chainsMu    sync.Mutex
	chains      map[string]*chain
	written     map[string]*chain
	maxWritten  int64
	unsaved     map[string]int64
	saveOrder   []string
	chainsSaved time.Time
	// tokensLogged says the token log has rows to fold, and tokensFolded
	// when it was last folded (see foldTokens; only the writer touches
	// them).
	tokensLogged bool
	tokensFolded time.Time
	// held are the buffered entries handed in and not written yet (see
	// flushHeld); only the writer touches it.
	held []heldEntry
	// sent mirrors the sent table (see sent.go), claims the dedup table
	// (see claims.go).
	sent   sentMirror
	claims claimMirror
	// sessions knows the sessions (see opens.go).
	sessions sessionMirror
	log      *slog.Logger
	// closeOnce makes Close safe to call again; closeErr is what the
	// first call returned.
	closeOnce sync.Once
	closeErr  error
}

var _ store.Store = (*DB)(nil)

// Open opens (creating if needed) the database at path, with its parent
// directory, and applies pending migrations. A database it may not write
// is refused with a *ReadOnlyError (see CheckWritable).
func Open(ctx context.Context, path string, opts Options) (*DB, error) {
	if opts.BusyTimeout == 0 {
		opts.BusyTimeout = 5 * time.Second
	}
	if err := CheckWritable(path); err != nil {
		return nil, err
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
	// A 1 MiB page cache per connection (SQLite's default is 2 MiB):
	// writes append to the ends of a few tables and indexes, whose pages
	// stay cached, and the cache is memory outside Go's heap that a burst
	// fills.
	q.Add("_pragma", "cache_size(-1000)")
	q.Add("_pragma", "foreign_keys(ON)")
	// Checkpoints run in the background (see checkpoint.go).
	q.Add("_pragma", "wal_autocheckpoint(0)")
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
		if ro := readOnly(path, err); ro != nil {
			return nil, ro
		}
		return nil, fmt.Errorf("sqlite: migrate %s: %w", path, err)
	}
	// The token log may hold rows an earlier process did not fold: the
	// first batch due to fold folds them.
	d := &DB{db: db, path: path, log: opts.Logger, tokensLogged: true}
	d.health.NoRows = sql.ErrNoRows
	if d.log == nil {
		d.log = slog.New(slog.DiscardHandler)
	}
	// What the store keeps in memory beside its tables: the chats' ends,
	// the counters, and the mirrors of the sent ids, the claimed keys and
	// the sessions.
	for _, load := range []func(context.Context) error{d.loadChains, d.loadCounters, d.loadSent, d.loadClaims, d.loadSessions} {
		if err := load(ctx); err != nil {
			db.Close()
			return nil, fmt.Errorf("sqlite: %s: %w", path, err)
		}
	}
	if d.conn, err = db.Conn(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("sqlite: %s: %w", path, err)
	}
	for _, q := range txQueries {
		if _, err := d.stmt(ctx, q); err != nil {
			d.closeStmts()
			d.conn.Close()
			db.Close()
			return nil, fmt.Errorf("sqlite: prepare: %w", err)
		}
	}
	d.w = newWriter(d.conn, d.note, d.writeFailed, d.insertRows, d.beforeCommit, d.cached)
	if d.cp, err = startCheckpointer(dsn, func(err error) { d.log.Warn("store checkpoint failed", "component", "store", "err", err) }, d.w.finishCheckpoint); err != nil {
		d.Close()
		return nil, fmt.Errorf("sqlite: %s: %w", path, err)
	}
	// A database that opens but cannot be written would drop messages
	// later, silently: refuse it now.
	if err := d.Probe(ctx); err != nil {
		d.Close()
		if ro := readOnly(path, err); ro != nil {
			return nil, ro
		}
		return nil, fmt.Errorf("sqlite: %s: %w", path, err)
	}
	return d, nil
}

// loadCounters continues the numbering of log and buffered entries and
// of the journal's turns.
func (d *DB) loadCounters(ctx context.Context) error {
	var seq, id, n int64
	err := d.db.QueryRowContext(ctx, `SELECT
		(SELECT coalesce(max(seq), 0) FROM messages),
		(SELECT coalesce(max(id), 0) FROM buffered),
		(SELECT coalesce(max(n), 0) FROM pending_turns)`).Scan(&seq, &id, &n)
	if err != nil {
		return fmt.Errorf("read counters: %w", err)
	}
	d.seq.Store(seq)
	d.bufferID.Store(id)
	d.journalN.Store(n)
	return nil
}

// writeFailed reports a write nobody waited for.
func (d *DB) writeFailed(err error) {
	d.log.Error("store write failed; what it carried may be lost at the next restart", "component", "store", "err", err)
}

// txQueries are the statements of the hot paths, prepared at open (any
// other is prepared when first run).
var txQueries = []string{qSession, qBumpGeneration, qInsertReset, qInsertTurn, qAppendTurn, qNextTurn, qClaim, qLogInbound, qLogEntry, qSaveChain, qViewMark, qMark, qBuffer, qUnbuffer, qRecordSent, qJournal, qTranscript}

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

// Close lets the work handed in finish and commit, and closes the
// database. Calling it again returns what the first call did.
func (d *DB) Close() error {
	d.closeOnce.Do(func() { d.closeErr = d.close() })
	return d.closeErr
}

func (d *DB) close() error {
	var errs []error
	if d.cp != nil {
		errs = append(errs, d.cp.close())
	}
	d.w.close()
	errs = append(errs, d.saveAllChains(context.Background()), d.closeStmts(), d.closeRaw(), d.conn.Close())
	return errors.Join(append(errs, d.db.Close())...)
}

// closeRaw closes the writes' driver statements, on the connection they
// were prepared on.
func (d *DB) closeRaw() error {
	if len(d.raw.stmts) == 0 {
		return nil
	}
	return d.conn.Raw(func(any) error { return d.raw.drop() })
}

// closeStmts closes the prepared statements.
func (d *DB) closeStmts() error {
	var errs []error
	d.stmts.Range(func(q, v any) bool {
		errs = append(errs, v.(*sql.Stmt).Close())
		d.stmts.Delete(q)
		return true
	})
	return errors.Join(errs...)
}

// quick detaches a statement's context from cancellation. Statements here
// take microseconds, and the driver watches a cancellable context with a
// goroutine per statement, which was the largest cost of a turn's store
// calls; a turn cut short still records what it did.
func quick(ctx context.Context) context.Context { return context.WithoutCancel(ctx) }

// stmt returns the prepared statement for query, preparing it once on
// the writer's connection. Only the writer's goroutine calls it (Open
// does before the writer starts).
func (d *DB) stmt(ctx context.Context, query string) (*sql.Stmt, error) {
	if s, ok := d.stmts.Load(query); ok {
		return s.(*sql.Stmt), nil
	}
	s, err := d.conn.PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	d.stmts.Store(query, s)
	return s, nil
}

// cached returns query's prepared statement, or nil when it could not be
// prepared (the statement then runs unprepared and reports the error).
// Only the writer's goroutine calls it (its jobs, and the writer for its
// transaction statements): every statement is prepared on the writer's
// connection.
func (d *DB) cached(ctx context.Context, query string) *sql.Stmt {
	s, err := d.stmt(ctx, query)
	if err != nil {
		return nil
	}
	return s
}

// exec runs a statement: inside tx when it is not nil (the caller is a
// job), else as a job of its own.
func (d *DB) exec(ctx context.Context, tx *sql.Conn, query string, args ...any) (res sql.Result, err error) {
	if tx == nil {
		err = d.w.do(func(tx *sql.Conn) error {
			res, err = d.exec(ctx, tx, query, args...)
			return err
		}, false, false)
		return res, err
	}
	err = tx.Raw(func(dc any) error {
		res, err = d.raw.exec(dc, query, args)
		return err
	})
	return res, err
}

// queryRow runs a single-row query inside tx (the caller is a job).
func (d *DB) queryRow(ctx context.Context, tx *sql.Conn, query string, args ...any) *sql.Row {
	ctx = quick(ctx)
	if s := d.cached(ctx, query); s != nil {
		return s.QueryRowContext(ctx, args...)
	}
	return tx.QueryRowContext(ctx, query, args...)
}

// row runs a single-row query as a job and scans it into dest.
func (d *DB) row(ctx context.Context, query string, args []any, dest ...any) error {
	return d.w.do(func(tx *sql.Conn) error { return d.queryRow(ctx, tx, query, args...).Scan(dest...) }, false, false)
}

// each runs a query as a job and calls fn for every row.
func (d *DB) each(ctx context.Context, query string, args []any, fn func(*sql.Rows) error) error {
	return d.w.do(func(tx *sql.Conn) error { return d.eachIn(ctx, tx, query, args, fn) }, false, false)
}

// eachIn runs a query inside a job's tx and calls fn for every row.
func (d *DB) eachIn(ctx context.Context, tx *sql.Conn, query string, args []any, fn func(*sql.Rows) error) error {
	ctx = quick(ctx)
	var rows *sql.Rows
	var err error
	if s := d.cached(ctx, query); s != nil {
		rows, err = s.QueryContext(ctx, args...)
	} else {
		rows, err = tx.QueryContext(ctx, query, args...)
	}
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		if err := fn(rows); err != nil {
			return err
		}
	}
	return rows.Err()
}

// Check runs SQLite's integrity check and returns an error unless it
// reports "ok".
func (d *DB) Check(ctx context.Context) error {
	var res string
	if err := d.row(ctx, "PRAGMA integrity_check", nil, &res); err != nil {
		return fmt.Errorf("sqlite: integrity check: %w", err)
	}
	if res != "ok" {
		return fmt.Errorf("sqlite: integrity check: %s", res)
	}
	return nil
}

// tx runs fn as one job: its statements apply together or not at all.
func (d *DB) tx(_ context.Context, fn func(*sql.Conn) error) error {
	return d.w.do(fn, true, false)
}

// durableOne runs fn, which writes with at most one statement (see
// several), as a job that returns only once fn's write is committed.
func (d *DB) durableOne(_ context.Context, fn func(*sql.Conn) error) error {
	return d.w.do(fn, false, true)
}

// several tells the writer whether a job that writes n statements needs
// a savepoint to apply them together. A statement applies whole or not
// at all by itself (SQLite undoes a failed statement's changes and
// nothing else), so a job of one needs none: SAVEPOINT and RELEASE were
// two of every three statements such a job ran.
func several(n int) bool { return n > 1 }

// note records the outcome of a write for Health.
func (d *DB) note(err error) {
	if err != nil {
		d.health.Failed(err)
	} else {
		d.health.OK()
	}
}

func millis(t time.Time) int64 { return t.UnixMilli() }

func fromMillis(ms int64) time.Time { return time.UnixMilli(ms) }

func now() time.Time { return time.Now().Truncate(time.Millisecond) }
