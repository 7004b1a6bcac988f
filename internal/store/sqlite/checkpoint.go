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
}

func startCheckpointer(dsn string, note func(error)) (*checkpointer, error) {
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("checkpoint connection: %w", err)
	}
	db.SetMaxOpenConns(1)
	c := &checkpointer{db: db, stop: make(chan struct{}), stopped: make(chan struct{}), note: note}
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
			if _, err := c.db.ExecContext(context.Background(), "PRAGMA wal_checkpoint(PASSIVE)"); err != nil {
				c.note(fmt.Errorf("checkpoint: %w", err))
			}
		}
	}
}

// close stops the checkpoints and closes the connection; the last
// connection to close (the writer's) checkpoints what is left.
func (c *checkpointer) close() error {
	close(c.stop)
	<-c.stopped
	return c.db.Close()
}
