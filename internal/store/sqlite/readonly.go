package sqlite

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// ReadOnlyHint says what to do about a *ReadOnlyError.
const ReadOnlyHint = "make it writable for the user pincer runs as (chmod u+w), or set store.path to another file"

// ReadOnlyError is Open's error for a database that may not be written:
// a file or directory without write permission, one the user may not
// write, one on a read-only file system. A file or directory whose mode
// has no write bit counts as read-only even for root, whom permissions do
// not bind: the mode says it is not to be written, and a store that
// starts anyway would write where its owner said not to.
type ReadOnlyError struct {
	// Path is the database file.
	Path string
	// Reason says what is read-only: "the file has no write permission
	// (-r--------)".
	Reason string
	// Err is the error the system or SQLite gave, if one did.
	Err error
}

func (e *ReadOnlyError) Error() string {
	return "sqlite: " + e.Path + " is read-only: " + e.Reason + "; pincer stores every message it takes in there: " + ReadOnlyHint
}

func (e *ReadOnlyError) Unwrap() error { return e.Err }

// CheckWritable returns a *ReadOnlyError when the database at path, or
// the directory it is (or is to be created) in, may not be written; nil
// when both may, or do not exist yet. It writes nothing: it looks at the
// modes, and opens an existing file for writing without changing it.
func CheckWritable(path string) error {
	if st, err := os.Stat(path); err == nil && st.Mode().IsRegular() {
		if st.Mode().Perm()&0o222 == 0 {
			return &ReadOnlyError{Path: path, Reason: fmt.Sprintf("the file has no write permission (mode %04o)", st.Mode().Perm())}
		}
		f, err := os.OpenFile(path, os.O_WRONLY, 0)
		if err != nil {
			if errors.Is(err, fs.ErrPermission) || errors.Is(err, syscall.EROFS) {
				return &ReadOnlyError{Path: path, Reason: "it cannot be opened for writing: " + rootCause(err), Err: err}
			}
			return nil // not a question of permission: Open says what it is
		}
		f.Close()
	}
	// SQLite creates the file's -wal and -shm next to it.
	dir := filepath.Dir(path)
	if st, err := os.Stat(dir); err == nil && st.IsDir() && st.Mode().Perm()&0o222 == 0 {
		return &ReadOnlyError{Path: path, Reason: fmt.Sprintf("its directory %s has no write permission (mode %04o)", dir, st.Mode().Perm())}
	}
	return nil
}

// readOnly is the *ReadOnlyError for SQLite's "attempt to write a
// readonly database" (the user may not write the file or its directory);
// nil for any other error.
func readOnly(path string, err error) *ReadOnlyError {
	const sqliteReadOnly = 8 // SQLITE_READONLY, the primary code of all its variants
	var coded interface{ Code() int }
	if errors.As(err, &coded) && coded.Code()&0xff == sqliteReadOnly {
		return &ReadOnlyError{Path: path, Reason: "SQLite may not write it or its directory (" + rootCause(err) + ")", Err: err}
	}
	return nil
}

// rootCause is the innermost error's text.
func rootCause(err error) string {
	for {
		next := errors.Unwrap(err)
		if next == nil {
			return err.Error()
		}
		err = next
	}
}
