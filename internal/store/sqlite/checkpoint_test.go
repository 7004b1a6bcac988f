package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/pincerbot/pincer/internal/msg"
	"github.com/pincerbot/pincer/internal/store"
)

// TestCheckpointsRunInTheBackground: commits never copy the log into the
// database file themselves; the background checkpoint does, within
// checkpointEvery.
func TestCheckpointsRunInTheBackground(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		path := filepath.Join(t.TempDir(), "p.db")
		d, err := Open(ctx, path, Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer d.Close()
		size := func() int64 {
			fi, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			return fi.Size()
		}
		// Settle whatever checkpoint opening the database started.
		time.Sleep(2 * checkpointEvery)
		synctest.Wait()
		before := size()
		// Outbox entries wait for their commit: 600 commits of 10 kB.
		for i := range 600 {
			e := store.OutboxEntry{ID: strconv.Itoa(i), Channel: "onebot", Out: msg.Outbound{Account: "default", Text: strings.Repeat("x", 10000)}}
			if _, err := d.AddOutbox(ctx, e); err != nil {
				t.Fatal(err)
			}
		}
		if got := size(); got > before+(1<<20) {
			t.Fatalf("the database file grew from %d to %d bytes before any checkpoint: a commit checkpointed", before, got)
		}
		time.Sleep(checkpointEvery)
		synctest.Wait()
		if got := size(); got < before+(1<<20) {
			t.Fatalf("the database file is %d bytes (was %d) a checkpoint interval later: no checkpoint ran", got, before)
		}
	})
}

// TestCloseTwice: closing the database again is harmless and returns what
// the first close did.
func TestCloseTwice(t *testing.T) {
	st, err := Open(context.Background(), filepath.Join(t.TempDir(), "twice.db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	first := st.Close()
	if second := st.Close(); !errors.Is(second, first) && second != first {
		t.Errorf("second close %v, first %v", second, first)
	}
}

// TestTheLogRestartsUnderASteadyStream: a commit that lands while the
// background checkpoint runs leaves the log not all copied, and the log
// then never started over (it grew by the whole stream). When the
// checkpoint leaves a long log, the writer copies the rest before its
// next batch, and that batch starts the log over.
func TestTheLogRestartsUnderASteadyStream(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := openShortLog(t)
		ctx := context.Background()
		n := 0
		write := func() error {
			n++
			_, err := d.AddOutbox(ctx, store.OutboxEntry{ID: "r" + strconv.Itoa(n), Channel: "onebot", Out: msg.Outbound{Account: "default", Peer: msg.Peer{Kind: msg.Group, ID: strconv.Itoa(n)}, Text: strings.Repeat("回复", 500)}})
			return err
		}
		for range 20 {
			if err := write(); err != nil {
				t.Fatal(err)
			}
		}
		logLength := func() int {
			var busy, log, copied int
			if err := d.cp.db.QueryRowContext(ctx, "PRAGMA wal_checkpoint(PASSIVE)").Scan(&busy, &log, &copied); err != nil {
				t.Fatal(err)
			}
			return log
		}

		// A batch is open (its BEGIN ran) while the background checkpoint
		// copies the log; it commits after.
		inBatch, checkpointed := make(chan struct{}), make(chan struct{})
		committed := make(chan error)
		go func() {
			committed <- d.w.do(func(tx *sql.Conn) error {
				close(inBatch)
				<-checkpointed
				_, err := d.exec(ctx, tx, `INSERT INTO meta (key, value) VALUES ('during', 'x')`)
				return err
			}, false, true)
		}()
		<-inBatch
		if err := d.cp.pass(); err != nil {
			t.Fatal(err)
		}
		close(checkpointed)
		if err := <-committed; err != nil {
			t.Fatal(err)
		}
		// The log has not started over yet: its file holds every page
		// written so far.
		fi, err := os.Stat(d.path + "-wal")
		if err != nil {
			t.Fatal(err)
		}
		long := int((fi.Size() - 32) / (24 + 4096))
		finished := d.w.logsFinished.Load()
		if err := write(); err != nil {
			t.Fatal(err)
		}
		if got := d.w.logsFinished.Load() - finished; got != 1 {
			t.Errorf("the writer finished the checkpoint %d times before its next batch, want 1", got)
		}
		if got := logLength(); got*2 > long {
			t.Errorf("the log is %d pages after the next commit (%d before it): it did not start over", got, long)
		}
	})
}

// TestTheCheckpointCatchesUpBeforeTheWriterFinishes: the pages committed
// while a background pass over a long log ran are copied by further
// background passes, not by the writer, which every write waits for: the
// writer is asked to finish only when a pass found at most finishLeft new
// pages.
func TestTheCheckpointCatchesUpBeforeTheWriterFinishes(t *testing.T) {
	d := openShortLog(t)
	ctx := context.Background()
	n := 0
	write := func(tx *sql.Conn) error {
		n++
		body := `{"Text":"` + strings.Repeat("回复", 2000) + `"}`
		_, err := d.exec(ctx, tx, qAddOutbox, "r"+strconv.Itoa(n), "onebot", "default", "group:"+strconv.Itoa(n), body, "pending", int64(n), int64(n))
		return err
	}
	for range 20 {
		if err := d.w.do(write, false, true); err != nil {
			t.Fatal(err)
		}
	}
	frames := func() int {
		fi, err := os.Stat(d.path + "-wal")
		if err != nil {
			t.Fatal(err)
		}
		return int((fi.Size() - 32) / (24 + 4096))
	}

	// A batch begins before the first pass and commits about 100 pages
	// after it, as the commits made during a long pass do.
	began, release := make(chan struct{}), make(chan struct{})
	committed := make(chan error, 1)
	go func() {
		committed <- d.w.do(func(tx *sql.Conn) error {
			close(began)
			<-release
			for range 40 {
				if err := write(tx); err != nil {
					return err
				}
			}
			return nil
		}, false, true)
	}()
	<-began

	// The background checkpointer's connection, passes run here.
	c := &checkpointer{db: d.cp.db}
	var logs []int
	batch := 0 // pages the batch committed after the first pass
	c.passed = func(log int) {
		if logs = append(logs, log); len(logs) == 1 {
			close(release)
			if err := <-committed; err != nil {
				t.Fatal(err)
			}
			batch = frames() - log
		}
	}
	left := -1
	c.finish = func() { left = frames() - logs[len(logs)-1] }
	if err := c.pass(); err != nil {
		t.Fatal(err)
	}
	if left < 0 {
		t.Fatalf("the writer was not asked to finish (passes found logs of %v pages)", logs)
	}
	if batch < 100 {
		t.Fatalf("the batch committed %d pages after the first pass, want 100 or more", batch)
	}
	if left > finishLeft {
		t.Errorf("the writer was asked to copy %d pages (passes found logs of %v pages), want at most %d", left, logs, finishLeft)
	}
}

// openShortLog opens a database whose log counts as long past 8 pages,
// for the test (restartAfter is restored and the database closed after
// it).
func openShortLog(t *testing.T) *DB {
	t.Helper()
	n := restartAfter
	restartAfter = 8
	d, err := Open(context.Background(), filepath.Join(t.TempDir(), "p.db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		d.Close()
		restartAfter = n
	})
	return d
}
