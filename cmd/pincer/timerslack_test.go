//go:build linux

package main

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pincerbot/pincer/internal/timerslack"
)

// TestServeRunsWithItsTimerSlack: pincer serve executes itself again
// with a timer slack of 1 ms on every thread (see internal/timerslack),
// and serves as usual.
func TestServeRunsWithItsTimerSlack(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	if cur, err := timerslack.Current(); err != nil || cur != 50*time.Microsecond {
		t.Skipf("this process runs with a timer slack of %v (%v), not the kernel's default, and a child takes it", cur, err)
	}
	p, _ := startServe(t, t.TempDir(), freePortConfig(""))
	tasks, err := filepath.Glob(filepath.Join("/proc", strconv.Itoa(p.cmd.Process.Pid), "task", "*"))
	if err != nil || len(tasks) < 2 {
		t.Fatalf("threads of pincer serve: %v %v", tasks, err)
	}
	for _, task := range tasks {
		b, err := os.ReadFile(filepath.Join("/proc", filepath.Base(task), "timerslack_ns"))
		if errors.Is(err, fs.ErrNotExist) {
			continue // a thread that ended meanwhile
		}
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.TrimSpace(string(b)); got != "1000000" {
			t.Errorf("thread %s of pincer serve runs with a timer slack of %s ns, want 1000000", filepath.Base(task), got)
		}
	}
	if err := p.stop(); err != nil {
		t.Errorf("exit after SIGTERM: %v\n%s", err, p.stderr)
	}
}
