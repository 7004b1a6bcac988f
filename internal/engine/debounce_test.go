package engine

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/pincerbot/pincer/internal/channel"
	"github.com/pincerbot/pincer/internal/msg"
)

type dispatched struct {
	at   time.Duration
	text string
	id   msg.MessageID
}

type sinkLog struct {
	mu    sync.Mutex
	start time.Time
	got   []dispatched
}

func (s *sinkLog) Dispatch(_ context.Context, m msg.Message, _ channel.Replier) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.got = append(s.got, dispatched{time.Since(s.start), m.Text, m.ID})
	return nil
}

func (s *sinkLog) list() []dispatched {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]dispatched(nil), s.got...)
}

func textMsg(id, sender, text string) msg.Message {
	return msg.Message{ID: msg.MessageID(id), Channel: "onebot", Peer: msg.Peer{Kind: msg.Group, ID: "g"},
		Sender: msg.Sender{ID: msg.UserID(sender)}, Text: text, Segments: []msg.Segment{msg.Text(text)}}
}

func window(d time.Duration) func(msg.ChannelID) time.Duration {
	return func(msg.ChannelID) time.Duration { return d }
}

// send dispatches m in the background at the current fake time and
// collects its result.
func send(d *Debouncer, m msg.Message, results chan<- error) {
	go func() { results <- d.Dispatch(context.Background(), m, &recorder{}) }()
	synctest.Wait()
}

var cmpDispatched = cmp.AllowUnexported(dispatched{})

func TestDebounceSlidingWindow(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sink := &sinkLog{start: time.Now()}
		d := NewDebouncer(sink, DebounceOptions{Window: window(500 * time.Millisecond)})
		results := make(chan error, 3)
		send(d, textMsg("1", "u", "a"), results)
		time.Sleep(300 * time.Millisecond)
		send(d, textMsg("2", "u", "b"), results)
		time.Sleep(300 * time.Millisecond)
		send(d, textMsg("3", "u", "c"), results)
		time.Sleep(499 * time.Millisecond)
		synctest.Wait()
		if got := sink.list(); len(got) != 0 {
			t.Fatalf("flushed inside the quiet window: %v", got)
		}
		time.Sleep(time.Millisecond)
		synctest.Wait()
		want := []dispatched{{1100 * time.Millisecond, "a\nb\nc", "3"}}
		if diff := cmp.Diff(want, sink.list(), cmpDispatched); diff != "" {
			t.Errorf("(-want +got):\n%s", diff)
		}
		merged, replied := 0, 0
		for range 3 {
			switch err := <-results; {
			case errors.Is(err, channel.ErrMerged):
				merged++
			case err == nil:
				replied++
			}
		}
		if merged != 2 || replied != 1 {
			t.Errorf("merged %d, replied %d; want 2 and 1", merged, replied)
		}
	})
}

// TestDebounceMaxWait: a sender who never pauses still gets a reply within
// five quiet windows of the first message.
func TestDebounceMaxWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sink := &sinkLog{start: time.Now()}
		d := NewDebouncer(sink, DebounceOptions{Window: window(500 * time.Millisecond)})
		results := make(chan error, 20)
		for i := range 10 {
			send(d, textMsg(string(rune('a'+i)), "u", string(rune('a'+i))), results)
			time.Sleep(400 * time.Millisecond)
		}
		time.Sleep(time.Second)
		got := sink.list()
		if len(got) < 2 {
			t.Fatalf("got %v", got)
		}
		if got[0].at != 2500*time.Millisecond || got[0].text != "a\nb\nc\nd\ne\nf\ng" {
			t.Errorf("first batch %+v; want messages 0..2400ms flushed at 2500ms", got[0])
		}
		if last := got[len(got)-1]; !strings.HasSuffix(last.text, "j") {
			t.Errorf("the last message was lost: %v", got)
		}
	})
}

func TestDebounceBypassAndMedia(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sink := &sinkLog{start: time.Now()}
		d := NewDebouncer(sink, DebounceOptions{
			Window: window(time.Second),
			Bypass: func(m msg.Message) bool { return strings.HasPrefix(m.Text, "/") },
		})
		results := make(chan error, 4)
		send(d, textMsg("1", "u", "hello"), results)
		send(d, textMsg("2", "u", "/status"), results)
		img := textMsg("3", "v", "[图片]")
		img.Segments = []msg.Segment{{Kind: msg.SegImage, URL: "x"}}
		send(d, img, results)
		want := []dispatched{{0, "hello", "1"}, {0, "/status", "2"}, {0, "[图片]", "3"}}
		if diff := cmp.Diff(want, sink.list(), cmpDispatched); diff != "" {
			t.Errorf("commands and media must not wait, and what was held goes first (-want +got):\n%s", diff)
		}
	})
}

func TestDebounceSeparatesSendersAndChannels(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sink := &sinkLog{start: time.Now()}
		d := NewDebouncer(sink, DebounceOptions{Window: func(ch msg.ChannelID) time.Duration {
			if ch == "webchat" {
				return 0
			}
			return time.Second
		}})
		results := make(chan error, 4)
		send(d, textMsg("1", "u", "from u"), results)
		send(d, textMsg("2", "v", "from v"), results)
		web := textMsg("3", "u", "web")
		web.Channel = "webchat"
		send(d, web, results)
		time.Sleep(time.Second)
		synctest.Wait()
		got := sink.list()
		if len(got) != 3 || got[0].text != "web" || got[0].at != 0 {
			t.Errorf("got %v; want the undebounced channel first, then one batch per sender", got)
		}
	})
}

func TestDebounceCloseFlushesHeld(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sink := &sinkLog{start: time.Now()}
		d := NewDebouncer(sink, DebounceOptions{Window: window(time.Minute)})
		results := make(chan error, 2)
		send(d, textMsg("1", "u", "pending"), results)
		d.Close()
		if got := sink.list(); len(got) != 1 || got[0].at != 0 {
			t.Errorf("close must flush at once: %v", got)
		}
		if err := d.Dispatch(context.Background(), textMsg("2", "u", "late"), &recorder{}); !errors.Is(err, channel.ErrClosed) {
			t.Errorf("after close: %v", err)
		}
	})
}

func TestDebounceMaxKeys(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sink := &sinkLog{start: time.Now()}
		d := NewDebouncer(sink, DebounceOptions{Window: window(time.Second), MaxKeys: 1})
		results := make(chan error, 2)
		send(d, textMsg("1", "u", "held"), results)
		send(d, textMsg("2", "v", "over the limit"), results)
		if got := sink.list(); len(got) != 1 || got[0].text != "over the limit" {
			t.Errorf("got %v", got)
		}
		time.Sleep(time.Second)
	})
}

func TestMerge(t *testing.T) {
	a := textMsg("1", "u", "first")
	a.ReplyTo = "q"
	a.Mentions = []msg.UserID{"bot"}
	b := textMsg("2", "u", "second")
	b.Mentions = []msg.UserID{"bot", "x"}
	m := Merge([]msg.Message{a, b})
	if m.ID != "2" || m.Text != "first\nsecond" || m.ReplyTo != "q" || len(m.Mentions) != 2 || len(m.Segments) != 3 {
		t.Errorf("merged %+v", m)
	}
}

// TestDebounceStopDropsHeldBatch: a stop word is dispatched at once, not
// behind the sender's held batch, which is dropped.
func TestDebounceStopDropsHeldBatch(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &sinkLog{}
		d := NewDebouncer(s, DebounceOptions{
			Window: window(time.Second),
			Bypass: func(m msg.Message) bool { return m.Text == "stop" },
			Abort:  func(m msg.Message) bool { return m.Text == "stop" },
		})
		held := make(chan error, 1)
		send(d, textMsg("1", "ann", "tell me a long story"), held)
		stopped := make(chan error, 1)
		send(d, textMsg("2", "ann", "stop"), stopped)
		if err := <-stopped; err != nil {
			t.Fatal(err)
		}
		if err := <-held; !errors.Is(err, channel.ErrStopped) {
			t.Errorf("the held message: %v", err)
		}
		time.Sleep(5 * time.Second)
		synctest.Wait()
		if got := s.list(); len(got) != 1 || got[0].text != "stop" {
			t.Errorf("dispatched %+v; want the stop alone", got)
		}
	})
}
