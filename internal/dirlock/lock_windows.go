//go:build windows

package dirlock

import (
	"os"

	"golang.org/x/sys/windows"
)

// errWouldBlock is lock's error when another process holds a conflicting
// lock.
var errWouldBlock = windows.ERROR_LOCK_VIOLATION

// The lock is one byte far beyond the end of the file: a locked range on
// Windows cannot be read by other processes, and the holder's record at
// the start of the file must stay readable for their error messages.
const (
	lockOffsetLow  = 0xffffffff
	lockOffsetHigh = 0x7fffffff
)

// lock takes LockFileEx on f without waiting: exclusive, or shared.
// Windows releases it when the handle closes, at the latest when the
// process ends.
func lock(f *os.File, exclusive bool) error {
	flags := uint32(windows.LOCKFILE_FAIL_IMMEDIATELY)
	if exclusive {
		flags |= windows.LOCKFILE_EXCLUSIVE_LOCK
	}
	return control(f, func(h windows.Handle) error {
		return windows.LockFileEx(h, flags, 0, 1, 0, &windows.Overlapped{Offset: lockOffsetLow, OffsetHigh: lockOffsetHigh})
	})
}

func unlock(f *os.File) error {
	return control(f, func(h windows.Handle) error {
		return windows.UnlockFileEx(h, 0, 1, 0, &windows.Overlapped{Offset: lockOffsetLow, OffsetHigh: lockOffsetHigh})
	})
}

func control(f *os.File, fn func(windows.Handle) error) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var ferr error
	if err := rc.Control(func(fd uintptr) { ferr = fn(windows.Handle(fd)) }); err != nil {
		return err
	}
	return ferr
}
