package gateway

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"time"

	"github.com/pincerbot/pincer/internal/config"
	"github.com/pincerbot/pincer/internal/dirlock"
	"github.com/pincerbot/pincer/internal/store"
	"github.com/pincerbot/pincer/internal/store/postgres"
	"github.com/pincerbot/pincer/internal/store/sqlite"
	"github.com/pincerbot/pincer/internal/trace"
)

// runStore is what Run needs of the store: the store itself, the decision
// traces' keeping and the outcome of its latest write.
type runStore interface {
	store.Store
	trace.Store
	Health() error
}

var (
	_ runStore = (*sqlite.DB)(nil)
	_ runStore = (*postgres.DB)(nil)
)

// openStore opens the store cfg names. release gives up what was taken
// to open it, after the store is closed.
//
// For SQLite that is the data directory, the directory of store.path:
// one pincer at a time on it, as a second would write the same database,
// workspace and staged media. It is locked before anything is written
// there (after the store's own read-only check, which writes nothing and
// names a read-only directory more clearly than the lock file could); the
// system drops the lock when the process dies, however it dies. While
// another process holds it, the error wraps dirlock.ErrHeld and names the
// directory and its holder. PostgreSQL takes nothing: several pincers
// may share a server.
func openStore(ctx context.Context, cfg config.Store, version string, log *slog.Logger) (st runStore, release func() error, err error) {
	if cfg.Driver == "postgres" {
		db, err := postgres.Open(ctx, cfg.DSN.Value(), postgres.Options{Logger: log})
		if err != nil {
			return nil, nil, fmt.Errorf("store.dsn: %w", err)
		}
		return db, func() error { return nil }, nil
	}
	if err := sqlite.CheckWritable(cfg.Path); err != nil {
		return nil, nil, err
	}
	held, err := dirlock.Acquire(filepath.Dir(cfg.Path), version)
	if errors.Is(err, dirlock.ErrHeld) {
		return nil, nil, fmt.Errorf("store.path %s: %w; stop that pincer first, or give this one a store.path in another directory", cfg.Path, err)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("store.path %s: %w", cfg.Path, err)
	}
	db, err := sqlite.Open(ctx, cfg.Path, sqlite.Options{BusyTimeout: time.Duration(cfg.BusyTimeoutMs) * time.Millisecond, Logger: log})
	if err != nil {
		return nil, nil, errors.Join(err, held.Release())
	}
	return db, held.Release, nil
}

// storeName says where the store is, for the log: the SQLite file, or
// "postgres" (the DSN may hold a password).
func storeName(cfg config.Store) string {
	if cfg.Driver == "postgres" {
		return "postgres"
	}
	return cfg.Path
}
