package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"time"
)

// Checkpoints — copying the write-ahead log back into the database file,
// with its fsyncs — run on a connection of their own, in the background,
// every two seconds (each one writes every page changed since the last
// once, and two fsyncs, however often the page changed in between),
// rather than inside whichever commit crosses SQLite's threshold: that
// commit, and every write queued behind it, would wait milliseconds for
// the disk. A passive checkpoint never blocks the writer.
const checkpointEvery = 2 * time.Second

// checkpointer runs passive checkpoints on its own connection until
// stopped.
type checkpointer struct {
	db      *sql.DB
	stop    chan struct{}
	stopped chan struct{}
	note    func(error)
	// finish asks the writer to copy the rest of the log (see
	// restartAfter).
	finish func()
	// passed, when set (by tests), learns the log's length at the start
	// of each checkpoint pass runs.
	passed func(log int)
}

// The log restarts from its beginning (its file is written over rather
// than grown) only when a write begins after a checkpoint copied all of
// it. A background checkpoint takes milliseconds, and under a steady
// stream of commits one always lands meanwhile: the log then never
// restarted, and grew by the whole stream (12 MB a second at a thousand
// messages a second, every page appended to a longer file). So when the
// log is longer than restartAfter pages, the writer copies what the
// background checkpoint left of it itself, before its next batch, after
// which the log is all copied and the writer's next transaction starts it
// over.
//
// Every write waits while the writer copies, and so does the @ whose turn
// is about to be admitted: what the writer copies must be few pages. A
// background pass over a long log takes tens of milliseconds, and the
// commits made meanwhile were hundreds of pages, which the writer then
// took 5 to 20 ms to copy and sync, every two seconds at a thousand
// messages a second with an @ in ten.
// So before it asks the writer, the checkpointer catches up: it runs
// further passes, each over what was committed during the one before (and
// so shorter than it), until one finds at most finishLeft new pages (or
// after catchUps passes); the writer is left the pages of the last short
// pass.
var restartAfter = 4096 // pages: 16 MiB of log at 4 KiB a page (a variable for tests)

const (
	finishLeft = 16
	catchUps   = 6
)

func startCheckpointer(dsn string, note func(error), finish func()) (*checkpointer, error) {
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("checkpoint connection: %w", err)
	}
	db.SetMaxOpenConns(1)
	c := &checkpointer{db: db, stop: make(chan struct{}), stopped: make(chan struct{}), note: note, finish: finish}
	go c.run()
	return c, nil
}

func (c *checkpointer) run() {
	defer close(c.stopped)
	t := time.NewTicker(checkpointEvery)
	defer t.Stop()
	for {
		select {
		case <-c.stop:
			return
		case <-t.C:
			if err := c.pass(); err != nil {
				c.note(err)
			}
		}
	}
}

// pass runs one background checkpoint and, when the log is long, catches
// up and asks the writer to finish it (see restartAfter).
func (c *checkpointer) pass() error {
	log, err := c.checkpoint()
	if err != nil || log <= restartAfter || c.finish == nil {
		return err
	}
	for range catchUps {
		prev := log
		if log, err = c.checkpoint(); err != nil {
			return err
		}
		if log < prev {
			// A write began after a pass copied all of it: the log started
			// over by itself.
			return nil
		}
		if log-prev <= finishLeft {
			break
		}
	}
	c.finish()
	return nil
}

// checkpoint runs one passive checkpoint and returns the log's length, in
// pages, when it began: what commits added since, it neither counts nor
// copied.
func (c *checkpointer) checkpoint() (log int, err error) {
	var busy, copied int
	if err := c.db.QueryRowContext(context.Background(), "PRAGMA wal_checkpoint(PASSIVE)").Scan(&busy, &log, &copied); err != nil {
		return 0, fmt.Errorf("checkpoint: %w", err)
	}
	if c.passed != nil {
		c.passed(log)
	}
	return log, nil
}

// close stops the checkpoints and closes the connection; the last
// connection to close (the writer's) checkpoints what is left.
func (c *checkpointer) close() error {
	close(c.stop)
	<-c.stopped
	return c.db.Close()
}
