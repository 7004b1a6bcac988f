package pipeline

import (
	"context"
	"path/filepath"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/pincerbot/pincer/internal/channel"
	"github.com/pincerbot/pincer/internal/msg"
	"github.com/pincerbot/pincer/internal/store/sqlite"
)

type nopEngine struct{}

func (nopEngine) Turn(context.Context, Turn, channel.Replier) error { return nil }

type nopReplier struct{}

func (nopReplier) Partial(string) {}
func (nopReplier) Deliver(context.Context, msg.Outbound) (msg.MessageID, error) {
	return "", nil
}

func benchPipeline(b *testing.B) *Pipeline {
	s := defaults()
	s.Digest.Enabled = true
	s.Mention.Keywords = []string{"天气", "机器人"}
	p, _ := New(Options{Receive: s, Bot: fakeBot{}, Engine: nopEngine{}, Location: time.UTC})
	b.Cleanup(func() { _ = p.Close(context.Background()) })
	return p
}

// BenchmarkReceive measures messages through the trigger and all three
// buffers (history and digest on), untriggered group chatter spread over
// 1 000 groups. Run with -cpu 1 for the one-core figure.
func BenchmarkReceive(b *testing.B) {
	p := benchPipeline(b)
	msgs := make([]msg.Message, 4096)
	for i := range msgs {
		m := gm(strconv.Itoa(i), strconv.Itoa(10000+i%50), "群友", "今晚几点集合？我八点以后有空", 0)
		m.Peer.ID = strconv.Itoa(700000000 + i%1000)
		msgs[i] = m
	}
	ctx := context.Background()
	r := nopReplier{}
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	for i := range b.N {
		_ = p.Dispatch(ctx, msgs[i%len(msgs)], r)
	}
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "msgs/s")
}

func heapInUse() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapInuse
}

// BenchmarkPeerMemory reports the memory of 100 000 peers: idle (a
// drained, empty buffer) and holding 20 buffered history messages each.
func BenchmarkPeerMemory(b *testing.B) {
	const peers = 100000
	for range b.N {
		s := defaults()
		s.Digest.Enabled = false
		p, _ := New(Options{Receive: s, Bot: fakeBot{}, Engine: nopEngine{}, Location: time.UTC})
		base := heapInUse()
		ctx := context.Background()
		keys := make([]string, peers)
		for i := range peers {
			keys[i] = "group:" + strconv.Itoa(800000000+i)
		}
		for i := range peers {
			m := gm(strconv.Itoa(i), "10001", "群友", "x", 0)
			m.Peer.ID = keys[i][len("group:"):]
			_ = p.Dispatch(ctx, m, nopReplier{})
		}
		for i := range peers {
			p.history.Take(keys[i], nil, time.Now()) // drained: an idle peer
		}
		idle := heapInUse()
		for i := range peers {
			for j := range 20 {
				m := gm(strconv.Itoa(i*20+j), "10001", "群友", "今晚几点集合？我八点以后有空", 0)
				m.Peer.ID = keys[i][len("group:"):]
				_ = p.Dispatch(ctx, m, nopReplier{})
			}
		}
		full := heapInUse()
		b.ReportMetric(float64(idle-base)/peers, "B/idle-peer")
		b.ReportMetric(float64(full-base)/(1<<20), "MiB/100k-peers-20-msgs")
		runtime.KeepAlive(keys)
		_ = p.Close(ctx)
	}
}

// BenchmarkReceiveDurable is BenchmarkReceive with every buffered message
// stored in SQLite first (one transaction per message).
func BenchmarkReceiveDurable(b *testing.B) {
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(b.TempDir(), "bench.db"), sqlite.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	s := defaults()
	s.Digest.Enabled = true
	p, _ := New(Options{Receive: s, Bot: fakeBot{}, Engine: &admitEngine{st: st}, Location: time.UTC, Store: st, Channel: "onebot", Account: "default"})
	defer p.Close(ctx)
	msgs := make([]msg.Message, 4096)
	for i := range msgs {
		m := gm(strconv.Itoa(i), strconv.Itoa(10000+i%50), "群友", "今晚几点集合？我八点以后有空", 0)
		m.Peer.ID = strconv.Itoa(700000000 + i%1000)
		msgs[i] = m
	}
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	for i := range b.N {
		m := msgs[i%len(msgs)]
		m.ID = msg.MessageID(strconv.Itoa(i))
		_ = p.Dispatch(ctx, m, nopReplier{})
	}
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "msgs/s")
}
