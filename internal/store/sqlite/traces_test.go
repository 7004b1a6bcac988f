package sqlite

import (
	"context"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/pincerbot/pincer/internal/msg"
	"github.com/pincerbot/pincer/internal/trace"
)

// TestTracesOfNotableMessagesAreStored: a message that was answered is
// read back from the store with all its steps, the chatter that
// triggered nothing stays in memory only, and pruning removes old steps.
func TestTracesOfNotableMessagesAreStored(t *testing.T) {
	ctx := context.Background()
	d, err := Open(ctx, filepath.Join(t.TempDir(), "p.db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	rec := trace.New(trace.Options{Store: d, Keep: time.Hour})
	m := func(id string) msg.Message {
		return msg.Message{ID: msg.MessageID(id), Channel: "onebot", Account: "default", Peer: msg.Peer{Kind: msg.Group, ID: "9"}, Sender: msg.Sender{ID: "7", Name: "甲"}, Text: "text " + id}
	}
	chatter, asked := m("1"), m("2")
	rec.Begin(chatter)
	rec.Step(trace.KeyOf(chatter), trace.StageTrigger, "not triggered", "no @ of the bot")
	rec.Begin(asked)
	rec.Step(trace.KeyOf(asked), trace.StageTrigger, "triggered", "an @ of the bot")
	rec.Step(trace.KeyOf(asked), trace.StageDeliver, "sent", "1 message(s) sent (55)")
	chat := trace.KeyOf(asked).Chat()
	if got, err := d.TraceRecords(ctx, chat, "", 10); err != nil || len(got) != 0 {
		t.Fatalf("stored before the recorder flushed: %+v %v", got, err)
	}
	if err := rec.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	got, err := d.TraceRecords(ctx, chat, "", 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Key != trace.KeyOf(asked) || got[0].Sender != "甲 (7)" || got[0].Preview != "text 2" {
		t.Fatalf("stored records %+v", got)
	}
	if steps := got[0].Steps; len(steps) != 3 || steps[0].Stage != trace.StageReceive || steps[2].Detail != "1 message(s) sent (55)" {
		t.Errorf("stored steps %+v", steps)
	}
	// A later step replaces the stored record.
	rec.Step(trace.KeyOf(asked), trace.StageReceive, "dropped", "a duplicate")
	if err := rec.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if again, err := d.TraceRecords(ctx, chat, "", 10); err != nil || len(again) != 1 || len(again[0].Steps) != 4 {
		t.Errorf("after one more step: %+v %v", again, err)
	}
	one, err := d.TraceRecords(ctx, chat, "2", 1)
	if err != nil || len(one) != 1 || one[0].Outcome() != "dropped" {
		t.Errorf("by id: %+v %v", one, err)
	}
	if err := d.PruneTraces(ctx, time.Now().Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if got, err := d.TraceRecords(ctx, chat, "", 10); err != nil || len(got) != 0 {
		t.Errorf("after pruning: %+v %v", got, err)
	}
}

// TestMigrationToAppendedTraces: the traces a database of version 11
// holds are read back after the migration, by chat newest first and by
// message, a later step still replaces a record rather than adding one,
// and pruning removes the old ones and keeps the new.
func TestMigrationToAppendedTraces(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "v11.db")
	old := migratedTo(t, path, 11)
	now := time.Now()
	exec := execIn(t, old)
	for _, r := range []struct {
		msg string
		at  time.Time
	}{{"2", now.Add(-2 * time.Hour)}, {"1", now.Add(-3 * time.Hour)}, {"3", now}} {
		key := `{"Channel":"onebot","Account":"default","ID":"` + r.msg + `"}`
		exec(`INSERT INTO traces (chat, msg, key, sender, preview, at, steps) VALUES ('onebot:default:group:9', ?, ?, '甲 (7)', ?, ?, '[]')`,
			r.msg, key, "text "+r.msg, r.at.UnixMilli())
	}
	d := upgraded(t, old, path)
	const chat = "onebot:default:group:9"
	ids := func() []msg.MessageID {
		t.Helper()
		recs, err := d.TraceRecords(ctx, chat, "", 10)
		if err != nil {
			t.Fatal(err)
		}
		var out []msg.MessageID
		for _, r := range recs {
			out = append(out, r.Key.ID)
		}
		return out
	}
	if got := ids(); !slices.Equal(got, []msg.MessageID{"3", "2", "1"}) {
		t.Fatalf("records newest first after the migration: %v, want [3 2 1]", got)
	}
	one, err := d.TraceRecords(ctx, chat, "2", 1)
	if err != nil || len(one) != 1 || one[0].Preview != "text 2" {
		t.Fatalf("record 2 by its id: %+v %v", one, err)
	}
	rec := one[0]
	rec.Steps = []trace.Step{{At: now, Stage: trace.StageDeliver, Outcome: "sent"}}
	if err := d.AddTraceRecords(ctx, []trace.Record{rec}); err != nil {
		t.Fatal(err)
	}
	if got := ids(); len(got) != 3 {
		t.Fatalf("a later step of record 2 added a record: %v", got)
	}
	if again, err := d.TraceRecords(ctx, chat, "2", 1); err != nil || len(again) != 1 || len(again[0].Steps) != 1 {
		t.Fatalf("record 2 after its later step: %+v %v", again, err)
	}
	if err := d.PruneTraces(ctx, now.Add(-time.Hour)); err != nil {
		t.Fatal(err)
	}
	if got := ids(); !slices.Equal(got, []msg.MessageID{"3"}) {
		t.Errorf("after pruning what began more than an hour ago: %v, want [3]", got)
	}
}

// TestPruningTracesKeepsTheNewer: pruning removes the records begun
// before its time, from the oldest on, keeps the ones begun since, and a
// record stored after a newer one though it began before the time (its
// message's clock was behind) goes once the records before it have gone.
func TestPruningTracesKeepsTheNewer(t *testing.T) {
	ctx := context.Background()
	d, err := Open(ctx, filepath.Join(t.TempDir(), "p.db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	base := time.Now().Truncate(time.Millisecond)
	rec := func(id string, at time.Time) trace.Record {
		return trace.Record{Key: trace.Key{Channel: "onebot", Account: "default", ID: msg.MessageID(id)}, Chat: "c", At: at,
			Steps: []trace.Step{{At: at, Stage: trace.StageReceive}}}
	}
	// Stored in this order: two old, a new one, an old straggler, a new one.
	for _, r := range []trace.Record{rec("a", base.Add(-3*time.Hour)), rec("b", base.Add(-2*time.Hour)), rec("c", base), rec("late", base.Add(-4*time.Hour)), rec("d", base.Add(time.Minute))} {
		if err := d.AddTraceRecords(ctx, []trace.Record{r}); err != nil {
			t.Fatal(err)
		}
	}
	have := func() []msg.MessageID {
		t.Helper()
		recs, err := d.TraceRecords(ctx, "c", "", 10)
		if err != nil {
			t.Fatal(err)
		}
		var out []msg.MessageID
		for _, r := range recs {
			out = append(out, r.Key.ID)
		}
		slices.Sort(out)
		return out
	}
	if err := d.PruneTraces(ctx, base.Add(-time.Hour)); err != nil {
		t.Fatal(err)
	}
	if got := have(); !slices.Equal(got, []msg.MessageID{"c", "d", "late"}) {
		t.Errorf("after the first pruning: %v, want [c d late]", got)
	}
	if err := d.PruneTraces(ctx, base.Add(30*time.Second)); err != nil {
		t.Fatal(err)
	}
	if got := have(); !slices.Equal(got, []msg.MessageID{"d"}) {
		t.Errorf("after the second pruning: %v, want [d]", got)
	}
}
