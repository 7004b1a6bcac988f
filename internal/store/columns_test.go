package store

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/pincerbot/pincer/internal/msg"
)

// TestColumns: a turn's JSON columns read back as the turn's, empty when
// it has none; a session's options read as a map, never nil, and a column
// that is not JSON is an error; a message in several buffers in a row is
// encoded once and the same.
func TestColumns(t *testing.T) {
	turn := Turn{Seq: 3, ToolCalls: []ToolCall{{ID: "c1", Name: "now", Arguments: "{}"}}, Images: []string{"a.png"}}
	calls, images, err := TurnColumns(turn)
	if err != nil {
		t.Fatal(err)
	}
	var back Turn
	back.Seq = 3
	if err := ReadTurnColumns(&back, calls, images); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(turn, back); diff != "" {
		t.Errorf("turn read back (-wrote +read):\n%s", diff)
	}
	if calls, images, _ := TurnColumns(Turn{}); calls != "" || images != "" {
		t.Errorf("a plain turn's columns: %q, %q", calls, images)
	}
	if err := ReadTurnColumns(&back, "[", ""); err == nil {
		t.Error("tool calls that are not JSON were read")
	}
	for col, want := range map[string]map[string]string{"{}": {}, "null": {}, `{"think":"high"}`: {"think": "high"}} {
		got, err := SessionOptions(col)
		if err != nil || got == nil || !cmp.Equal(got, want) {
			t.Errorf("options %s: %v, %v", col, got, err)
		}
	}
	if _, err := SessionOptions("{"); err == nil {
		t.Error("options that are not JSON were read")
	}
	m := msg.Message{ID: "1", Peer: msg.Peer{Kind: msg.Group, ID: "g"}, Text: "hi"}
	bodies, err := BufferedBodies([]Buffered{{Kind: "history", Message: m}, {Kind: "turn", Message: m}, {Kind: "turn", Message: msg.Message{ID: "2"}}})
	if err != nil {
		t.Fatal(err)
	}
	if len(bodies) != 3 || bodies[0] != bodies[1] || bodies[1] == bodies[2] {
		t.Errorf("bodies %q", bodies)
	}
}

// TestWriteHealth: a failed write is the store's health until a write
// succeeds; a job's own outcomes (no such row, a cancelled context) are
// not failures of the store.
func TestWriteHealth(t *testing.T) {
	noRows := errors.New("no rows")
	h := WriteHealth{NoRows: noRows}
	h.Failed(fmt.Errorf("scan: %w", noRows))
	h.Failed(context.Canceled)
	h.Failed(nil)
	if err := h.Last(); err != nil {
		t.Fatalf("health after outcomes: %v", err)
	}
	disk := errors.New("disk full")
	h.Failed(disk)
	if err := h.Last(); !errors.Is(err, disk) {
		t.Errorf("health after a failure: %v", err)
	}
	h.OK()
	if err := h.Last(); err != nil {
		t.Errorf("health after a write that succeeded: %v", err)
	}
}
