//go:build linux

package bench

import (
	"os"
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
