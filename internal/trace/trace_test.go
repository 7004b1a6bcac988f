package trace

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/pincerbot/pincer/internal/msg"
)

func message(id string) msg.Message {
	return msg.Message{ID: msg.MessageID(id), Channel: "onebot", Account: "default",
		Peer: msg.Peer{Kind: msg.Group, ID: "100"}, Sender: msg.Sender{ID: "7", Name: "小明"}, Text: "hello " + id}
}

func TestRecordCollectsStepsInOrder(t *testing.T) {
	r := New(Options{})
	m := message("1")
	r.Begin(m)
	r.Step(KeyOf(m), StageTrigger, "not triggered", "no @ of the bot")
	rec, ok, err := r.Get(context.Background(), KeyOf(m))
	if err != nil || !ok {
		t.Fatalf("Get: %v %v", ok, err)
	}
	if rec.Chat != "onebot:default:group:100" || rec.Sender != "小明 (7)" || rec.Preview != "hello 1" {
		t.Errorf("record %+v", rec)
	}
	if len(rec.Steps) != 2 || rec.Steps[1].Detail != "no @ of the bot" || rec.Outcome() != "not triggered" {
		t.Errorf("steps %+v, outcome %q", rec.Steps, rec.Outcome())
	}
}

func TestRingKeepsTheNewestPerAccount(t *testing.T) {
	synctest.Test(t, testRing)
}

func testRing(t *testing.T) {
	r := New(Options{PerAccount: 3})
	for i := range 5 {
		r.Begin(message(fmt.Sprint(i)))
		time.Sleep(time.Millisecond)
	}
	other := message("x")
	other.Account = "second"
	r.Begin(other)
	recs, err := r.Chat(context.Background(), "onebot:default:group:100", "", 10)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, rec := range recs {
		ids = append(ids, string(rec.Key.ID))
	}
	if strings.Join(ids, ",") != "4,3,2" {
		t.Errorf("kept %v, want the newest three", ids)
	}
	if _, ok, _ := r.Get(context.Background(), KeyOf(message("0"))); ok {
		t.Error("the oldest record outlived the ring")
	}
	if _, ok, _ := r.Get(context.Background(), KeyOf(other)); !ok {
		t.Error("another account's record was pushed out")
	}
}

func TestSubscribersFollowStepsAndLeave(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := New(Options{})
		ctx, cancel := context.WithCancel(context.Background())
		events := r.Subscribe(ctx, 8)
		m := message("1")
		r.Begin(m)
		r.Step(KeyOf(m), StageDeliver, "sent", "1 message")
		first, second := <-events, <-events
		if first.Step.Stage != StageReceive || second.Step.Outcome != "sent" || len(second.Record.Steps) != 2 {
			t.Errorf("events %+v / %+v", first, second)
		}
		cancel()
		synctest.Wait()
		if _, open := <-events; open {
			t.Error("the stream stayed open after its context ended")
		}
		r.Step(KeyOf(m), StageDeliver, "", "after") // no follower: must not block
	})
}

func TestNilRecorderRecordsNothing(t *testing.T) {
	var r *Recorder
	r.Begin(message("1"))
	r.Step(Key{}, StageTrigger, "", "")
	if recs, err := r.Chat(context.Background(), "x", "", 1); recs != nil || err != nil {
		t.Error("a nil recorder returned records")
	}
	if _, open := <-r.Subscribe(context.Background(), 1); open {
		t.Error("a nil recorder's stream is open")
	}
}

func TestPreviewIsShort(t *testing.T) {
	long := strings.Repeat("字", 200)
	if p := Preview(long); !strings.HasSuffix(p, "…") || len([]rune(p)) != previewRunes+1 {
		t.Errorf("preview %q", p)
	}
	if Preview("short") != "short" {
		t.Error("a short text changed")
	}
}

func TestStepsAreTimed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := New(Options{})
		m := message("1")
		r.Begin(m)
		time.Sleep(time.Second)
		r.Step(KeyOf(m), StageAgent, "", "model sim/bench")
		rec, _, _ := r.Get(context.Background(), KeyOf(m))
		if got := rec.Steps[1].At.Sub(rec.Steps[0].At); got != time.Second {
			t.Errorf("steps %s apart, want 1s", got)
		}
	})
}

// memStore is a trace.Store in memory.
type memStore struct {
	mu    sync.Mutex
	recs  []Record
	calls int
}

func (m *memStore) AddTraceRecords(_ context.Context, recs []Record) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.recs = append(m.recs, recs...)
	m.calls++
	return nil
}

func (m *memStore) TraceRecords(context.Context, string, msg.MessageID, int) ([]Record, error) {
	return nil, nil
}

func (m *memStore) PruneTraces(context.Context, time.Time) error { return nil }

func (m *memStore) stored() []Record {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]Record(nil), m.recs...)
}

// TestSettledRecordsAreStoredInBatches: a message whose fate is settled
// (a reply sent, a drop) reaches the store at the next flush, whole and
// once however many steps came since; a step after that stores it again;
// chatter never reaches it; Run stores what is left when it ends.
func TestSettledRecordsAreStoredInBatches(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := &memStore{}
		r := New(Options{Store: st, Keep: time.Hour})
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error)
		go func() { done <- r.Run(ctx) }()
		chatter, asked := message("1"), message("2")
		r.Begin(chatter)
		r.Step(KeyOf(chatter), StageTrigger, "not triggered", "no @ of the bot")
		r.Begin(asked)
		r.Step(KeyOf(asked), StageTrigger, "triggered", "an @ of the bot")
		r.Step(KeyOf(asked), StageDeliver, "sent", "1 message(s) sent (9)")
		r.Step(KeyOf(asked), StageReceive, "dropped", "a duplicate")
		if len(st.stored()) != 0 {
			t.Fatal("stored at once, on the message's path")
		}
		time.Sleep(flushEvery)
		synctest.Wait()
		got := st.stored()
		if len(got) != 1 || got[0].Key != KeyOf(asked) || len(got[0].Steps) != 4 || got[0].Chat != "onebot:default:group:100" || got[0].Sender != "小明 (7)" {
			t.Fatalf("stored %+v", got)
		}
		r.Step(KeyOf(asked), StageReceive, "dropped", "a duplicate again")
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if got := st.stored(); len(got) != 2 || len(got[1].Steps) != 5 {
			t.Errorf("after Run ended: %+v", got)
		}
	})
}
