package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/pincerbot/pincer/internal/msg"
	"github.com/pincerbot/pincer/internal/store"
)

// committed is one batch as the writer committed it: how many jobs it
// held, when the first of them ran and when it was committed.
type committed struct {
	jobs          int
	first, commit time.Duration // since the test began
}

// batchRig is a writer on a real SQLite connection whose every job
// inserts a row, and which records each batch at its commit (through
// beforeCommit, which runs last in every batch). Build it inside a
// synctest bubble: its times are the bubble's.
type batchRig struct {
	t       *testing.T
	db      *sql.DB
	w       *writer
	began   time.Time
	batches []committed // written by the writer's goroutine only
	n       int         // jobs of the open batch
	first   time.Duration
}

func newBatchRig(t *testing.T) *batchRig {
	t.Helper()
	ctx := context.Background()
	db, err := sql.Open("sqlite", "file:"+filepath.Join(t.TempDir(), "w.db")+"?_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)")
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.ExecContext(ctx, "CREATE TABLE t (n INTEGER)"); err != nil {
		t.Fatal(err)
	}
	r := &batchRig{t: t, db: db, began: time.Now()}
	fail := func(err error) { t.Errorf("a write failed: %v", err) }
	r.w = newWriter(conn, func(error) {}, fail, func(*sql.Conn, []*logRow) error { return nil }, func(*sql.Conn) error {
		r.batches = append(r.batches, committed{jobs: r.n, first: r.first, commit: time.Since(r.began)})
		r.n = 0
		return nil
	}, nil)
	return r
}

// job is a write: a row inserted, counted in its batch.
func (r *batchRig) job(i int) func(tx *sql.Conn) error {
	return func(tx *sql.Conn) error {
		if r.n == 0 {
			r.first = time.Since(r.began)
		}
		r.n++
		_, err := tx.ExecContext(context.Background(), "INSERT INTO t VALUES (?)", i)
		return err
	}
}

// post hands in n writes nobody waits for, one after another.
func (r *batchRig) post(from, n int) {
	for i := range n {
		if err := r.w.post(r.job(from+i), false); err != nil {
			r.t.Fatal(err)
		}
	}
}

// close commits what is left, stops the writer and checks that every
// write handed in is in the table; it returns the batches.
func (r *batchRig) close(want int) []committed {
	r.t.Helper()
	r.w.close()
	var rows int
	if err := r.w.conn.QueryRowContext(context.Background(), "SELECT count(*) FROM t").Scan(&rows); err != nil {
		r.t.Fatal(err)
	}
	if rows != want {
		r.t.Errorf("%d rows committed, want %d", rows, want)
	}
	if err := r.w.conn.Close(); err != nil {
		r.t.Error(err)
	}
	if err := r.db.Close(); err != nil {
		r.t.Error(err)
	}
	return r.batches
}

func sizes(bs []committed) []int {
	out := make([]int, len(bs))
	for i, b := range bs {
		out[i] = b.jobs
	}
	return out
}

// TestGroupCommitBurstSharesOneCommit: writes handed in back to back, as
// the ingest path hands in a burst, share one commit; they are not
// committed one by one.
func TestGroupCommitBurstSharesOneCommit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newBatchRig(t)
		r.post(0, 1000)
		if diff := cmp.Diff([]int{1000}, sizes(r.close(1000))); diff != "" {
			t.Errorf("jobs per commit (-want +got):\n%s", diff)
		}
	})
}

// TestGroupCommitAtMost2000Writes: a batch is committed after 2000
// writes, however many more are queued.
func TestGroupCommitAtMost2000Writes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newBatchRig(t)
		r.post(0, 4500) // more than the queue holds: waits for room
		if diff := cmp.Diff([]int{2000, 2000, 500}, sizes(r.close(4500))); diff != "" {
			t.Errorf("jobs per commit (-want +got):\n%s", diff)
		}
	})
}

// TestGroupCommitAtMost10ms: writes that keep coming keep a batch open
// for 10 ms and no longer: 100 writes 0.3 ms apart are committed 34 at a
// time, each batch 10 ms after its first write.
func TestGroupCommitAtMost10ms(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newBatchRig(t)
		for i := range 100 {
			r.post(i, 1)
			time.Sleep(300 * time.Microsecond)
		}
		bs := r.close(100)
		if diff := cmp.Diff([]int{34, 34, 32}, sizes(bs)); diff != "" {
			t.Errorf("jobs per commit (-want +got):\n%s", diff)
		}
		for i, b := range bs[:len(bs)-1] {
			if span := b.commit - b.first; span != 10*time.Millisecond {
				t.Errorf("batch %d committed %v after its first write, want 10ms", i, span)
			}
		}
	})
}

// TestGroupCommitTrickleSharesCommits: at a trickle, where the queue is
// empty between writes, a batch nobody waits for still stays open until
// it is 10 ms old, so writes 3 ms apart are committed four at a time
// rather than one by one; the last is committed when the store closes.
func TestGroupCommitTrickleSharesCommits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newBatchRig(t)
		for i := range 9 {
			r.post(i, 1)
			time.Sleep(3 * time.Millisecond)
		}
		bs := r.close(9)
		if diff := cmp.Diff([]int{4, 4, 1}, sizes(bs)); diff != "" {
			t.Errorf("jobs per commit (-want +got):\n%s", diff)
		}
		for i, b := range bs[:2] {
			if wait := b.commit - b.first; wait != 10*time.Millisecond {
				t.Errorf("batch %d committed %v after its first write, want 10ms", i, wait)
			}
		}
	})
}

// TestGroupCommitLoneWriteWithin10ms: a single write with nothing after
// it is committed 10 ms after it ran, not held until more come.
func TestGroupCommitLoneWriteWithin10ms(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newBatchRig(t)
		r.post(0, 1)
		time.Sleep(time.Second)
		synctest.Wait()
		if len(r.batches) != 1 || r.batches[0].commit-r.batches[0].first != 10*time.Millisecond {
			t.Errorf("batches %+v; want the write committed 10 ms after it ran", r.batches)
		}
		r.close(1)
	})
}

// TestGroupCommitWaiterIsCommittedAtOnce: a write whose caller waits for
// its commit (an outbox entry, a turn's admission) is committed at once,
// with the writes handed in before it, without waiting for the batch to
// come of age.
func TestGroupCommitWaiterIsCommittedAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newBatchRig(t)
		r.post(0, 10)
		start := time.Now()
		if err := r.w.do(r.job(10), false, true); err != nil {
			t.Fatal(err)
		}
		if took := time.Since(start); took != 0 {
			t.Errorf("the waiting write was committed %v after it was handed in, want at once", took)
		}
		bs := r.close(11)
		if len(bs) == 0 || bs[0].jobs != 11 || bs[0].commit != bs[0].first {
			t.Errorf("batches %+v; want the 10 writes and the waiting one committed together, at once", bs)
		}
	})
}

// TestLogBurstSharesCommits: through the store, a burst of inbound log
// entries (which nobody waits for) is committed in a few batches, not one
// commit per message.
func TestLogBurstSharesCommits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		d, err := Open(ctx, filepath.Join(t.TempDir(), "p.db"), Options{})
		if err != nil {
			t.Fatal(err)
		}
		before := d.w.commits.Load()
		peer := msg.Peer{Kind: msg.Group, ID: "1"}
		for i := range 1000 {
			m := msg.Message{ID: msg.MessageID(strconv.Itoa(i)), Channel: "onebot", Account: "default", Peer: peer, Time: time.Now(), Text: "hi"}
			if _, err := d.LogInbound(ctx, m, store.ViewHistory); err != nil {
				t.Fatal(err)
			}
		}
		if err := d.Close(); err != nil {
			t.Fatal(err)
		}
		if n := d.w.commits.Load() - before; n != 1 {
			t.Errorf("1000 log entries took %d commits, want 1", n)
		}
	})
}

// TestPostedWritesWaitForTheBatch: a write nobody waits for, handed in
// while a batch is open, does not wake the writer: it runs when the batch
// is due, with the others. A job a caller waits for runs at once, after
// every write its goroutine posted before it, and sees them.
func TestPostedWritesWaitForTheBatch(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newBatchRig(t)
		var mu sync.Mutex
		var ran []time.Duration
		note := func(tx *sql.Conn) error {
			mu.Lock()
			ran = append(ran, time.Since(r.began))
			mu.Unlock()
			return nil
		}
		runs := func() []time.Duration {
			mu.Lock()
			defer mu.Unlock()
			return slices.Clone(ran)
		}
		r.post(0, 1) // opens the batch at 0
		time.Sleep(3 * time.Millisecond)
		if err := r.w.post(note, false); err != nil {
			t.Fatal(err)
		}
		time.Sleep(3 * time.Millisecond)
		synctest.Wait()
		if got := runs(); len(got) != 0 {
			t.Errorf("a write posted at 3ms ran at %v, before its batch was due", got)
		}
		time.Sleep(5 * time.Millisecond) // 11 ms: the batch was due at 10
		synctest.Wait()
		if diff := cmp.Diff([]time.Duration{10 * time.Millisecond}, runs()); diff != "" {
			t.Errorf("when the posted write ran (-want +got):\n%s", diff)
		}

		// A batch open again; a goroutine posts two rows and then reads.
		r.post(1, 1)
		time.Sleep(2 * time.Millisecond)
		r.post(2, 2)
		var rows int
		var at time.Duration
		err := r.w.do(func(tx *sql.Conn) error {
			at = time.Since(r.began)
			return tx.QueryRowContext(context.Background(), "SELECT count(*) FROM t").Scan(&rows)
		}, false, false)
		if err != nil {
			t.Fatal(err)
		}
		if rows != 4 || at != 13*time.Millisecond {
			t.Errorf("the read ran at %v and saw %d rows; want at once (13ms), seeing all 4 written", at, rows)
		}
		r.close(4)
	})
}

// TestAJobWhoseBatchCannotBeginIsNotRun: a job whose batch cannot begin
// is told why and never runs; a job handed to a closed writer is refused.
func TestAJobWhoseBatchCannotBeginIsNotRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newBatchRig(t)
		// A batch that cannot begin: another connection holds the
		// database's write lock, and the rig's connection does not wait.
		var path string
		if err := r.w.do(func(tx *sql.Conn) error {
			var seq int
			var name string
			return tx.QueryRowContext(context.Background(), "PRAGMA database_list").Scan(&seq, &name, &path)
		}, false, false); err != nil {
			t.Fatal(err)
		}
		time.Sleep(20 * time.Millisecond)
		synctest.Wait()
		other, err := sql.Open("sqlite", "file:"+path)
		if err != nil {
			t.Fatal(err)
		}
		defer other.Close()
		lock, err := other.Conn(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if _, err := lock.ExecContext(context.Background(), "BEGIN IMMEDIATE"); err != nil {
			t.Fatal(err)
		}
		ran := false
		err = r.w.do(func(*sql.Conn) error { ran = true; return nil }, false, false)
		if err == nil || ran {
			t.Fatalf("a job whose batch could not begin: ran %v, %v", ran, err)
		}
		if _, err := lock.ExecContext(context.Background(), "ROLLBACK"); err != nil {
			t.Fatal(err)
		}
		lock.Close()
		r.close(0)
		if err := r.w.post(r.job(2), false); !errors.Is(err, ErrClosed) {
			t.Errorf("post to a closed writer: %v", err)
		}
	})
}
