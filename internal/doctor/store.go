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
		res.Status, res.Detail = Fail, fmt.Sprintf("%s: open: %v", s.Path, err)
		return res
	}
	defer db.Close()
	var verdict string
	if err := db.QueryRowContext(ctx, "PRAGMA integrity_check").Scan(&verdict); err != nil {
		res.Status, res.Detail = Fail, fmt.Sprintf("%s: integrity check: %v", s.Path, err)
		res.Hint = "is it a pincer database? Move it aside and pincer serve starts a new one"
		return res
	}
	if verdict != "ok" {
		res.Status, res.Detail = Fail, fmt.Sprintf("%s is damaged: %s", s.Path, verdict)
		res.Hint = "stop pincer, keep a copy, and restore a backup (or recover it with sqlite3 .recover)"
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
		res.Status, res.Detail = OK, "no pincer serve runs on "+dir
		if holder != nil {
			res.Detail += "; the last one (" + holder.String() + ") did not stop cleanly"
		}
	}
	return res
}
