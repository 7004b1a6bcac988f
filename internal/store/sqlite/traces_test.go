package sqlite

import (
	"context"
	"path/filepath"
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
