//go:build linux

package bench

import (
	"bytes"
	"errors"
	"fmt"
	"iter"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// dieWithParent has the kernel end a child the bench started when the
// bench itself dies, so no pincer is left running after a kill -9.
func dieWithParent(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
}

// clockTick is USER_HZ, the unit of /proc/<pid>/stat's times: 100 on
// every Linux port Go runs on.
const clockTick = 100

// procUsage reads /proc/<pid>/stat and /proc/<pid>/status, and counts
// the context switches of its threads: a reading at a window's edge.
func procUsage(pid int) (usage, error) {
	var u usage
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return u, fmt.Errorf("bench: process %d: %w", pid, err)
	}
	// The command name may hold spaces; the fields after it are plain.
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return u, fmt.Errorf("bench: process %d: unreadable stat", pid)
	}
	f := strings.Fields(string(stat[i+1:]))
	if len(f) < 13 {
		return u, fmt.Errorf("bench: process %d: short stat", pid)
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return u, fmt.Errorf("bench: process %d stat: %w", pid, err)
	}
	u.cpu = time.Duration(utime+stime) * time.Second / clockTick
	if err := procStatus(pid, &u); err != nil {
		return u, err
	}
	u.switches = contextSwitches(pid)
	u.reads, u.writes = ioCalls(pid)
	return u, nil
}

// ioCalls reads the read and write system calls pid made so far from
// /proc/<pid>/io (0, 0 when it cannot be read). Like the context
// switches, they are counts, which do not move with what else the
// machine runs: a page written to SQLite's write-ahead log is two
// writes, a frame read from the socket one read or more.
func ioCalls(pid int) (reads, writes int64) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/io")
	if err != nil {
		return 0, 0
	}
	for key, n := range procFields(b, "") {
		switch key {
		case "syscr":
			reads = n
		case "syscw":
			writes = n
		}
	}
	return reads, writes
}

// procFields yields the "key: number" lines of a /proc file (status, io)
// as key and number, the number without unit (" kB" and the like);
// lines whose value is no number are left out.
func procFields(b []byte, unit string) iter.Seq2[string, int64] {
	return func(yield func(string, int64) bool) {
		for line := range strings.Lines(string(b)) {
			key, val, ok := strings.Cut(line, ":")
			if !ok {
				continue
			}
			n, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(val), unit), 10, 64)
			if err == nil && !yield(key, n) {
				return
			}
		}
	}
}

// procMemory reads only /proc/<pid>/status: the memory figures, for the
// sampler that reads them every 100 ms.
func procMemory(pid int) (usage, error) {
	var u usage
	err := procStatus(pid, &u)
	return u, err
}

// procStatus fills u's memory figures from /proc/<pid>/status.
func procStatus(pid int, u *usage) error {
	status, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return fmt.Errorf("bench: process %d: %w", pid, err)
	}
	for key, kb := range procFields(status, " kB") {
		switch key {
		case "VmHWM":
			u.hwm = kb << 10
		case "VmRSS":
			u.rss = kb << 10
		case "RssAnon":
			u.anon = kb << 10
		}
	}
	return nil
}

// contextSwitches sums the context switches of pid's threads alive now
// (/proc/<pid>/task/<tid>/status); a Go program's threads live as long as
// it does. It counts how often the process slept and woke, which unlike
// CPU time does not move with what else the machine runs.
func contextSwitches(pid int) int64 {
	dir := "/proc/" + strconv.Itoa(pid) + "/task/"
	tasks, err := os.ReadDir(dir)
	if err != nil {
		return 0
	}
	var n int64
	for _, t := range tasks {
		status, err := os.ReadFile(dir + t.Name() + "/status")
		if err != nil {
			continue // the thread ended meanwhile
		}
		for key, v := range procFields(status, "") {
			if key == "voluntary_ctxt_switches" || key == "nonvoluntary_ctxt_switches" {
				n += v
			}
		}
	}
	return n
}

// selfCPU is this process's CPU time (getrusage), user + system.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
