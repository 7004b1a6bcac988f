package doctor

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/pincerbot/pincer/internal/config"
)

// checkPostgres connects to the database store.dsn names and reads the
// server's version and how far the store's migrations went. It writes
// nothing: pincer serve migrates.
func checkPostgres(ctx context.Context, s config.Store) Result {
	res := Result{Name: "store"}
	cc, err := pgx.ParseConfig(s.DSN.Value())
	if err != nil {
		res.Status, res.Detail = Fail, fmt.Sprintf("store.dsn: %v", err)
		res.Hint = "store.dsn is a postgres:// URL, e.g. postgres://pincer:password@127.0.0.1:5432/pincer"
		return res
	}
	where := fmt.Sprintf("%s@%s:%d/%s", cc.User, cc.Host, cc.Port, cc.Database)
	conn, err := pgx.ConnectConfig(ctx, cc)
	if err != nil {
		res.Status, res.Detail = Fail, fmt.Sprintf("PostgreSQL %s: %v", where, err)
		res.Hint = "check that the server runs and store.dsn names its host, port, user, password and database"
		return res
	}
	defer conn.Close(context.WithoutCancel(ctx))
	var version string
	var tables bool
	var migrated *int64
	err = conn.QueryRow(ctx, `SELECT current_setting('server_version'), to_regclass('goose_db_version') IS NOT NULL`).Scan(&version, &tables)
	if err == nil && tables {
		err = conn.QueryRow(ctx, `SELECT max(version_id) FROM goose_db_version WHERE is_applied`).Scan(&migrated)
	}
	if err != nil {
		res.Status, res.Detail = Fail, fmt.Sprintf("PostgreSQL %s: %v", where, err)
		return res
	}
	res.Status = OK
	if migrated == nil {
		res.Detail = fmt.Sprintf("PostgreSQL %s at %s, no pincer tables yet; pincer serve creates them", version, where)
	} else {
		res.Detail = fmt.Sprintf("PostgreSQL %s at %s, schema version %d", version, where, *migrated)
	}
	return res
}
