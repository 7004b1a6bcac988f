package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// Group commit: one goroutine owns the connection and runs every
// statement, in the order callers hand them in, inside a transaction it
// commits once the batch is maxBatchAge old or holds maxBatch jobs, or at
// once when a caller waits for the commit (see durable). A burst of writes
// thus shares a few commits instead of paying one each, and so does a
// trickle: messages arriving a millisecond apart are committed ten at a
// time rather than one by one, which is what a commit costs at a steady
// rate. Reads see every write handed in before them. Callers wait for
// their job to run, not for the commit, unless they ask for it, and the
// writes of the ingest path (the log, buffered entries) do not wait at all
// (see post): after a crash, at most the jobs of the last batch —
// maxBatchAge of work, plus what was queued behind it — can be missing.
//
// Jobs nobody waits for do not wake the writer while a batch is open:
// they queue, and the writer takes them when the batch is due (or when
// a caller who waits hands in a job, or the queue fills), so a trickle
// costs the writer one wake-up a batch rather than one a message.
const (
	maxBatch    = 2000
	maxBatchAge = 10 * time.Millisecond
)

// ErrClosed is returned for work handed to a closed store.
var ErrClosed = errors.New("sqlite: store closed")

// job is one unit of work for the writer.
type job struct {
	fn func(tx *sql.Conn) error
	// durable asks to be told only after the batch holding the job was
	// committed, with the commit's error.
	durable bool
	// atomic runs fn under a savepoint, so its statements apply together
	// or not at all without aborting the rest of the batch.
	atomic bool
	// async: nobody waits; a failure goes to the writer's fail.
	async bool
	// row, when set, is an entry of the inbound log (fn is nil), inserted
	// with the entries next to it (see flushRows).
	row  *logRow
	done chan error
}

// writer runs jobs on the database's one connection.
type writer struct {
	conn *sql.Conn
	note func(error)
	// fail learns the failures of jobs nobody waits for.
	fail func(error)
	// rows are log entries handed in and not yet inserted; insertRows
	// inserts them (only the writer touches them).
	rows       []*logRow
	insertRows func(tx *sql.Conn, rows []*logRow) error
	// beforeCommit runs last in every batch.
	beforeCommit func(tx *sql.Conn) error
	// commits counts the batches committed (or whose COMMIT failed), and
	// savepoints the jobs run under a savepoint of their own.
	commits, savepoints atomic.Int64
	// checkpoint asks for finishLog before the next batch; logsFinished
	// counts the times it ran.
	checkpoint   atomic.Bool
	logsFinished atomic.Int64

	mu     sync.RWMutex
	closed bool
	// jobs are the jobs a caller waits for; async those nobody waits for
	// (see post), and kick wakes a writer that waits for its batch to come
	// of age when async is full.
	jobs    chan *job
	async   chan *job
	kick    chan struct{}
	stopped chan struct{}
	// ready are jobs taken from the queues and not yet run, in the order
	// they run; rjobs and rasync are jobs and async as the writer reads
	// them, nil once closed and empty (only the writer touches them).
	ready         []*job
	head          int // the first of ready not yet run
	rjobs, rasync chan *job
	// pool recycles jobs; it is the writer's own, as a job's channel
	// belongs to the goroutines (and test bubbles) of this store.
	pool sync.Pool
	// prepared, when set, returns a statement prepared once on conn (nil
	// when it cannot be): the transaction statements (BEGIN, COMMIT, the
	// savepoints) run through it, since run unprepared each was parsed
	// anew, several times a turn.
	prepared func(ctx context.Context, query string) *sql.Stmt
}

func newWriter(conn *sql.Conn, note, fail func(error), insertRows func(*sql.Conn, []*logRow) error, beforeCommit func(*sql.Conn) error,
	prepared func(context.Context, string) *sql.Stmt) *writer {
	w := &writer{
		conn: conn, note: note, fail: fail, insertRows: insertRows, beforeCommit: beforeCommit, prepared: prepared,
		jobs: make(chan *job, 1024), async: make(chan *job, 1024), kick: make(chan struct{}, 1), stopped: make(chan struct{}),
	}
	w.rjobs, w.rasync = w.jobs, w.async
	w.pool.New = func() any { return &job{done: make(chan error, 1)} }
	go w.run()
	return w
}

// do hands fn to the writer and waits until it ran (or, durable, until its
// batch was committed).
func (w *writer) do(fn func(tx *sql.Conn) error, atomic, durable bool) error {
	j := w.pool.Get().(*job)
	j.fn, j.atomic, j.durable, j.async, j.row = fn, atomic, durable, false, nil
	w.mu.RLock()
	if w.closed {
		w.mu.RUnlock()
		w.drop(j)
		return ErrClosed
	}
	w.jobs <- j
	w.mu.RUnlock()
	err := <-j.done
	j.fn = nil
	w.pool.Put(j)
	return err
}

// post hands fn to the writer without waiting for it: the caller goes on
// as soon as the job is queued (or, when the queue is full, once there is
// room: a writer that falls behind slows its callers down). Jobs posted
// and done by one goroutine run in the order it handed them in.
func (w *writer) post(fn func(tx *sql.Conn) error, atomic bool) error {
	j := w.pool.Get().(*job)
	j.fn, j.atomic, j.durable, j.async, j.row = fn, atomic, false, true, nil
	return w.queue(j)
}

// postRow hands in an entry of the inbound log, as post does; fn, when
// set, runs right after the entry is written, in the same transaction.
func (w *writer) postRow(r *logRow, fn func(tx *sql.Conn) error) error {
	j := w.pool.Get().(*job)
	j.fn, j.atomic, j.durable, j.async, j.row = fn, false, false, true, r
	return w.queue(j)
}

func (w *writer) queue(j *job) error {
	w.mu.RLock()
	defer w.mu.RUnlock()
	if w.closed {
		w.drop(j)
		return ErrClosed
	}
	select {
	case w.async <- j:
	default:
		// Full: the writer may be waiting for its batch to come of age.
		select {
		case w.kick <- struct{}{}:
		default:
		}
		w.async <- j
	}
	return nil
}

func (w *writer) run() {
	defer close(w.stopped)
	for {
		j, ok := w.wait(nil)
		if !ok {
			return
		}
		if w.checkpoint.Swap(false) {
			w.finishLog()
		}
		w.batch(j)
	}
}

// finishCheckpoint asks the writer to copy what the background
// checkpoint left of the log, before its next batch (see restartAfter).
func (w *writer) finishCheckpoint() { w.checkpoint.Store(true) }

// finishLog copies the rest of the log into the database, outside any
// transaction: with no write under way, a passive checkpoint copies all
// of it (unless a reader still reads an older snapshot), and the next
// batch's BEGIN then starts the log over.
func (w *writer) finishLog() {
	_, err := w.conn.ExecContext(context.Background(), "PRAGMA wal_checkpoint(PASSIVE)")
	w.logsFinished.Add(1)
	if err != nil {
		w.note(fmt.Errorf("checkpoint: %w", err))
	}
}

// take returns the next job to run without waiting: one taken before, a
// job nobody waits for, or one a caller waits for — after the jobs
// nobody waits for that were queued before it, so the writes a goroutine
// posted run before the job it then hands in and waits for.
func (w *writer) take() *job {
	if w.head < len(w.ready) {
		return w.pop()
	}
	select {
	case j, ok := <-w.rasync:
		if ok {
			return j
		}
	default:
	}
	select {
	case j, ok := <-w.rjobs:
		if ok {
			return w.after(j)
		}
	default:
	}
	return nil
}

// after queues j behind the jobs nobody waits for that are queued now,
// and returns the first of them (or j).
func (w *writer) after(j *job) *job {
	w.takeQueued()
	w.ready = append(w.ready, j)
	return w.pop()
}

// takeQueued moves the jobs nobody waits for that are queued now to
// ready.
func (w *writer) takeQueued() {
	for n := len(w.rasync); n > 0; n-- {
		a, ok := <-w.rasync
		if !ok {
			return
		}
		w.ready = append(w.ready, a)
	}
}

// pop takes the first job of ready.
func (w *writer) pop() *job {
	j := w.ready[w.head]
	w.ready[w.head] = nil
	if w.head++; w.head == len(w.ready) {
		w.ready, w.head = w.ready[:0], 0
	}
	return j
}

// wait returns the next job, waiting for one: with due nil (no batch
// open), for any job; else for a job a caller waits for, a full queue, or
// due, and then whatever was queued meanwhile. It is false once the
// writer is closed and every job ran (or, with due, when nothing came).
func (w *writer) wait(due <-chan time.Time) (*job, bool) {
	if j := w.take(); j != nil {
		return j, true
	}
	if due == nil {
		for w.rjobs != nil || w.rasync != nil {
			select {
			case j, ok := <-w.rasync:
				if ok {
					return j, true
				}
				w.rasync = nil
			case j, ok := <-w.rjobs:
				if ok {
					return w.after(j), true
				}
				w.rjobs = nil
			}
		}
		return nil, false
	}
	for {
		select {
		case j, ok := <-w.rjobs:
			if ok {
				return w.after(j), true
			}
			w.rjobs = nil // closed: take what is queued, then commit
		case <-w.kick:
			if j := w.take(); j != nil {
				return j, true
			}
			// A kick of a full queue the writer has drained since: the
			// batch is not due yet.
			continue
		case <-due:
		}
		j := w.take()
		return j, j != nil
	}
}

// batch runs first and whatever else is queued in one transaction.
func (w *writer) batch(first *job) {
	// The transaction is the connection's own: BEGIN and COMMIT are
	// statements, so the prepared ones need no binding to a *sql.Tx.
	tx := w.conn
	if err := w.ctl("BEGIN IMMEDIATE"); err != nil {
		w.note(err)
		w.finish(first, err)
		return
	}
	var waiting []*job
	var waitErrs []error
	var dbErr error // the first error SQLite itself raised, for Health
	start := time.Now()
	var idle *time.Timer
	defer func() {
		if idle != nil {
			idle.Stop()
		}
	}()
	failed := func(err error) {
		if dbErr == nil && isSQLiteError(err) {
			dbErr = err
			w.note(err) // before the caller hears of it
		}
	}
	j := first
	due := false
	for n := 0; ; n++ {
		var err error
		if j.row != nil {
			// Inserted with the entries next to it, before any other job.
			w.rows = append(w.rows, j.row)
			if len(w.rows) == rowsPerInsert {
				failed(w.flushRows(tx))
			}
		}
		if j.fn != nil {
			// A job with a row writes the row first, in the same batch.
			failed(w.flushRows(tx))
			err = w.exec(tx, j)
			failed(err)
		}
		switch {
		case j.durable:
			waiting, waitErrs = append(waiting, j), append(waitErrs, err)
		default:
			w.finish(j, err)
		}
		if n+1 >= maxBatch {
			break
		}
		if time.Since(start) >= maxBatchAge {
			// Due: what was queued by now is committed with it; what comes
			// while it runs goes into the next batch.
			if !due {
				due = true
				w.takeQueued()
			}
			if w.head == len(w.ready) {
				break
			}
			j = w.pop()
			continue
		}
		if j = w.take(); j != nil {
			continue
		}
		if len(waiting) > 0 {
			break // someone waits for this commit
		}
		// Nothing queued: wait until the batch is due, for a job someone
		// waits for, or for a full queue.
		left := maxBatchAge - time.Since(start)
		if idle == nil {
			idle = time.NewTimer(left)
		} else {
			idle.Reset(left)
		}
		var ok bool
		if j, ok = w.wait(idle.C); !ok {
			break
		}
	}
	failed(w.flushRows(tx))
	if err := w.beforeCommit(tx); err != nil {
		w.fail(err)
		failed(err)
	}
	err := w.ctl("COMMIT")
	w.commits.Add(1)
	if err != nil {
		// A failed COMMIT may leave the transaction open: end it, so the
		// next batch can begin.
		if rerr := w.ctl("ROLLBACK"); rerr != nil {
			err = errors.Join(err, rerr)
		}
	}
	w.note(errors.Join(err, dbErr))
	if err != nil {
		w.fail(err)
	}
	for i, d := range waiting {
		d.done <- errors.Join(waitErrs[i], err)
	}
}

// drop recycles j, a job that will not run.
func (w *writer) drop(j *job) {
	j.fn, j.row = nil, nil
	w.pool.Put(j)
}

// ctl runs a transaction statement (BEGIN IMMEDIATE, COMMIT, ROLLBACK,
// a savepoint's) on the writer's connection, prepared when it can be.
func (w *writer) ctl(query string) error {
	ctx := context.Background()
	if w.prepared != nil {
		if s := w.prepared(ctx, query); s != nil {
			_, err := s.ExecContext(ctx)
			return err
		}
	}
	_, err := w.conn.ExecContext(ctx, query)
	return err
}

// finish tells j's caller err, or the writer's fail when nobody waits.
func (w *writer) finish(j *job, err error) {
	if j.async {
		if err != nil {
			w.fail(err)
		}
		j.fn, j.row = nil, nil
		w.pool.Put(j)
		return
	}
	j.done <- err
}

// rowsPerInsert is the most log entries kept before they are inserted.
const rowsPerInsert = 64

// flushRows inserts the log entries handed in so far; a failure goes to
// fail, as nobody waits for them.
func (w *writer) flushRows(tx *sql.Conn) error {
	if len(w.rows) == 0 {
		return nil
	}
	err := w.insertRows(tx, w.rows)
	clear(w.rows)
	w.rows = w.rows[:0]
	if err != nil {
		w.fail(err)
	}
	return err
}

// exec runs one job inside tx.
func (w *writer) exec(tx *sql.Conn, j *job) error {
	if !j.atomic {
		return j.fn(tx)
	}
	w.savepoints.Add(1)
	return w.atomically(func() error { return j.fn(tx) })
}

// atomically runs fn, statements of the batch the writer has open, under
// a savepoint: they apply together or not at all, without aborting the
// rest of the batch.
func (w *writer) atomically(fn func() error) error {
	if err := w.ctl("SAVEPOINT job"); err != nil {
		return err
	}
	if err := fn(); err != nil {
		rerr := w.ctl("ROLLBACK TO job")
		relErr := w.ctl("RELEASE job")
		return errors.Join(err, rerr, relErr)
	}
	return w.ctl("RELEASE job")
}

// isSQLiteError reports an error SQLite raised (a full disk, a read-only
// file), as opposed to a job's own outcome (no such row).
func isSQLiteError(err error) bool {
	var coded interface{ Code() int }
	return errors.As(err, &coded)
}

// close stops taking jobs, lets the queued ones run and commit, and waits.
func (w *writer) close() {
	w.mu.Lock()
	if !w.closed {
		w.closed = true
		close(w.jobs)
		close(w.async)
	}
	w.mu.Unlock()
	<-w.stopped
}
