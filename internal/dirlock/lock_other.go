//go:build !(darwin || dragonfly || freebsd || linux || netbsd || openbsd || windows)

package dirlock

import (
	"errors"
	"fmt"
	"os"
	"runtime"
)

// errWouldBlock is never returned here.
var errWouldBlock = errors.New("locked")

// lock fails: this system has neither flock(2) nor LockFileEx, and a lock
// that locks nothing would hide two processes on one directory.
func lock(*os.File, bool) error {
	return fmt.Errorf("locking a file is not supported on %s: %w", runtime.GOOS, errors.ErrUnsupported)
}

func unlock(*os.File) error { return nil }
