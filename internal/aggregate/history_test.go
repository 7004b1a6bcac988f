package aggregate

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/pincerbot/pincer/internal/msg"
)

// TestHistoryStopsAtTheWatermark: a message added pending is the
// watermark: a turn takes what came before it and leaves it and what came
// after (but the turn's own messages) for a later turn, which takes it as
// completed once Complete has rewritten it.
func TestHistoryStopsAtTheWatermark(t *testing.T) {
	h := NewHistory(50, 10000, 0)
	at := time.Date(2026, 10, 8, 9, 0, 0, 0, time.UTC)
	m := func(id, text string) msg.Message {
		return msg.Message{ID: msg.MessageID(id), Sender: msg.Sender{ID: "1"}, Time: at, Text: text}
	}
	texts := func(ms []msg.Message) string {
		var out []string
		for _, x := range ms {
			out = append(out, x.Text)
		}
		return strings.Join(out, " ")
	}
	h.Add("g", m("1", "one"), 1)
	fwd := m("2", "Merged and Forwarded Message")
	fwd.ForwardIDs = []msg.ForwardID{"2"}
	h.AddPending("g", fwd, 2)
	h.Add("g", m("3", "three"), 3)
	h.Add("g", m("4", "@bot 看看"), 4)

	got, refs := h.Take("g", []msg.Message{m("4", "")}, at)
	if texts(got) != "one" || !cmp.Equal(refs, []int64{1}) {
		t.Fatalf("first turn took %q (refs %v), want what came before the watermark", texts(got), refs)
	}
	if got := texts(h.Peek("g")); got != "Merged and Forwarded Message three" {
		t.Fatalf("kept %q: the watermark and what came after it, not the turn's own message", got)
	}
	if again, _ := h.Take("g", nil, at); len(again) != 0 {
		t.Errorf("a turn while the watermark stands took %q", texts(again))
	}
	if h.Complete("g", 3, m("3", "x")) {
		t.Error("Complete rewrote a message that was not pending")
	}
	done := m("2", "【合并转发,共 1 条】")
	if !h.Complete("g", 2, done) {
		t.Fatal("the pending message was not found")
	}
	got, refs = h.Take("g", nil, at)
	if texts(got) != "【合并转发,共 1 条】 three" || !cmp.Equal(refs, []int64{2, 3}) {
		t.Errorf("after Complete: %q (refs %v)", texts(got), refs)
	}
	if len(got) > 0 && len(got[0].ForwardIDs) != 0 {
		t.Errorf("the completed message still carries forwards: %v", got[0].ForwardIDs)
	}
	if h.Len("g") != 0 {
		t.Errorf("%d messages left", h.Len("g"))
	}
}
