package postgres

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Group commit: one goroutine takes a connection from the pool for each
// batch and runs every job, in the order callers hand them in, inside a
// transaction it commits once the batch is maxBatchAge old or holds
// maxBatch jobs, or at once when a caller waits for the commit. The
// statements of posted jobs (see post) are not sent one by one: they
// queue in a pgx.Batch sent when a job that needs an answer comes, when
// postedPerBatch of them wait, or at the commit, so a burst of inbound
// messages costs a round trip per batch, not one each.
const (
	maxBatch       = 2000
	maxBatchAge    = 10 * time.Millisecond
	postedPerBatch = 256
)

// ErrClosed is returned for work handed to a closed store.
var ErrClosed = errors.New("postgres: store closed")

// stmt is one statement of a posted job.
type stmt struct {
	sql  string
	args []any
	// check, when set, judges the statement's outcome (a row it had to
	// touch); its error goes to the log like a failed statement's, but
	// does not undo the batch.
	check func(pgconn.CommandTag) error
}

// job is one unit of work for the writer.
type job struct {
	// fn runs inside the batch's transaction; stmts are sent with the
	// posted statements (a job has one or the other).
	fn    func(ctx context.Context, tx pgx.Tx) error
	stmts []stmt
	// durable asks to be told only after the batch holding the job was
	// committed, with the commit's error.
	durable bool
	// atomic runs fn under a savepoint, so a failure of its statements
	// undoes them alone and not the rest of the batch.
	atomic bool
	// async: nobody waits; a failure goes to the writer's fail.
	async bool
	done  chan error
}

// writer runs jobs on a connection of the pool.
type writer struct {
	pool *pgxpool.Pool
	note func(error)
	fail func(error)
	// commits counts the batches ended (committed or rolled back), and
	// trips the round trips that sent posted statements.
	commits, trips atomic.Int64

	mu      sync.RWMutex
	closed  bool
	jobs    chan *job
	stopped chan struct{}
}

func newWriter(pool *pgxpool.Pool, note, fail func(error)) *writer {
	w := &writer{pool: pool, note: note, fail: fail, jobs: make(chan *job, 4096), stopped: make(chan struct{})}
	go w.run()
	return w
}

// do hands fn to the writer and waits until it ran (or, durable, until
// its batch was committed). A job that writes should be atomic.
func (w *writer) do(fn func(ctx context.Context, tx pgx.Tx) error, atomic, durable bool) error {
	j := &job{fn: fn, atomic: atomic, durable: durable, done: make(chan error, 1)}
	if err := w.queue(j); err != nil {
		return err
	}
	return <-j.done
}

// post hands statements to the writer without waiting for them: the
// caller goes on once they are queued. Jobs handed in by one goroutine
// run in the order it handed them in, and a read it hands in later sees
// them.
func (w *writer) post(stmts ...stmt) error {
	if len(stmts) == 0 {
		return nil
	}
	return w.queue(&job{stmts: stmts, async: true})
}

func (w *writer) queue(j *job) error {
	w.mu.RLock()
	defer w.mu.RUnlock()
	if w.closed {
		return ErrClosed
	}
	w.jobs <- j
	return nil
}

func (w *writer) run() {
	defer close(w.stopped)
	for {
		j, ok := <-w.jobs
		if !ok {
			return
		}
		w.batch(j)
	}
}

// batch runs first and whatever else comes in time in one transaction.
func (w *writer) batch(first *job) {
	ctx := context.Background()
	conn, tx, err := w.begin(ctx)
	if err != nil {
		w.note(err)
		w.finish(first, err)
		return
	}
	defer conn.Release()
	b := &posted{trips: &w.trips}
	var waiting []*job
	var waitErrs []error
	var broken error // the server error that ended the transaction
	start := time.Now()
	var idle *time.Timer
	defer func() {
		if idle != nil {
			idle.Stop()
		}
	}()
	j := first
loop:
	for n := 0; ; n++ {
		var err error
		switch {
		case j.stmts != nil:
			b.add(j.stmts)
			if b.len() >= postedPerBatch {
				broken = b.send(ctx, tx, w.fail)
				err = broken
			}
		case j.fn != nil:
			if broken = b.send(ctx, tx, w.fail); broken != nil {
				err = broken
				break
			}
			err = w.exec(ctx, tx, j)
			if err != nil && conn.Conn().PgConn().TxStatus() != 'T' {
				// The statement that failed ended the transaction (or
				// the connection): what the batch did is lost.
				broken = err
			}
		}
		if j.durable {
			waiting, waitErrs = append(waiting, j), append(waitErrs, err)
		} else {
			w.finish(j, err)
		}
		if broken != nil || n+1 >= maxBatch || time.Since(start) >= maxBatchAge {
			break // what comes next starts the next batch
		}
		select {
		case next, ok := <-w.jobs:
			if !ok {
				break loop
			}
			j = next
			continue
		default:
		}
		if len(waiting) > 0 {
			break // someone waits for this commit
		}
		left := maxBatchAge - time.Since(start)
		if idle == nil {
			idle = time.NewTimer(left)
		} else {
			idle.Reset(left)
		}
		select {
		case next, ok := <-w.jobs:
			if !ok {
				break loop
			}
			j = next
		case <-idle.C:
			break loop
		}
	}
	if broken == nil {
		broken = b.send(ctx, tx, w.fail)
	}
	if broken != nil {
		_ = tx.Rollback(ctx)
		w.commits.Add(1)
		if conn.Conn().PgConn().TxStatus() != 'I' {
			_ = conn.Conn().Close(ctx) // the pool drops it
		}
		err := fmt.Errorf("postgres: batch rolled back: %w", broken)
		w.note(err)
		w.fail(err)
		for _, d := range waiting {
			d.done <- err
		}
		return
	}
	err = tx.Commit(ctx)
	w.commits.Add(1)
	w.note(err)
	if err != nil {
		w.fail(err)
	}
	for i, d := range waiting {
		d.done <- errors.Join(waitErrs[i], err)
	}
}

// begin takes a connection and begins the batch's transaction on it. A
// connection the server dropped while it sat in the pool (a restart, an
// idle timeout) fails at BEGIN, before anything was sent: it is closed
// and another one tried.
func (w *writer) begin(ctx context.Context) (*pgxpool.Conn, pgx.Tx, error) {
	var err error
	for range 2 {
		var conn *pgxpool.Conn
		if conn, err = w.pool.Acquire(ctx); err != nil {
			return nil, nil, fmt.Errorf("postgres: connect: %w", err)
		}
		var tx pgx.Tx
		if tx, err = conn.Begin(ctx); err == nil {
			return conn, tx, nil
		}
		_ = conn.Conn().Close(ctx) // the pool drops it
		conn.Release()
	}
	return nil, nil, err
}

// exec runs one job inside tx.
func (w *writer) exec(ctx context.Context, tx pgx.Tx, j *job) error {
	if !j.atomic {
		return j.fn(ctx, tx)
	}
	sp, err := tx.Begin(ctx)
	if err != nil {
		return err
	}
	if err := j.fn(ctx, sp); err != nil {
		return errors.Join(err, sp.Rollback(ctx))
	}
	return sp.Commit(ctx)
}

// finish tells j's caller err, or the writer's fail when nobody waits.
func (w *writer) finish(j *job, err error) {
	if j.async {
		if err != nil {
			w.fail(err)
		}
		return
	}
	j.done <- err
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

// posted are the statements of posted jobs not sent yet.
type posted struct {
	trips  *atomic.Int64
	batch  pgx.Batch
	checks []func(pgconn.CommandTag) error
}

func (p *posted) len() int { return len(p.checks) }

func (p *posted) add(stmts []stmt) {
	for _, s := range stmts {
		p.batch.Queue(s.sql, s.args...)
		p.checks = append(p.checks, s.check)
	}
}

// send sends the statements in one round trip and returns the server
// error that broke the transaction, if one did; the failed checks go to
// fail.
func (p *posted) send(ctx context.Context, tx pgx.Tx, fail func(error)) error {
	if len(p.checks) == 0 {
		return nil
	}
	p.trips.Add(1)
	br := tx.SendBatch(ctx, &p.batch)
	var broken error
	for _, check := range p.checks {
		tag, err := br.Exec()
		if err != nil {
			broken = err
			break
		}
		if check != nil {
			if err := check(tag); err != nil {
				fail(err)
			}
		}
	}
	if err := br.Close(); err != nil && broken == nil {
		broken = err
	}
	p.batch = pgx.Batch{}
	p.checks = p.checks[:0]
	return broken
}
