package sqlite

import (
	"context"
	"path/filepath"
	"testing"
	"testing/synctest"
	"time"

	"github.com/pincerbot/pincer/internal/store"
)

// A session's last activity (Session.UpdatedAt, which idle resets read)
// is the later of the last change to the session and the writing of its
// last turn, by pincer's clock whatever the turn's own time: a turn marks
// its session active without a write to the session's row.
func TestATurnMarksItsSessionActive(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		db := openFresh(t)
		start := now()
		active := func(want time.Duration, after string) {
			t.Helper()
			s, err := db.Session(ctx, "k")
			if err != nil {
				t.Fatal(err)
			}
			if got := s.UpdatedAt.Sub(start); got != want {
				t.Errorf("after %s: last active at +%v, want +%v", after, got, want)
			}
		}
		if _, _, err := db.OpenSession(ctx, "k", "main"); err != nil {
			t.Fatal(err)
		}
		active(0, "the session was made")
		time.Sleep(time.Minute)
		// The message is an hour old: what counts is when it was written.
		if err := db.PostTurn(ctx, "k", store.Turn{Role: store.RoleUser, Text: "在吗？", At: start.Add(-time.Hour)}); err != nil {
			t.Fatal(err)
		}
		active(time.Minute, "a posted turn")
		time.Sleep(time.Minute)
		if _, err := db.AppendTurn(ctx, "k", store.Turn{Role: store.RoleAssistant, Text: "在。"}); err != nil {
			t.Fatal(err)
		}
		active(2*time.Minute, "an appended turn")
		time.Sleep(time.Minute)
		if err := db.SetSessionOption(ctx, "k", "thinking", "high"); err != nil {
			t.Fatal(err)
		}
		active(3*time.Minute, "an option set")
		time.Sleep(time.Minute)
		if _, err := db.ResetSession(ctx, "k", "idle"); err != nil {
			t.Fatal(err)
		}
		active(4*time.Minute, "a reset (the turns before it are another generation's)")
		time.Sleep(time.Minute)
		if _, err := db.CompactSession(ctx, "k", "总结", []store.Turn{{Role: store.RoleUser, Text: "在吗？"}}); err != nil {
			t.Fatal(err)
		}
		active(5*time.Minute, "a compaction")
	})
}

// A session of a database from before turns marked their writing keeps
// the activity its row had, until a turn is written.
func TestMigrationToTurnsMarkingActivity(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "v14.db")
	old := migratedTo(t, path, 14)
	exec := execIn(t, old)
	exec(`INSERT INTO sessions (key, agent_id, generation, created_at, updated_at) VALUES ('a', 'main', 0, 1000, 5000)`)
	exec(`INSERT INTO turns (session_key, generation, seq, role, text, at) VALUES ('a', 0, 1, 'user', 'hi', 4000)`)
	db := upgraded(t, old, path)
	s, err := db.Session(ctx, "a")
	if err != nil || !s.UpdatedAt.Equal(time.UnixMilli(5000)) {
		t.Fatalf("after the migration: last active %v (%v), want %v", s.UpdatedAt, err, time.UnixMilli(5000))
	}
	before := now()
	if _, err := db.AppendTurn(ctx, "a", store.Turn{Role: store.RoleAssistant, Text: "hello"}); err != nil {
		t.Fatal(err)
	}
	if s, err = db.Session(ctx, "a"); err != nil || s.UpdatedAt.Before(before) {
		t.Errorf("after a turn: last active %v (%v), want from %v on", s.UpdatedAt, err, before)
	}
}
