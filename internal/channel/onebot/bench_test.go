package onebot

import (
	"context"
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pincerbot/pincer/internal/channel"
	"github.com/pincerbot/pincer/internal/channel/onebot/onebottest"
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
	a := NewAccount(AccountOptions{WSURL: p.URL, SelfID: 3300000001, Reconnect: DefaultReconnect})
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
	people := OutboundOptions{Mentions: true, Participants: []Participant{{QQ: 10001, Name: "张三"}, {QQ: 10002, Name: "李四"}, {QQ: 10003, Name: "张三丰"}}}
	b.ReportAllocs()
	segs := 0
	for b.Loop() {
		segs = 0
		for _, chunk := range ChunkText(text, 4500) {
			segs += len(Segments(chunk, people))
		}
	}
	b.ReportMetric(float64(segs), "segments")
}
