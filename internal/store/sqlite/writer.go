package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"sync"
	"time"
)

// Group commit: one goroutine owns the connection and runs every
// statement, in the order callers hand them in, inside a transaction it
// commits as soon as nothing else is waiting — or after maxBatch jobs or
// maxBatchAge, whichever comes first. A burst of writes thus shares a few
// commits instead of paying one each, a lone write is committed at once,
// and reads see every write handed in before them. Callers wait for their
// job to run, not for the commit, unless they ask for it (see durable):
// after a crash, at most the jobs of the last batch — maxBatchAge of work
// — can be missing.
const (
	maxBatch    = 2000
	maxBatchAge = 10 * time.Millisecond
	// commitDelay is how long an open batch waits for more work once the
	// queue is empty, unless a caller waits for the commit: a caller that
	// writes one thing after another shares commits too.
	commitDelay = time.Millisecond
)

// ErrClosed is returned for work handed to a closed store.
var ErrClosed = errors.New("sqlite: store closed")

// job is one unit of work for the writer.
type job struct {
	fn func(tx *sql.Tx) error
	// durable asks to be told only after the batch holding the job was
	// committed, with the commit's error.
	durable bool
	// atomic runs fn under a savepoint, so its statements apply together
	// or not at all without aborting the rest of the batch.
	atomic bool
	done   chan error
}

// writer runs jobs on the database's one connection.
type writer struct {
	db      *sql.DB
	note    func(error)
	prepare func(query string)
	// unprepared are queries jobs ran unprepared, to prepare between
	// batches (only the writer touches it).
	unprepared map[string]bool

	mu      sync.RWMutex
	closed  bool
	jobs    chan *job
	stopped chan struct{}
	// pool recycles jobs; it is the writer's own, as a job's channel
	// belongs to the goroutines (and test bubbles) of this store.
	pool sync.Pool
}

func newWriter(db *sql.DB, note func(error), prepare func(string)) *writer {
	w := &writer{db: db, note: note, prepare: prepare, unprepared: map[string]bool{}, jobs: make(chan *job, 1024), stopped: make(chan struct{})}
	w.pool.New = func() any { return &job{done: make(chan error, 1)} }
	go w.run()
	return w
}

// do hands fn to the writer and waits until it ran (or, durable, until its
// batch was committed).
func (w *writer) do(fn func(tx *sql.Tx) error, atomic, durable bool) error {
	j := w.pool.Get().(*job)
	j.fn, j.atomic, j.durable = fn, atomic, durable
	w.mu.RLock()
	if w.closed {
		w.mu.RUnlock()
		w.pool.Put(j)
		return ErrClosed
	}
	w.jobs <- j
	w.mu.RUnlock()
	err := <-j.done
	j.fn = nil
	w.pool.Put(j)
	return err
}

func (w *writer) run() {
	defer close(w.stopped)
	for j := range w.jobs {
		w.batch(j)
	}
}

// batch runs first and whatever else is queued in one transaction.
func (w *writer) batch(first *job) {
	tx, err := w.db.BeginTx(context.Background(), nil)
	if err != nil {
		w.note(err)
		first.done <- err
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
	j := first
	for n := 0; ; n++ {
		err := w.exec(tx, j)
		if dbErr == nil && isSQLiteError(err) {
			dbErr = err
			w.note(err) // before the caller hears of it
		}
		if j.durable {
			waiting, waitErrs = append(waiting, j), append(waitErrs, err)
		} else {
			j.done <- err
		}
		if n+1 >= maxBatch || time.Since(start) >= maxBatchAge {
			break
		}
		j = nil
		select {
		case next, ok := <-w.jobs:
			if ok {
				j = next
			}
		default:
			if len(waiting) > 0 {
				break // someone waits for this commit
			}
			// Nothing queued: wait a moment for more before committing.
			if idle == nil {
				idle = time.NewTimer(commitDelay)
			} else {
				idle.Reset(commitDelay)
			}
			select {
			case next, ok := <-w.jobs:
				if ok {
					j = next
				}
			case <-idle.C:
			}
		}
		if j == nil {
			break
		}
	}
	err = tx.Commit()
	w.note(errors.Join(err, dbErr))
	for i, d := range waiting {
		d.done <- errors.Join(waitErrs[i], err)
	}
	// The connection is free: prepare what this batch ran unprepared.
	for q := range w.unprepared {
		w.prepare(q)
		delete(w.unprepared, q)
	}
}

// prepareLater notes a query a job ran unprepared; the writer prepares it
// after the batch. Only jobs call it, on the writer's goroutine.
func (w *writer) prepareLater(q string) { w.unprepared[q] = true }

// exec runs one job inside tx.
func (w *writer) exec(tx *sql.Tx, j *job) error {
	if !j.atomic {
		return j.fn(tx)
	}
	ctx := context.Background()
	if _, err := tx.ExecContext(ctx, "SAVEPOINT job"); err != nil {
		return err
	}
	if err := j.fn(tx); err != nil {
		_, rerr := tx.ExecContext(ctx, "ROLLBACK TO job")
		_, relErr := tx.ExecContext(ctx, "RELEASE job")
		return errors.Join(err, rerr, relErr)
	}
	_, err := tx.ExecContext(ctx, "RELEASE job")
	return err
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
	}
	w.mu.Unlock()
	<-w.stopped
}
