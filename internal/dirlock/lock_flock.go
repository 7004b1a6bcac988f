//go:build darwin || dragonfly || freebsd || linux || netbsd || openbsd

package dirlock

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// errWouldBlock is lock's error when another process holds a conflicting
// lock.
var errWouldBlock = unix.EWOULDBLOCK

// lock takes flock(2) on f without waiting: exclusive, or shared. The
// kernel releases it when the last descriptor of the open file closes,
// at the latest when the process ends.
func lock(f *os.File, exclusive bool) error {
	how := unix.LOCK_SH
	if exclusive {
		how = unix.LOCK_EX
	}
	return flock(f, how|unix.LOCK_NB)
}

func unlock(f *os.File) error { return flock(f, unix.LOCK_UN) }

func flock(f *os.File, how int) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var ferr error
	if err := rc.Control(func(fd uintptr) {
		for {
			ferr = unix.Flock(int(fd), how)
			if !errors.Is(ferr, unix.EINTR) {
				return
			}
		}
	}); err != nil {
		return err
	}
	return ferr
}
