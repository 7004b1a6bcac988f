package reply

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/pincerbot/pincer/internal/msg"
)

type delivery struct {
	kind Kind
	text string
	at   time.Duration
}

type sink struct {
	mu     sync.Mutex
	start  time.Time
	got    []delivery
	active int
	maxAct int
	slow   time.Duration
	fail   string
}

func (s *sink) deliver(ctx context.Context, kind Kind, p msg.Outbound) error {
	s.mu.Lock()
	s.active++
	s.maxAct = max(s.maxAct, s.active)
	s.mu.Unlock()
	if s.slow > 0 {
		time.Sleep(s.slow)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.active--
	s.got = append(s.got, delivery{kind, p.Text, time.Since(s.start)})
	if p.Text == s.fail {
		return errors.New("platform refused")
	}
	return nil
}

func TestDispatcherSerializesInOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &sink{start: time.Now(), slow: 100 * time.Millisecond}
		d := NewDispatcher(context.Background(), DispatcherOptions{Deliver: s.deliver})
		d.SendTool(msg.Outbound{Text: "tool"})
		d.SendBlock(msg.Outbound{Text: "b1"})
		d.SendBlock(msg.Outbound{Text: "b2"})
		d.SendFinal(msg.Outbound{Text: "final"})
		d.Finish()
		want := []delivery{{KindTool, "tool", 100 * time.Millisecond}, {KindBlock, "b1", 200 * time.Millisecond}, {KindBlock, "b2", 300 * time.Millisecond}, {KindFinal, "final", 400 * time.Millisecond}}
		if diff := cmp.Diff(want, s.got, cmp.AllowUnexported(delivery{})); diff != "" {
			t.Errorf("deliveries (-want +got):\n%s", diff)
		}
		if s.maxAct != 1 {
			t.Errorf("%d deliveries ran at once; they must be strictly serial", s.maxAct)
		}
	})
}

func TestHumanDelayNeverBeforeFirstBlock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &sink{start: time.Now()}
		d := NewDispatcher(context.Background(), DispatcherOptions{Deliver: s.deliver, HumanDelay: DelayRange{Min: time.Second, Max: time.Second}})
		d.SendBlock(msg.Outbound{Text: "b1"})
		d.SendBlock(msg.Outbound{Text: "b2"})
		d.SendBlock(msg.Outbound{Text: "b3"})
		d.Finish()
		var at []time.Duration
		for _, g := range s.got {
			at = append(at, g.at)
		}
		if diff := cmp.Diff([]time.Duration{0, time.Second, 2 * time.Second}, at); diff != "" {
			t.Errorf("block times (-want +got):\n%s", diff)
		}
	})
}

func TestHumanDelayStaysInRange(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &sink{start: time.Now()}
		d := NewDispatcher(context.Background(), DispatcherOptions{Deliver: s.deliver, HumanDelay: DefaultHumanDelay})
		for i := range 50 {
			d.SendBlock(msg.Outbound{Text: fmt.Sprint("block ", i)})
		}
		d.Finish()
		for i := 1; i < len(s.got); i++ {
			gap := s.got[i].at - s.got[i-1].at
			if gap < DefaultHumanDelay.Min || gap > DefaultHumanDelay.Max {
				t.Fatalf("gap %d is %v, outside %v..%v", i, gap, DefaultHumanDelay.Min, DefaultHumanDelay.Max)
			}
		}
	})
}

// TestReservationRace is the dispatcher's reservation regression test:
// payloads that are delivered instantly must not make it idle before
// Finish, or a late final would be lost after the turn was declared over.
func TestReservationRace(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &sink{start: time.Now()}
		idleCalls := 0
		d := NewDispatcher(context.Background(), DispatcherOptions{Deliver: s.deliver, OnIdle: func() { idleCalls++ }})
		d.SendBlock(msg.Outbound{Text: "instant"})
		synctest.Wait() // the block is fully delivered; nothing is pending but the reservation
		if idleCalls != 0 {
			t.Fatal("idle before Finish")
		}
		if !d.SendFinal(msg.Outbound{Text: "late final"}) {
			t.Fatal("final refused before Finish")
		}
		d.Finish()
		if len(s.got) != 2 || idleCalls != 1 {
			t.Errorf("got %v, idle called %d times", s.got, idleCalls)
		}
		if d.SendFinal(msg.Outbound{Text: "after"}) {
			t.Error("payloads after Finish must be refused")
		}
		d.Finish() // harmless twice
	})
}

func TestIdleWithNothingSent(t *testing.T) {
	d := NewDispatcher(context.Background(), DispatcherOptions{Deliver: (&sink{}).deliver})
	d.Finish()
}

func TestDeliveryErrorsDoNotStopLaterPayloads(t *testing.T) {
	s := &sink{fail: "bad"}
	var errs []Kind
	d := NewDispatcher(context.Background(), DispatcherOptions{Deliver: s.deliver, OnError: func(_ error, k Kind) { errs = append(errs, k) }})
	d.SendBlock(msg.Outbound{Text: "bad"})
	d.SendFinal(msg.Outbound{Text: "good"})
	d.Finish()
	if len(s.got) != 2 || len(errs) != 1 || errs[0] != KindBlock {
		t.Errorf("got %v errors %v", s.got, errs)
	}
}

func TestDispatcherNormalizes(t *testing.T) {
	s := &sink{}
	var skipped []SkipReason
	d := NewDispatcher(context.Background(), DispatcherOptions{Deliver: s.deliver, Normalizer: &Normalizer{OnSkip: func(r SkipReason, _ msg.Outbound) { skipped = append(skipped, r) }}})
	if d.SendFinal(msg.Outbound{Text: "NO_REPLY"}) {
		t.Error("a silent reply was queued")
	}
	d.Finish()
	if len(s.got) != 0 || len(skipped) != 1 || skipped[0] != SkipSilent {
		t.Errorf("delivered %v, skipped %v", s.got, skipped)
	}
}

// TestDispatcherFinishDeliversTheFinalReplyItself: a final reply with
// nothing going out before it is delivered by Finish on the caller's
// goroutine, which waits for it anyway, rather than on a goroutine of its
// own; after blocks still going out, it follows them, in order, and Finish
// returns once all are out.
func TestDispatcherFinishDeliversTheFinalReplyItself(t *testing.T) {
	var onCaller []bool
	var texts []string
	deliver := func(_ context.Context, _ Kind, p msg.Outbound) error {
		buf := make([]byte, 64<<10)
		onCaller = append(onCaller, strings.Contains(string(buf[:runtime.Stack(buf, false)]), "reply.(*Dispatcher).Finish"))
		texts = append(texts, p.Text)
		return nil
	}
	d := NewDispatcher(context.Background(), DispatcherOptions{Deliver: deliver})
	d.SendFinal(msg.Outbound{Text: "final"})
	d.Finish()
	if !slices.Equal(texts, []string{"final"}) || !slices.Equal(onCaller, []bool{true}) {
		t.Errorf("delivered %q, on Finish's goroutine %v; want the final, on Finish's goroutine", texts, onCaller)
	}

	synctest.Test(t, func(t *testing.T) {
		s := &sink{start: time.Now(), slow: 100 * time.Millisecond}
		d := NewDispatcher(context.Background(), DispatcherOptions{Deliver: s.deliver})
		d.SendBlock(msg.Outbound{Text: "b1"})
		d.SendFinal(msg.Outbound{Text: "final"})
		d.Finish()
		want := []delivery{{KindBlock, "b1", 100 * time.Millisecond}, {KindFinal, "final", 200 * time.Millisecond}}
		if diff := cmp.Diff(want, s.got, cmp.AllowUnexported(delivery{})); diff != "" {
			t.Errorf("deliveries (-want +got):\n%s", diff)
		}
		if d.SendFinal(msg.Outbound{Text: "late"}) {
			t.Error("a payload after Finish must be refused")
		}
	})
}
