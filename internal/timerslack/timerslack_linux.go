package timerslack

import (
	"fmt"
	"runtime"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// kernelDefault is a thread's slack unless someone set it: 50 µs.
const kernelDefault = 50 * time.Microsecond

// Current is the slack of the calling thread.
func Current() (time.Duration, error) {
	ns, err := unix.PrctlRetInt(unix.PR_GET_TIMERSLACK, 0, 0, 0, 0)
	if err != nil {
		return 0, fmt.Errorf("timer slack: %w", err)
	}
	return time.Duration(ns), nil
}

// Reexec executes the running binary again with args (os.Args) and env,
// on a thread whose slack is want, when the slack is the kernel's
// default. It returns only when it did not: nil when the slack was set
// already, else why it could not.
func Reexec(want time.Duration, args, env []string) error {
	runtime.LockOSThread() // the slack set is this thread's, and exec runs on it
	defer runtime.UnlockOSThread()
	cur, err := Current()
	if err != nil || cur != kernelDefault {
		return err
	}
	if err := unix.Prctl(unix.PR_SET_TIMERSLACK, uintptr(want.Nanoseconds()), 0, 0, 0); err != nil {
		return fmt.Errorf("timer slack: set %v: %w", want, err)
	}
	// /proc/self/exe is the running binary even when its file was
	// replaced or removed since it started.
	err = syscall.Exec("/proc/self/exe", args, env)
	// Still here: the thread keeps want, the others the default.
	return fmt.Errorf("timer slack: execute the binary again: %w", err)
}
