package sqlite

import (
	"context"
	"database/sql"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/pincerbot/pincer/internal/msg"
	"github.com/pincerbot/pincer/internal/store"
)

// TestChatsAreSavedLazily: where a chat's entries end is not written with
// every batch but every chainsSaveEvery, and a database left by a crash
// in between (its files as they were after a commit) still links every
// chat's entries, found from the entries after the point the chats table
// is complete up to.
func TestChatsAreSavedLazily(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		dir := t.TempDir()
		db, err := Open(ctx, filepath.Join(dir, "pincer.db"), Options{})
		if err != nil {
			t.Fatal(err)
		}
		g1, g2 := msg.Peer{Kind: msg.Group, ID: "1"}, msg.Peer{Kind: msg.Group, ID: "2"}
		n := 0
		logIn := func(peer msg.Peer) {
			t.Helper()
			n++
			m := msg.Message{ID: msg.MessageID(strconv.Itoa(n)), Channel: "onebot", Account: "default", Peer: peer, Time: time.Now(), Text: "m" + strconv.Itoa(n)}
			if _, err := db.LogInbound(ctx, m, store.ViewHistory); err != nil {
				t.Fatal(err)
			}
		}
		commit := func() {
			t.Helper()
			if err := db.w.do(func(*sql.Conn) error { return nil }, false, true); err != nil {
				t.Fatal(err)
			}
		}
		saved := func() string {
			t.Helper()
			var out []string
			err := db.each(ctx, `SELECT chat, last FROM chats ORDER BY chat`, nil, func(rows *sql.Rows) error {
				var chat string
				var last int64
				if err := rows.Scan(&chat, &last); err != nil {
					return err
				}
				out = append(out, chat[strings.LastIndex(chat, sep)+1:]+"="+strconv.FormatInt(last, 10))
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			return strings.Join(out, " ")
		}

		// The first batch after Open saves what the log held before: here,
		// nothing. The clock starts at the bubble's epoch, long after zero.
		logIn(g1)
		logIn(g2)
		commit()
		if got := saved(); got != "group:1=1 group:2=2" {
			t.Fatalf("chats after the first batch: %q", got)
		}
		logIn(g1)
		logIn(g1)
		logIn(g2)
		commit()
		if got := saved(); got != "group:1=1 group:2=2" {
			t.Errorf("chats saved again before %v: %q", chainsSaveEvery, got)
		}
		crashed := copyDatabase(t, dir, t.TempDir())

		time.Sleep(chainsSaveEvery)
		logIn(g2)
		commit()
		if got := saved(); got != "group:1=4 group:2=6" {
			t.Errorf("chats %v later: %q", chainsSaveEvery, got)
		}
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}

		db, err = Open(ctx, crashed, Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		for peer, want := range map[msg.Peer]string{g1: "m1 m3 m4", g2: "m2 m5"} {
			lms, err := db.RecentInbound(ctx, "onebot", "default", peer, 10)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, lm := range lms {
				got = append(got, lm.Message.Text)
			}
			if strings.Join(got, " ") != want {
				t.Errorf("%s after the crash: %q, want %q", peer, strings.Join(got, " "), want)
			}
		}
		// What Open found is saved with its first batch.
		logIn(g1)
		commit()
		if got := saved(); got != "group:1=6 group:2=5" {
			t.Errorf("chats after the crash and one batch: %q", got)
		}
	})
}

// copyDatabase copies the database files of dir (the database, its
// write-ahead log and its index) into to, as a crash would leave them,
// and returns the copy's path.
func copyDatabase(t *testing.T, dir, to string) string {
	t.Helper()
	for _, name := range []string{"pincer.db", "pincer.db-wal", "pincer.db-shm"} {
		src, err := os.Open(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		dst, err := os.Create(filepath.Join(to, name))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.Copy(dst, src); err != nil {
			t.Fatal(err)
		}
		src.Close()
		if err := dst.Close(); err != nil {
			t.Fatal(err)
		}
	}
	return filepath.Join(to, "pincer.db")
}

// TestChatsAreSavedInKeyOrder: a save of many chats writes them
// chainsPerBatch at a time in the order of their keys, so the rows of a
// batch are neighbours on a few pages of the chats table rather than
// spread over all of them; chats that change while the save is under way
// wait for the next one, and every chat is saved in the end.
func TestChatsAreSavedInKeyOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		db := openFresh(t)
		const chats = 3*chainsPerBatch + 7
		n := 0
		logIn := func(group int) {
			t.Helper()
			n++
			m := msg.Message{ID: msg.MessageID(strconv.Itoa(n)), Channel: "onebot", Account: "default",
				Peer: msg.Peer{Kind: msg.Group, ID: strconv.Itoa(group)}, Time: time.Now(), Text: "m"}
			if _, err := db.LogInbound(ctx, m, store.ViewHistory); err != nil {
				t.Fatal(err)
			}
		}
		commit := func() {
			t.Helper()
			if err := db.w.do(func(*sql.Conn) error { return nil }, false, true); err != nil {
				t.Fatal(err)
			}
		}
		savedChats := func() []string {
			t.Helper()
			var out []string
			err := db.each(ctx, `SELECT chat FROM chats ORDER BY chat`, nil, func(rows *sql.Rows) error {
				var chat string
				if err := rows.Scan(&chat); err != nil {
					return err
				}
				out = append(out, chat)
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			return out
		}
		// Logged in an order unlike the keys' (which sort as strings).
		var keys []string
		for i := range chats {
			g := 100000 + (i*7919)%chats
			logIn(g)
			keys = append(keys, chatKey("onebot", "default", msg.Peer{Kind: msg.Group, ID: strconv.Itoa(g)}))
		}
		slices.Sort(keys)
		// Each batch saves the next chats in key order.
		var got []string
		for commits := 1; len(got) < chats; commits++ {
			prev := len(got)
			commit()
			got = savedChats()
			if !slices.Equal(got, keys[:len(got)]) {
				t.Fatalf("after %d commits: saved %v…, not the first %d keys in order %v…", commits, head(got), len(got), head(keys))
			}
			if grew := len(got) - prev; grew > chainsPerBatch || grew == 0 && len(got) < chats {
				t.Fatalf("commit %d saved %d chats, want 1 to %d", commits, grew, chainsPerBatch)
			}
			// A chat that changes now, saved or not, is in the next save.
			logIn(100000)
		}
		if len(db.unsaved) != 1 {
			t.Fatalf("after the save, %d chats wait for the next one, want 1 (the chat that changed during it)", len(db.unsaved))
		}
		time.Sleep(chainsSaveEvery)
		commit()
		if len(db.unsaved) != 0 {
			t.Errorf("after the next save, %d chats still unsaved", len(db.unsaved))
		}
	})
}

// head is the start of a long list, for a failure's message.
func head(s []string) []string { return s[:min(len(s), 3)] }
