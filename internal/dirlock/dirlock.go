// Package dirlock keeps a data directory to one process at a time: an
// exclusive lock on a file in it, taken without waiting and held until
// Release or the end of the process.
//
// The operating system holds the lock (flock(2) on Linux, macOS and the
// BSDs; LockFileEx on Windows), so it goes with the process however that
// ends: a crash or a kill -9 never leaves a directory locked. The holder
// writes its pid, host, start time and version into the lock file, for
// the error a second process gets and for Probe; that record never
// decides anything, the lock does.
package dirlock

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

// FileName is the lock file's name in the directory it locks. The file
// stays when its holder ends: removing it would let one process lock the
// removed file while another locks a new one of the same name.
const FileName = "pincer.lock"

// Holder is what a lock file records of the process that took the lock.
type Holder struct {
	PID     int       `json:"pid"`
	Host    string    `json:"host,omitempty"`
	Started time.Time `json:"started"`
	Version string    `json:"version,omitempty"`
}

// String describes the holder for an error message or a report:
// "pid 4242 on box, started 2025-06-01 10:00:00 +0800, version v1.2.3".
func (h Holder) String() string {
	s := "pid " + strconv.Itoa(h.PID)
	if h.Host != "" {
		s += " on " + h.Host
	}
	if !h.Started.IsZero() {
		s += ", started " + h.Started.Format("2006-01-02 15:04:05 -0700")
	}
	if h.Version != "" {
		s += ", version " + h.Version
	}
	return s
}

// ErrHeld is what a HeldError is, for errors.Is.
var ErrHeld = errors.New("the directory is locked by another process")

// HeldError is Acquire's error when another process holds the directory.
type HeldError struct {
	// Dir is the directory, absolute; Path its lock file.
	Dir, Path string
	// Holder is what the lock file says of the process holding it; nil
	// when it says nothing readable (the holder may be writing it).
	Holder *Holder
}

func (e *HeldError) Error() string {
	s := "data directory " + e.Dir + " is in use by another pincer ("
	if e.Holder != nil {
		s += e.Holder.String() + "; "
	}
	return s + "lock file " + e.Path + ")"
}

// Is makes errors.Is(err, ErrHeld) true of a HeldError.
func (e *HeldError) Is(target error) bool { return target == ErrHeld }

// Lock is a directory held by this process.
type Lock struct {
	f    *os.File
	dir  string
	path string
}

// Dir is the directory held, absolute.
func (l *Lock) Dir() string { return l.dir }

// settle and settleStep bound how long Acquire retries a lock that is
// held: Probe holds it (shared) for an instant, which must not make a
// process that starts at that moment refuse; a real holder keeps it.
const (
	settle     = 200 * time.Millisecond
	settleStep = 10 * time.Millisecond
)

// Acquire locks dir for this process, creating the directory and the lock
// file when needed, and records this process (with version) in the file.
// When another process holds dir, it returns a *HeldError naming the
// directory and what the file says of its holder.
func Acquire(dir, version string) (*Lock, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("data directory %s: %w", dir, err)
	}
	if err := os.MkdirAll(abs, 0o700); err != nil {
		return nil, fmt.Errorf("data directory %s: %w", abs, err)
	}
	path := filepath.Join(abs, FileName)
	f, err := openLockFile(path, true)
	if err != nil {
		return nil, fmt.Errorf("data directory %s: %w", abs, err)
	}
	deadline := time.Now().Add(settle)
	for {
		err = lock(f, true)
		if !errors.Is(err, errWouldBlock) || !time.Now().Before(deadline) {
			break
		}
		time.Sleep(settleStep)
	}
	if errors.Is(err, errWouldBlock) {
		h := readHolder(f)
		f.Close()
		return nil, &HeldError{Dir: abs, Path: path, Holder: h}
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("data directory %s: lock %s: %w", abs, path, err)
	}
	host, _ := os.Hostname()
	rec, err := json.Marshal(Holder{PID: os.Getpid(), Host: host, Started: time.Now().Round(time.Second), Version: version})
	if err == nil {
		err = f.Truncate(0)
	}
	if err == nil {
		_, err = f.WriteAt(append(rec, '\n'), 0)
	}
	if err != nil {
		_ = unlock(f)
		f.Close()
		return nil, fmt.Errorf("data directory %s: write %s: %w", abs, path, err)
	}
	return &Lock{f: f, dir: abs, path: path}, nil
}

// openLockFile opens the lock file at path for reading and writing, as
// Acquire holds it, creating it when create.
func openLockFile(path string, create bool) (*os.File, error) {
	flags := os.O_RDWR
	if create {
		flags |= os.O_CREATE
	}
	f, err := os.OpenFile(path, flags, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open the lock file: %w", err)
	}
	return f, nil
}

// Writable returns the error Acquire would meet opening the lock file of
// dir, nil when it would meet none. It opens an existing lock file for
// writing, as Acquire does, and closes it unchanged; it creates nothing,
// so a directory without a lock file yet is not looked into.
func Writable(dir string) error {
	f, err := openLockFile(filepath.Join(dir, FileName), false)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	return f.Close()
}

// Release empties the lock file's record and lets the directory go. Call
// it once.
func (l *Lock) Release() error {
	// The record is cleared while the lock is still held, so a record
	// left in the file tells of a holder that ended without Release.
	terr := l.f.Truncate(0)
	uerr := unlock(l.f)
	cerr := l.f.Close()
	if err := errors.Join(terr, uerr, cerr); err != nil {
		return fmt.Errorf("data directory %s: release %s: %w", l.dir, l.path, err)
	}
	return nil
}

// Probe reports whether a process holds dir, without waiting and without
// creating anything. It takes a shared lock on the lock file for an
// instant, which leaves a holder undisturbed (and Acquire waits it out).
// holder is what the file records: the holder's record when held; when
// not, the record of the last holder if it ended without Release (a
// crash, a kill -9), else nil.
func Probe(dir string) (held bool, holder *Holder, err error) {
	path := filepath.Join(dir, FileName)
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil, nil
	}
	if err != nil {
		return false, nil, fmt.Errorf("open the lock file: %w", err)
	}
	defer f.Close()
	err = lock(f, false)
	switch {
	case errors.Is(err, errWouldBlock):
		return true, readHolder(f), nil
	case err != nil:
		return false, nil, fmt.Errorf("lock %s: %w", path, err)
	}
	holder = readHolder(f)
	if err := unlock(f); err != nil {
		return false, nil, fmt.Errorf("unlock %s: %w", path, err)
	}
	return false, holder, nil
}

// readHolder reads the record in a lock file; nil when there is none, or
// none that parses.
func readHolder(f *os.File) *Holder {
	b, err := io.ReadAll(io.NewSectionReader(f, 0, 4096))
	if err != nil || len(b) == 0 {
		return nil
	}
	var h Holder
	if err := json.Unmarshal(b, &h); err != nil || h.PID <= 0 {
		return nil
	}
	return &h
}
