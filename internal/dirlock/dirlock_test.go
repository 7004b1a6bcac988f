package dirlock

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

// holdEnv makes the test binary a process that holds the directory it
// names until its stdin closes or it is killed.
const holdEnv = "DIRLOCK_TEST_HOLD"

func TestMain(m *testing.M) {
	if dir := os.Getenv(holdEnv); dir != "" {
		l, err := Acquire(dir, "holder-test")
		if err != nil {
			fmt.Println("error:", err)
			os.Exit(1)
		}
		fmt.Println("locked")
		_, _ = bufio.NewReader(os.Stdin).ReadString('\n')
		if err := l.Release(); err != nil {
			fmt.Println("error:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// holder starts a process that holds dir.
func holder(t *testing.T, dir string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), holdEnv+"="+dir)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		stdin.Close()
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	line, err := bufio.NewReader(out).ReadString('\n')
	if strings.TrimSpace(line) != "locked" {
		t.Fatalf("the holder did not lock %s: %q %v", dir, line, err)
	}
	return cmd
}

// TestAnotherProcessIsRefusedUntilTheHolderDies: while a process holds
// the directory another Acquire is refused with an error that names the
// directory and the holder's pid; once the holder is killed with SIGKILL,
// without any chance to release, Acquire succeeds.
func TestAnotherProcessIsRefusedUntilTheHolderDies(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	cmd := holder(t, dir)

	_, err := Acquire(dir, "")
	var held *HeldError
	if !errors.As(err, &held) || !errors.Is(err, ErrHeld) {
		t.Fatalf("Acquire while another process holds the directory: %v", err)
	}
	pid := cmd.Process.Pid
	if held.Dir != dir || held.Holder == nil || held.Holder.PID != pid || held.Holder.Version != "holder-test" {
		t.Errorf("HeldError %+v (holder %+v), want dir %s, pid %d", held, held.Holder, dir, pid)
	}
	for _, want := range []string{dir, fmt.Sprintf("pid %d", pid), "started ", filepath.Join(dir, FileName)} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error %q lacks %q", err, want)
		}
	}
	if ok, h, err := Probe(dir); err != nil || !ok || h == nil || h.PID != pid {
		t.Errorf("Probe while held: %v %+v %v", ok, h, err)
	}

	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	// The record stays: the holder never released.
	if ok, h, err := Probe(dir); err != nil || ok || h == nil || h.PID != pid {
		t.Errorf("Probe after the holder was killed: held %v, record %+v, %v; want free, with the killed holder's record", ok, h, err)
	}
	l, err := Acquire(dir, "")
	if err != nil {
		t.Fatalf("Acquire after the holder was killed: %v", err)
	}
	if err := l.Release(); err != nil {
		t.Fatal(err)
	}
}

// TestAcquireInOneProcess: the lock is the open file's, so a second
// Acquire in the same process is refused as well, with this process's
// record; Release clears the record and frees the directory.
func TestAcquireInOneProcess(t *testing.T) {
	dir := t.TempDir()
	l, err := Acquire(dir, "v9")
	if err != nil {
		t.Fatal(err)
	}
	if l.Dir() != dir {
		t.Errorf("Dir %q, want %q", l.Dir(), dir)
	}
	_, err = Acquire(dir, "")
	var held *HeldError
	if !errors.As(err, &held) || held.Holder == nil || held.Holder.PID != os.Getpid() || held.Holder.Version != "v9" {
		t.Fatalf("second Acquire: %v", err)
	}
	if err := l.Release(); err != nil {
		t.Fatal(err)
	}
	if ok, h, err := Probe(dir); err != nil || ok || h != nil {
		t.Errorf("Probe after Release: held %v, record %+v, %v; want free and no record", ok, h, err)
	}
	l, err = Acquire(dir, "")
	if err != nil {
		t.Fatalf("Acquire after Release: %v", err)
	}
	if err := l.Release(); err != nil {
		t.Fatal(err)
	}
}

// TestProbeCreatesNothing: probing a directory nothing ever locked (or
// that does not exist) reports it free and leaves no file behind.
func TestProbeCreatesNothing(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	if ok, h, err := Probe(dir); ok || h != nil || err != nil {
		t.Errorf("Probe of a missing directory: %v %+v %v", ok, h, err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Probe created the directory: %v", err)
	}
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if ok, _, err := Probe(dir); ok || err != nil {
		t.Errorf("Probe of an empty directory: %v %v", ok, err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("Probe left %v", entries)
	}
}

// TestAcquireWaitsOutAProbe: a probe's shared lock at the moment a
// process starts does not make it refuse; a lock held longer than that
// does.
func TestAcquireWaitsOutAProbe(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dir := t.TempDir()
		probe := func() *os.File {
			f, err := os.OpenFile(filepath.Join(dir, FileName), os.O_RDWR|os.O_CREATE, 0o644)
			if err != nil {
				t.Fatal(err)
			}
			if err := lock(f, false); err != nil {
				t.Fatal(err)
			}
			return f
		}
		brief := probe()
		go func() {
			time.Sleep(settle / 4)
			_ = unlock(brief)
			brief.Close()
		}()
		l, err := Acquire(dir, "")
		if err != nil {
			t.Fatalf("Acquire during a probe: %v", err)
		}
		if err := l.Release(); err != nil {
			t.Fatal(err)
		}

		stays := probe()
		defer stays.Close()
		start := time.Now()
		_, err = Acquire(dir, "")
		if !errors.Is(err, ErrHeld) {
			t.Fatalf("Acquire while a shared lock stays: %v", err)
		}
		if waited := time.Since(start); waited < settle {
			t.Errorf("refused after %v, want after %v", waited, settle)
		}
	})
}

// TestWritable: Writable meets what Acquire meets opening the lock file,
// and creates nothing.
func TestWritable(t *testing.T) {
	dir := t.TempDir()
	if err := Writable(dir); err != nil {
		t.Errorf("a directory without a lock file: %v", err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("Writable left %v", entries)
	}
	l, err := Acquire(dir, "")
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Release(); err != nil {
		t.Fatal(err)
	}
	if err := Writable(dir); err != nil {
		t.Errorf("a released lock file: %v", err)
	}
	// A lock file that cannot be opened for writing.
	bad := t.TempDir()
	if err := os.Mkdir(filepath.Join(bad, FileName), 0o700); err != nil {
		t.Fatal(err)
	}
	werr := Writable(bad)
	_, aerr := Acquire(bad, "")
	if werr == nil || aerr == nil || !strings.Contains(aerr.Error(), werr.Error()) {
		t.Errorf("Writable: %v; Acquire: %v", werr, aerr)
	}
}
