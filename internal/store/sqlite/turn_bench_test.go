package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	msqlite "modernc.org/sqlite"

	"github.com/pincerbot/pincer/internal/msg"
	"github.com/pincerbot/pincer/internal/store"
	"github.com/pincerbot/pincer/internal/trace"
)

// BenchmarkSteadyTurns is the store's share of a steady trickle: one
// message a millisecond over 2,000 groups, every tenth an @ of the bot
// that the store sees through as a turn does (logged and buffered,
// admitted, the session opened, the user's and the assistant's turns
// written, the reply recorded in the outbox before it goes out and after,
// its id recorded, the turn finished, its tokens counted, its trace stored). It reports the
// process's CPU per event (the writer's goroutine included) on chatter
// alone and with the @s, the CPU per turn (the difference, as pincer
// bench computes it), the commits per turn and the jobs per turn run
// under a savepoint; the pause between events is not CPU, though waking
// from it is, in both runs alike. It reports the
// pages written to the write-ahead log per event and per turn too (each
// is two system calls and most of what a commit costs), which unlike the
// CPU figures do not depend on what else the machine runs.
//
// In with-turns every @ is in a group of its own, whose session is new;
// in reopened the @s go round 50 groups, so most turns open a session
// that has a transcript (as an @ in a group the bot talked in before
// does).
func BenchmarkSteadyTurns(b *testing.B) {
	var chatter perEvent
	b.Run("chatter", func(b *testing.B) { chatter = steadyTurns(b, 0, 0, perEvent{}) })
	b.Run("with-turns", func(b *testing.B) { steadyTurns(b, 10, 0, chatter) })
	b.Run("reopened", func(b *testing.B) { steadyTurns(b, 10, 50, chatter) })
}

// steadyTurns runs b.N events, every every-th an @ (none for 0), in one
// of sessions sessions (0: the @'s group's own), and returns the CPU per
// event in µs; chatter, when known, is the CPU per event of chatter
// alone, for the CPU per turn.
func steadyTurns(b *testing.B, every, sessions int, chatter perEvent) perEvent {
	ctx := context.Background()
	db, err := Open(ctx, filepath.Join(b.TempDir(), "steady.db"), Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	const groups = 2000
	message := func(i int) msg.Message {
		return msg.Message{
			ID: msg.MessageID(strconv.Itoa(1_000_000 + i)), Channel: "onebot", Account: "default",
			Peer:   msg.Peer{Kind: msg.Group, ID: strconv.Itoa(700_000_000 + i*7919%groups)},
			Sender: msg.Sender{ID: msg.UserID(strconv.Itoa(10_000 + i%1000)), Name: "群友"},
			Text:   "今晚几点集合？我八点以后有空，你们呢", Time: time.Unix(1_780_000_000, 0).Add(time.Duration(i) * time.Millisecond),
		}
	}
	turn := func(i int, m msg.Message) error {
		if sessions > 0 {
			m.Peer.ID = strconv.Itoa(700_000_000 + i%sessions)
		}
		_, buffered, err := db.LogInboundBuffered(ctx, m, store.ViewHistory, store.Buffered{Scope: "onebot/default", Kind: "turn", Key: m.Peer.String(), Message: m})
		if err != nil {
			return err
		}
		key := "onebot:default:" + m.Peer.String() + ":" + string(m.ID)
		consumed := store.Consumed{Entries: []int64{buffered}, Marks: []store.Mark{{Channel: m.Channel, Account: m.Account, Peer: m.Peer, View: store.ViewHistory, Seq: int64(i)}}}
		if _, err := db.AdmitTurn(ctx, key, time.Hour, []byte(`{"turn":1}`), consumed); err != nil {
			return err
		}
		session := "agent:main:onebot:group:" + m.Peer.ID
		if _, _, _, err := db.OpenWithTranscript(ctx, session, "main"); err != nil {
			return err
		}
		if err := db.PostTurn(ctx, session, store.Turn{Role: store.RoleUser, Text: m.Text}); err != nil {
			return err
		}
		if _, err := db.AppendTurn(ctx, session, store.Turn{Role: store.RoleAssistant, Text: "八点半吧，我也去。"}); err != nil {
			return err
		}
		id := key + "#0"
		out := msg.Outbound{Account: m.Account, Peer: m.Peer, Text: "八点半吧，我也去。"}
		if _, err := db.AddOutbox(ctx, store.OutboxEntry{ID: id, Channel: m.Channel, Out: out}); err != nil {
			return err
		}
		if err := db.RecordSent(ctx, m.Channel, m.Account, msg.MessageID(strconv.Itoa(5_000_000+i))); err != nil {
			return err
		}
		if err := db.UpdateOutbox(ctx, id, 1, 1, store.OutboxSent, ""); err != nil {
			return err
		}
		if err := db.FinishTurn(ctx, key); err != nil {
			return err
		}
		if err := db.AddTokens(ctx, "2026-12-06", 480, "user:onebot:"+string(m.Sender.ID), "chat:onebot:default:"+m.Peer.String()); err != nil {
			return err
		}
		return db.AddTraceRecords(ctx, []trace.Record{{Key: trace.Key{Channel: m.Channel, Account: m.Account, ID: m.ID}, Chat: m.Peer.String(), At: m.Time, Preview: m.Text, Steps: []trace.Step{{At: m.Time, Stage: "trigger", Outcome: "triggered"}}}})
	}
	commits, savepoints, pages := db.w.commits.Load(), db.w.savepoints.Load(), walPages(b, db)
	cpu := processCPU()
	b.ResetTimer()
	turns := 0
	for i := range b.N {
		m := message(i)
		if every > 0 && i%every == every-1 {
			turns++
			err = turn(i, m)
		} else {
			_, err = db.LogInbound(ctx, m, store.ViewHistory)
		}
		if err != nil {
			b.Fatal(err)
		}
		time.Sleep(time.Millisecond)
	}
	b.StopTimer()
	used := float64((processCPU() - cpu).Microseconds())
	each := perEvent{cpu: used / float64(b.N)}
	b.ReportMetric(each.cpu, "cpu-µs/event")
	// Committed by now: what the last batch holds is written with it.
	if err := db.w.do(func(*sql.Conn) error { return nil }, false, true); err != nil {
		b.Fatal(err)
	}
	written := float64(walPages(b, db) - pages)
	each.pages = written / float64(b.N)
	b.ReportMetric(each.pages, "wal-pages/event")
	if turns > 0 {
		b.ReportMetric(float64(db.w.commits.Load()-commits)/float64(turns), "commits/turn")
		b.ReportMetric(float64(db.w.savepoints.Load()-savepoints)/float64(turns), "savepoints/turn")
		if chatter.pages > 0 {
			b.ReportMetric((written-chatter.pages*float64(b.N-turns))/float64(turns), "wal-pages/turn")
		}
		if chatter.cpu > 0 {
			b.ReportMetric((used-chatter.cpu*float64(b.N-turns))/float64(turns), "cpu-µs/turn")
		}
	}
	return each
}

// perEvent is what an event of a steady run cost: CPU in µs, pages
// written to the write-ahead log.
type perEvent struct{ cpu, pages float64 }

// walPages is how many pages the writer's connection has written to the
// write-ahead log so far (SQLite's SQLITE_DBSTATUS_CACHE_WRITE).
func walPages(b *testing.B, db *DB) int {
	b.Helper()
	var n int
	err := db.w.do(func(tx *sql.Conn) error {
		return tx.Raw(func(dc any) error {
			st, ok := dc.(msqlite.DBStatus)
			if !ok {
				return fmt.Errorf("the driver's connection %T reads no status", dc)
			}
			cur, _, err := st.Status(msqlite.DBStatusCacheWrite, false)
			n = cur
			return err
		})
	}, false, false)
	if err != nil {
		b.Fatal(err)
	}
	return n
}

// processCPU is the CPU time the process used so far, user and system.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		panic(fmt.Sprintf("getrusage: %v", err))
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
