package sqlite

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/pincerbot/pincer/internal/msg"
	"github.com/pincerbot/pincer/internal/store"
)

// TestCheckpointsRunInTheBackground: commits never copy the log into the
// database file themselves; the background checkpoint does, within
// checkpointEvery.
func TestCheckpointsRunInTheBackground(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		path := filepath.Join(t.TempDir(), "p.db")
		d, err := Open(ctx, path, Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer d.Close()
		size := func() int64 {
			fi, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			return fi.Size()
		}
		// Settle whatever checkpoint opening the database started.
		time.Sleep(2 * checkpointEvery)
		synctest.Wait()
		before := size()
		// Outbox entries wait for their commit: 600 commits of 10 kB.
		for i := range 600 {
			e := store.OutboxEntry{ID: strconv.Itoa(i), Channel: "onebot", Out: msg.Outbound{Account: "default", Text: strings.Repeat("x", 10000)}}
			if _, err := d.AddOutbox(ctx, e); err != nil {
				t.Fatal(err)
			}
		}
		if got := size(); got > before+(1<<20) {
			t.Fatalf("the database file grew from %d to %d bytes before any checkpoint: a commit checkpointed", before, got)
		}
		time.Sleep(checkpointEvery)
		synctest.Wait()
		if got := size(); got < before+(1<<20) {
			t.Fatalf("the database file is %d bytes (was %d) a checkpoint interval later: no checkpoint ran", got, before)
		}
	})
}

// TestCloseTwice: closing the database again is harmless and returns what
// the first close did.
func TestCloseTwice(t *testing.T) {
	st, err := Open(context.Background(), filepath.Join(t.TempDir(), "twice.db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	first := st.Close()
	if second := st.Close(); !errors.Is(second, first) && second != first {
		t.Errorf("second close %v, first %v", second, first)
	}
}
