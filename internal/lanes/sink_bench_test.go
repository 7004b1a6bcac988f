package lanes

import (
	"context"
	"strconv"
	"testing"

	"github.com/pincerbot/pincer/internal/channel"
	"github.com/pincerbot/pincer/internal/msg"
)

// counted is a next taker that only counts, so the benchmark is the
// sink's own cost.
type counted struct{ n chan struct{} }

func (c counted) Take(_ context.Context, _ msg.Message, _ channel.Replier, done func(error)) {
	done(nil)
	c.n <- struct{}{}
}

func (c counted) Dispatch(context.Context, msg.Message, channel.Replier) error { return nil }

// BenchmarkSinkTake hands messages of 100 chats through a Sink, as a
// burst does, and waits for each to reach the next taker; its B/op is
// what a message costs the heap on its way through a lane.
func BenchmarkSinkTake(b *testing.B) {
	l := New(Options{})
	defer l.Close()
	next := counted{n: make(chan struct{}, 1024)}
	s := Sink{Lanes: l, Next: next}
	msgs := make([]msg.Message, 100)
	for i := range msgs {
		msgs[i] = msg.Message{ID: msg.MessageID(strconv.Itoa(1000 + i)), Channel: "onebot", Account: "default",
			Peer: msg.Peer{Kind: msg.Group, ID: strconv.Itoa(700000000 + i)}, Sender: msg.Sender{ID: "10001", Name: "群友"},
			Text: "今晚几点集合？"}
	}
	done := func(error) {}
	ctx := context.Background()
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		s.Take(ctx, msgs[i%len(msgs)], nil, done)
		<-next.n
	}
}
