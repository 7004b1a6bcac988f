package onebot

import (
	"context"
	"encoding/json"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pincerbot/pincer/internal/channel"
	"github.com/pincerbot/pincer/internal/channel/onebot/onebottest"
	"github.com/pincerbot/pincer/internal/channel/onebot/wire"
	"github.com/pincerbot/pincer/internal/msg"
)

// countSink counts messages and signals when want have arrived.
type countSink struct {
	n    atomic.Int64
	want int64
	done chan struct{}
}

func (s *countSink) Dispatch(context.Context, msg.Message, channel.Replier) error {
	if s.n.Add(1) == s.want {
		close(s.done)
	}
	return nil
}

// BenchmarkEventIngest measures events decoded, normalized, deduplicated,
// filtered and handed to the pipeline, arriving over a real loopback
// WebSocket. Run with -cpu 1 for the one-core figure.
func BenchmarkEventIngest(b *testing.B) {
	p := onebottest.New(b, answerSends)
	sink := &countSink{want: int64(b.N), done: make(chan struct{})}
	a := NewAccount(AccountOptions{WSURL: p.URL, SelfID: 3300000001, Reconnect: defaultReconnect})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = a.Run(ctx, sink) }()
	if err := p.Connected(ctx); err != nil {
		b.Fatal(err)
	}
	frames := make([][]byte, b.N)
	for i := range frames {
		ev := groupEvent(int64(i+1), 10001, "")
		ev["message"] = []any{
			map[string]any{"type": "at", "data": map[string]any{"qq": "3300000001"}},
			map[string]any{"type": "text", "data": map[string]any{"text": " 今天的会议改到下午三点了吗？"}},
			map[string]any{"type": "face", "data": map[string]any{"id": "14"}},
		}
		frames[i], _ = json.Marshal(ev)
	}
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	for _, f := range frames {
		if err := p.PushRaw(ctx, f); err != nil {
			b.Fatal(err)
		}
	}
	<-sink.done
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "events/s")
}

// BenchmarkOutbound20k measures chunking and @-rewriting of a 20 000
// character reply into OneBot segments.
func BenchmarkOutbound20k(b *testing.B) {
	var sb strings.Builder
	for sb.Len() < 60000 { // ~20 000 characters of mostly CJK text
		sb.WriteString("收到，@张三 明天上午十点的评审会照常进行，请 @李四 准备一下材料。[CQ:face,id=14]\n")
	}
	text := string([]rune(sb.String())[:20000])
	people := outboundOptions{Mentions: true, Participants: []participant{{QQ: 10001, Name: "张三"}, {QQ: 10002, Name: "李四"}, {QQ: 10003, Name: "张三丰"}}}
	b.ReportAllocs()
	segs := 0
	for b.Loop() {
		segs = 0
		for _, chunk := range chunkText(text, 4500) {
			segs += len(outboundSegments(chunk, people))
		}
	}
	b.ReportMetric(float64(segs), "segments")
}

// hugeText is about size bytes of chat text: CJK and ASCII, with newlines
// and quotes, so its JSON form has escapes as real messages do.
func hugeText(size int) string {
	line := "今天的会议改到下午三点了吗？\"see\" the notes at https://example.com/a?b=c\n"
	return strings.Repeat(line, size/len(line)+1)[:size-size%len(line)]
}

// hugeFrame is a group message event of about size bytes mentioning the
// bot: its text is sent both as segments and as raw_message, as NapCat
// sends it (the frame of wire's BenchmarkHugeMessageNormalize).
func hugeFrame(tb testing.TB, size int) []byte {
	tb.Helper()
	text := hugeText(size / 2 * 96 / 100) // escaped twice, it fills the frame
	ev := groupEvent(1, 10001, "")
	ev["message"] = []any{
		map[string]any{"type": "at", "data": map[string]any{"qq": "3300000001"}},
		map[string]any{"type": "text", "data": map[string]any{"text": " " + text}},
	}
	ev["raw_message"] = "[CQ:at,qq=3300000001] " + wire.EscapeText(text)
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

// BenchmarkHugeMessageIngest measures one 16 MiB message event arriving
// over a real loopback WebSocket and reaching the pipeline: the read, the
// decode and the normalization.
func BenchmarkHugeMessageIngest(b *testing.B) {
	frame := hugeFrame(b, 16<<20)
	p := onebottest.New(b, answerSends)
	sink := &keepSink{got: make(chan msg.Message, 1)}
	a := NewAccount(AccountOptions{WSURL: p.URL, SelfID: 3300000001, Reconnect: defaultReconnect})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = a.Run(ctx, sink) }()
	if err := p.Connected(ctx); err != nil {
		b.Fatal(err)
	}
	var alloc, live uint64
	id := int64(0)
	for b.Loop() {
		id++
		f := []byte(strings.Replace(string(frame), `"message_id":1,`, `"message_id":`+itoa(id)+`,`, 1))
		a, l := allocated(func() any {
			if err := p.PushRaw(ctx, f); err != nil {
				b.Fatal(err)
			}
			return <-sink.got
		})
		runtime.KeepAlive(f) // live before and after: not counted
		alloc += a
		live += l
	}
	n := float64(b.N)
	b.ReportMetric(float64(alloc)/n/(1<<20), "MiB-alloc/msg")
	b.ReportMetric(float64(live)/n/(1<<20), "MiB-live/msg")
	b.ReportMetric(float64(alloc)/n/float64(len(frame)), "x-frame")
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// keepSink hands each message to the benchmark.
type keepSink struct{ got chan msg.Message }

func (s *keepSink) Dispatch(_ context.Context, m msg.Message, _ channel.Replier) error {
	s.got <- m
	return nil
}
