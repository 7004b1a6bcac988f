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
}

// The log restarts from its beginning (its file is written over rather
// than grown) only when a write begins after a checkpoint copied all of
// it. A background checkpoint takes milliseconds, and under a steady
// stream of commits one always lands meanwhile: the log then never
// restarted, and grew by the whole stream (12 MB a second at a thousand
// messages a second, every page appended to a longer file). So when a
// background checkpoint leaves more than restartAfter pages behind it,
// the writer copies what is left itself, before its next batch: few pages
// (those of the commits made during the background one), after which the
// log is all copied and the writer's next transaction starts it over.
var restartAfter = 4096 // pages: 16 MiB of log at 4 KiB a page (a variable for tests)

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

// pass runs one background checkpoint, and asks the writer to finish it
// when the log is long (see restartAfter).
func (c *checkpointer) pass() error {
	var busy, log, copied int
	err := c.db.QueryRowContext(context.Background(), "PRAGMA wal_checkpoint(PASSIVE)").Scan(&busy, &log, &copied)
	if err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	// log is the log's length when the checkpoint began: what commits
	// added since, it neither counts nor copied.
	if log > restartAfter && c.finish != nil {
		c.finish()
	}
	return nil
}

// close stops the checkpoints and closes the connection; the last
// connection to close (the writer's) checkpoints what is left.
func (c *checkpointer) close() error {
	close(c.stop)
	<-c.stopped
	return c.db.Close()
}
