//go:build linux

package timerslack

import (
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// helperEnv makes the test binary a helper process that calls Reexec
// and prints the slack of each of its threads.
const helperEnv = "PINCER_TIMERSLACK_HELPER"

func TestHelperProcess(t *testing.T) {
	if os.Getenv(helperEnv) != "1" {
		t.Skip("run by the tests below as a process of its own")
	}
	if err := Reexec(Serve, os.Args, os.Environ()); err != nil {
		t.Fatal(err)
	}
	// Threads made from here on, as a serving pincer makes them: each
	// goroutine holds a thread of its own until the threads were read
	// (a goroutine that ends locked ends its thread with it).
	var locked, wg sync.WaitGroup
	read := make(chan struct{})
	for range 8 {
		locked.Add(1)
		wg.Go(func() {
			runtime.LockOSThread()
			locked.Done()
			<-read
		})
	}
	locked.Wait()
	defer wg.Wait()
	defer close(read)
	tasks, err := filepath.Glob("/proc/self/task/*")
	if err != nil || len(tasks) < 9 {
		t.Fatalf("threads: %v %v", tasks, err)
	}
	for _, task := range tasks {
		// A thread's slack is read under its id as a process's.
		b, err := os.ReadFile(filepath.Join("/proc", filepath.Base(task), "timerslack_ns"))
		if errors.Is(err, fs.ErrNotExist) {
			continue // a thread of the runtime's that ended meanwhile
		}
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("slack %s", strings.TrimSpace(string(b)))
	}
}

// slacks runs the helper from a thread whose slack is parent and returns
// the slacks its threads reported.
func slacks(t *testing.T, parent time.Duration) []string {
	t.Helper()
	runtime.LockOSThread() // the child is forked from this thread and takes its slack
	defer runtime.UnlockOSThread()
	old, err := Current()
	if err != nil {
		t.Fatal(err)
	}
	set := func(d time.Duration) {
		if err := unix.Prctl(unix.PR_SET_TIMERSLACK, uintptr(d.Nanoseconds()), 0, 0, 0); err != nil {
			t.Fatal(err)
		}
	}
	set(parent)
	defer set(old)
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$", "-test.v")
	cmd.Env = append(os.Environ(), helperEnv+"=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("helper: %v\n%s", err, out)
	}
	var got []string
	for _, line := range strings.Split(string(out), "\n") {
		if _, v, ok := strings.Cut(line, "slack "); ok {
			got = append(got, v)
		}
	}
	if len(got) < 9 {
		t.Fatalf("the helper reported %d threads, want its 8 locked ones and more:\n%s", len(got), out)
	}
	return got
}

// TestEveryThreadRunsWithTheSlack: from the kernel's default slack, the
// binary executed again runs every thread, the runtime's and those made
// later, with Serve's.
func TestEveryThreadRunsWithTheSlack(t *testing.T) {
	want := strconv.FormatInt(Serve.Nanoseconds(), 10)
	for i, got := range slacks(t, kernelDefault) {
		if got != want {
			t.Errorf("thread %d runs with a slack of %s ns, want %s", i, got, want)
		}
	}
}

// TestASlackSetBeforeIsKept: a slack the operator set (systemd's
// TimerSlackNSec=) is not replaced, and nothing is executed again.
func TestASlackSetBeforeIsKept(t *testing.T) {
	for i, got := range slacks(t, 2*time.Millisecond) {
		if got != "2000000" {
			t.Errorf("thread %d runs with a slack of %s ns, want the 2000000 set before", i, got)
		}
	}
}
