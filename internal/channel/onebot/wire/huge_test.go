package wire

import (
	"encoding/json"
	"runtime"
	"strings"
	"testing"

	"github.com/pincerbot/pincer/internal/msg"
)

// groupEvent is a group message event of user, with text as its one
// segment.
func groupEvent(id, user int64, text string) map[string]any {
	return map[string]any{
		"time": 1774420200, "self_id": 3300000001, "post_type": "message", "message_type": "group",
		"message_id": id, "user_id": user, "group_id": 123,
		"sender":  map[string]any{"user_id": user, "nickname": "Ann"},
		"message": []any{map[string]any{"type": "text", "data": map[string]any{"text": text}}},
	}
}

// hugeText is about size bytes of chat text: CJK and ASCII, with newlines
// and quotes, so its JSON form has escapes as real messages do.
func hugeText(size int) string {
	line := "今天的会议改到下午三点了吗？\"see\" the notes at https://example.com/a?b=c\n"
	return strings.Repeat(line, size/len(line)+1)[:size-size%len(line)]
}

// hugeFrame is a group message event of about size bytes mentioning the
// bot: its text is sent both as segments and as raw_message, as NapCat
// sends it.
func hugeFrame(tb testing.TB, size int) []byte {
	tb.Helper()
	text := hugeText(size / 2 * 96 / 100) // escaped twice, it fills the frame
	ev := groupEvent(1, 10001, "")
	ev["message"] = []any{
		map[string]any{"type": "at", "data": map[string]any{"qq": "3300000001"}},
		map[string]any{"type": "text", "data": map[string]any{"text": " " + text}},
	}
	ev["raw_message"] = "[CQ:at,qq=3300000001] " + EscapeText(text)
	frame, err := json.Marshal(ev)
	if err != nil {
		tb.Fatal(err)
	}
	return frame
}

// allocated runs f and returns the bytes it allocated and the bytes still
// live after it, with its result kept alive. Two collections empty the
// pools (encoding/json keeps its buffers in one).
func allocated(f func() any) (alloc, live uint64) {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&before)
	keep := f()
	runtime.ReadMemStats(&after)
	alloc = after.TotalAlloc - before.TotalAlloc
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&after)
	live = after.HeapAlloc - min(after.HeapAlloc, before.HeapAlloc)
	runtime.KeepAlive(keep)
	return alloc, live
}

// BenchmarkHugeMessageNormalize measures what normalizing one 16 MiB
// message event costs: decoding the frame (Classify, as onebot.Conn.Run does) and
// turning it into a message. MiB-alloc/msg is what is allocated per
// message, MiB-live/msg what the message keeps alive afterwards, x-frame
// the allocation as a multiple of the frame's size.
func BenchmarkHugeMessageNormalize(b *testing.B) {
	frame := hugeFrame(b, 16<<20)
	var alloc, live uint64
	for b.Loop() {
		a, l := allocated(func() any {
			ev, _ := Classify(frame)
			m, err := ev.ToMessage(msg.DefaultAccount, 3300000001)
			if err != nil {
				b.Fatal(err)
			}
			return m
		})
		alloc += a
		live += l
	}
	n := float64(b.N)
	b.ReportMetric(float64(alloc)/n/(1<<20), "MiB-alloc/msg")
	b.ReportMetric(float64(live)/n/(1<<20), "MiB-live/msg")
	b.ReportMetric(float64(alloc)/n/float64(len(frame)), "x-frame")
}
