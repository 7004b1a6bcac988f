package doctor

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"

	_ "modernc.org/sqlite" // registers the "sqlite" driver

	"github.com/pincerbot/pincer/internal/config"
	"github.com/pincerbot/pincer/internal/dirlock"
	"github.com/pincerbot/pincer/internal/store/sqlite"
)

// checkStore opens the SQLite file read-only, when there is one, and
// runs its integrity check. It never creates or migrates the database:
// pincer serve does that. A file or directory pincer serve would refuse
// as read-only (sqlite.CheckWritable) fails here with the same reason.
func checkStore(ctx context.Context, s config.Store) Result {
	res := Result{Name: "store"}
	switch st, err := os.Stat(s.Path); {
	case errors.Is(err, fs.ErrNotExist):
		dir := filepath.Dir(s.Path)
		for {
			if _, err := os.Stat(dir); err == nil || filepath.Dir(dir) == dir {
				break
			}
			dir = filepath.Dir(dir)
		}
		if st, err := os.Stat(dir); err != nil || !st.IsDir() {
			res.Status, res.Detail = Fail, fmt.Sprintf("%s does not exist and %s is not a directory", s.Path, dir)
			res.Hint = "set store.path to a file in a directory pincer may write"
			return res
		}
		if ro := readOnly(s.Path); ro != nil {
			return *ro
		}
		res.Status, res.Detail = OK, s.Path+" does not exist yet; pincer serve creates it"
		return res
	case err != nil:
		res.Status, res.Detail, res.Hint = Fail, fmt.Sprintf("%s: %v", s.Path, err), "check the path and its permissions"
		return res
	case st.IsDir():
		res.Status, res.Detail, res.Hint = Fail, s.Path+" is a directory", "store.path names the database file, e.g. ./data/pincer.db"
		return res
	}
	if ro := readOnly(s.Path); ro != nil {
		return *ro
	}
	q := url.Values{}
	q.Set("mode", "ro")
	q.Add("_pragma", "busy_timeout(2000)")
	db, err := sql.Open("sqlite", "file:"+(&url.URL{Path: s.Path}).EscapedPath()+"?"+q.Encode())
	if err != nil {
		return unreadable(s.Path, fmt.Errorf("open: %w", err))
	}
	defer db.Close()
	var verdict string
	if err := db.QueryRowContext(ctx, "PRAGMA integrity_check").Scan(&verdict); err != nil {
		return unreadable(s.Path, fmt.Errorf("integrity check: %w", err))
	}
	if verdict != "ok" {
		res.Status, res.Detail = Fail, fmt.Sprintf("%s is damaged: %s", s.Path, verdict)
		res.Hint = damagedHint
		return res
	}
	var version sql.NullInt64
	err = db.QueryRowContext(ctx, "SELECT MAX(version_id) FROM goose_db_version WHERE is_applied").Scan(&version)
	res.Status, res.Detail = OK, s.Path+": integrity ok"
	switch {
	case err != nil:
		res.Status = Warn
		res.Detail += ", but it has no pincer schema"
		res.Hint = "is store.path another program's database?"
	case version.Valid:
		res.Detail += fmt.Sprintf(", schema version %d", version.Int64)
	}
	return res
}

// damagedHint says what to do about a damaged database without risking
// what it still holds.
const damagedHint = "stop pincer, keep a copy, and restore a backup (or recover it with sqlite3 .recover)"

// SQLite's primary result codes, which tell why a database could not be
// read.
const (
	sqlitePerm     = 3
	sqliteReadOnly = 8
	sqliteCorrupt  = 11
	sqliteCantOpen = 14
	sqliteNotADB   = 26
)

// unreadable is the failed store check for a database that could not be
// opened or read, err saying why. Its advice never risks the data: a
// database that cannot be read for want of permission is left where it
// is, and the permissions are what to fix.
func unreadable(path string, err error) Result {
	res := Result{Name: "store", Status: Fail, Detail: fmt.Sprintf("%s: %v", path, err)}
	code := -1
	if coded, ok := errors.AsType[interface {
		error
		Code() int
	}](err); ok {
		code = coded.Code() & 0xff
	}
	dir := filepath.Dir(path)
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	switch code {
	case sqlitePerm, sqliteReadOnly, sqliteCantOpen:
		res.Detail += fmt.Sprintf("; SQLite keeps the database's -wal and -shm files in %s, which this user may not write, and pincer serve would not start on it either", dir)
		res.Hint = fmt.Sprintf("fix the permissions: make %s and the files in it writable for the user pincer runs as (chown, or chmod u+w); the database stays where it is", dir)
	case sqliteNotADB:
		res.Hint = "store.path names a file that is not a SQLite database: keep it, and set store.path to a new file, which pincer serve creates"
	case sqliteCorrupt:
		res.Hint = damagedHint
	default:
		res.Hint = fmt.Sprintf("check %s and the permissions of %s, keeping the file as it is", path, dir)
	}
	return res
}

// readOnly is the failed store check for a database pincer serve would
// refuse as read-only; nil when it would not.
func readOnly(path string) *Result {
	var ro *sqlite.ReadOnlyError
	if err := sqlite.CheckWritable(path); !errors.As(err, &ro) {
		return nil
	}
	return &Result{
		Name: "store", Status: Fail,
		Detail: fmt.Sprintf("%s is read-only: %s; pincer serve refuses to start on it", ro.Path, ro.Reason),
		Hint:   sqlite.ReadOnlyHint,
	}
}

// checkDataDir reports whether a pincer serve holds the data directory
// (the directory of store.path), by a probe of its lock that lasts an
// instant, leaves the holder undisturbed and creates nothing.
func checkDataDir(s config.Store) Result {
	res := Result{Name: "data directory"}
	dir, err := filepath.Abs(filepath.Dir(s.Path))
	if err != nil {
		res.Status, res.Detail = Warn, fmt.Sprintf("%s: %v", filepath.Dir(s.Path), err)
		return res
	}
	held, holder, err := dirlock.Probe(dir)
	switch {
	case err != nil:
		res.Status, res.Detail = Warn, fmt.Sprintf("cannot tell whether a pincer serve runs on %s: %v", dir, err)
		res.Hint = "run pincer doctor as the user pincer serve runs as"
	case held:
		res.Status, res.Detail = Warn, dir+" is in use by a running pincer serve"
		if holder != nil {
			res.Detail += " (" + holder.String() + ")"
		}
		res.Hint = "another pincer serve on this directory refuses to start: stop this one first, or give the other a store.path in another directory"
	default:
		// pincer serve opens the lock file for writing, and stops there
		// when it may not.
		if err := dirlock.Writable(dir); err != nil {
			res.Status, res.Detail = Fail, fmt.Sprintf("pincer serve cannot take %s: %v", dir, err)
			res.Hint = fmt.Sprintf("fix the permissions: make %s and the files in it writable for the user pincer runs as (chown, or chmod u+w)", dir)
			return res
		}
		res.Status, res.Detail = OK, "no pincer serve runs on "+dir
		if holder != nil {
			res.Detail += "; the last one (" + holder.String() + ") did not stop cleanly"
		}
	}
	return res
}
