package sqlite

import (
	"context"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/pincerbot/pincer/internal/store"
)

type opened struct {
	s       store.Session
	created bool
	turns   []store.Turn
	err     error
}

// TestANewSessionIsMadeWithoutTheWriter: a turn opens a new session
// while the writer is busy without waiting for it (made in memory, its
// row written after); a known session, its writes committed or not, is
// read by the writer, with those writes.
func TestANewSessionIsMadeWithoutTheWriter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		db := openFresh(t)
		if _, _, err := db.OpenSession(ctx, "old", "main"); err != nil {
			t.Fatal(err)
		}
		if _, err := db.AppendTurn(ctx, "old", store.Turn{Role: store.RoleUser, Text: "早上好"}); err != nil {
			t.Fatal(err)
		}
		if _, _, err := db.OpenSession(ctx, "busy", "main"); err != nil {
			t.Fatal(err)
		}
		time.Sleep(20 * time.Millisecond) // committed
		synctest.Wait()

		release := holdWriter(t, db)
		if err := db.PostTurn(ctx, "busy", store.Turn{Role: store.RoleUser, Text: "还在写"}); err != nil {
			t.Fatal(err)
		}
		got := make(chan opened, 3)
		open := func(key string) {
			s, created, turns, err := db.OpenWithTranscript(ctx, key, "main")
			got <- opened{s, created, turns, err}
		}
		go open("new")
		synctest.Wait()
		select {
		case o := <-got:
			if !o.created || o.err != nil || o.s.Key != "new" || o.s.AgentID != "main" || o.s.Options == nil || len(o.turns) != 0 {
				t.Errorf("new session: %+v", o)
			}
		default:
			t.Fatal("opening a new session waits for the writer")
		}
		go open("old")
		go open("busy")
		synctest.Wait()
		select {
		case o := <-got:
			t.Fatalf("a known session was read while the writer was held: %+v", o)
		default:
		}
		release()
		byKey := map[string]opened{}
		for range 2 {
			o := <-got
			byKey[o.s.Key] = o
		}
		if o := byKey["old"]; o.created || o.err != nil || len(o.turns) != 1 || o.turns[0].Text != "早上好" {
			t.Errorf("committed session, read by the writer: %+v", o)
		}
		if o := byKey["busy"]; o.created || o.err != nil || len(o.turns) != 1 || o.turns[0].Text != "还在写" {
			t.Errorf("session with a write not committed, read by the writer: %+v", o)
		}
		db = reopen(t, db)
		s, created, err := db.OpenSession(ctx, "new", "main")
		if err != nil || created || s.Key != "new" {
			t.Errorf("the session made in memory, after a reopen: %+v created %v, %v; want it written", s, created, err)
		}
	})
}

// Opens of one new session at once make it once.
func TestConcurrentOpensMakeASessionOnce(t *testing.T) {
	ctx := context.Background()
	db := openFresh(t)
	for round := range 20 {
		key := "agent:main:onebot:group:" + strconv.Itoa(round)
		made := atOnce(t, 6, func(i int) (created bool, err error) {
			if i%2 == 0 {
				_, created, _, err = db.OpenWithTranscript(ctx, key, "main")
			} else {
				_, created, err = db.OpenSession(ctx, key, "main")
			}
			return created, err
		})
		if made != 1 {
			t.Errorf("%s: made %d times, want once", key, made)
		}
	}
	if err := db.Health(); err != nil {
		t.Errorf("health: %v", err)
	}
}

// New sessions are opened while a burst keeps the writer's queue full and
// the writer ends batches holding writes of sessions (whose ends take the
// mirror's lock): nothing waits on anything that waits on it.
func TestOpeningSessionsDuringABurst(t *testing.T) {
	ctx := context.Background()
	db, err := Open(ctx, filepath.Join(t.TempDir(), "pincer.db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	var burst sync.WaitGroup
	for range 2 {
		burst.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				if _, err := db.LogInbound(ctx, inboundFor(i), store.ViewHistory); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		for i := range 300 {
			key := "agent:main:onebot:group:" + strconv.Itoa(i)
			if _, _, _, err := db.OpenWithTranscript(ctx, key, "main"); err != nil {
				t.Error(err)
				return
			}
			if err := db.PostTurn(ctx, key, store.Turn{Role: store.RoleUser, Text: "在吗"}); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	select {
	case <-finished:
	case <-time.After(time.Minute):
		// A writer stuck for good: closing the store would wait for it.
		t.Fatal("opening sessions during a burst is stuck")
	}
	close(stop)
	burst.Wait()
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
}
