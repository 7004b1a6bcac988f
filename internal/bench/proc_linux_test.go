//go:build linux

package bench

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestContextSwitchesAreRead: a process that sleeps switches, and the
// count read from its threads grows with it.
func TestContextSwitchesAreRead(t *testing.T) {
	before := contextSwitches(os.Getpid())
	for range 20 {
		time.Sleep(time.Millisecond)
	}
	after := contextSwitches(os.Getpid())
	if before <= 0 || after < before+20 {
		t.Errorf("context switches %d, then %d after 20 sleeps", before, after)
	}
}

// TestIOCallsAreRead: the read and write system calls of a process are
// read from /proc, and grow by the calls it makes.
func TestIOCallsAreRead(t *testing.T) {
	f, err := os.Create(filepath.Join(t.TempDir(), "calls"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	reads, writes := ioCalls(os.Getpid())
	buf := []byte("一行\n")
	for range 30 {
		if _, err := f.Write(buf); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 20 {
		if _, err := f.ReadAt(buf, int64(i)); err != nil {
			t.Fatal(err)
		}
	}
	reads2, writes2 := ioCalls(os.Getpid())
	if reads <= 0 || writes <= 0 || reads2 < reads+20 || writes2 < writes+30 {
		t.Errorf("reads %d then %d after 20, writes %d then %d after 30", reads, reads2, writes, writes2)
	}
}
