package aggregate

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/pincerbot/pincer/internal/msg"
)

// TestPeekLeavesTheHistoryInPlace: Peek shows the buffer, oldest first,
// and the next Take still gets all of it.
func TestPeekLeavesTheHistoryInPlace(t *testing.T) {
	h := NewHistory(10, 1000, 0)
	for _, id := range []string{"1", "2"} {
		h.Add("g", msg.Message{ID: msg.MessageID(id), Text: "t" + id, Time: time.Unix(100, 0)}, 0)
	}
	if got := h.Peek("g"); len(got) != 2 || got[0].Text != "t1" || got[1].ID != "2" {
		t.Fatalf("peek %+v", got)
	}
	if taken, _ := h.Take("g", nil, time.Unix(100, 0)); len(taken) != 2 {
		t.Errorf("take after peek: %+v", taken)
	}
	if h.Peek("g") != nil || h.Peek("other") != nil {
		t.Error("an empty buffer peeked as not empty")
	}
}

// TestWindowsListsTheOpenOnesOfAChat: the windows of one chat (keys
// "peer::sender") are listed with when they opened and what they hold.
func TestWindowsListsTheOpenOnesOfAChat(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := NewRealtime(RealtimeOptions[int]{Window: time.Minute, MaxWindow: time.Hour, MaxMessages: 10, MaxChars: 1000, Flush: func(Flushed[int]) {}})
		opened := time.Now()
		r.Accept("group:1::a", Entry[int]{Message: msg.Message{Text: "x"}}, true, msg.TriggerMention)
		time.Sleep(time.Second)
		r.Accept("group:1::a", Entry[int]{Message: msg.Message{Text: "y"}}, false, "")
		r.Accept("group:2::a", Entry[int]{Message: msg.Message{Text: "z"}}, true, msg.TriggerMention)
		got := r.Windows("group:1::")
		if len(got) != 1 || got[0].Messages != 2 || !got[0].Opened.Equal(opened) || got[0].Key != "group:1::a" {
			t.Errorf("windows %+v", got)
		}
		r.FlushAll(msg.FlushShutdown)
	})
}
