package aggregate

import (
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/pincerbot/pincer/internal/msg"
)

// flushLog records flushes with the time since start.
type flushLog struct {
	mu    sync.Mutex
	start time.Time
	got   []string
}

func (l *flushLog) flush(f Flushed[int]) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var texts []string
	for _, e := range f.Entries {
		texts = append(texts, e.Message.Text)
	}
	l.got = append(l.got, "+"+time.Since(l.start).String()+" "+string(f.Reason)+" "+string(f.Trigger)+" ["+strings.Join(texts, "|")+"]")
}

func (l *flushLog) list() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.got...)
}

func m(text string) Entry[int] {
	return Entry[int]{Message: msg.Message{ID: msg.MessageID(text), Text: text}}
}

func spec() RealtimeOptions[int] {
	return RealtimeOptions[int]{Window: 800 * time.Millisecond, MaxWindow: 3 * time.Second, MaxMessages: 10, MaxChars: 8000}
}

// TestRealtimeSpecTimeline: windowMs 800, maxWindowMs 3000; a mention
// and two follow-ups at +300ms and +700ms flush together at +1500ms.
func TestRealtimeSpecTimeline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := &flushLog{start: time.Now()}
		o := spec()
		o.Flush = l.flush
		r := NewRealtime(o)
		r.Accept("g::A", m("@机器人帮我查一下明天的天气"), true, msg.TriggerMention)
		time.Sleep(300 * time.Millisecond)
		r.Accept("g::A", m("北京的"), false, "")
		time.Sleep(400 * time.Millisecond)
		r.Accept("g::A", m("还有明天要不要带伞"), false, "")
		time.Sleep(799 * time.Millisecond)
		synctest.Wait()
		if len(l.list()) != 0 {
			t.Fatalf("flushed early: %v", l.list())
		}
		time.Sleep(time.Millisecond)
		synctest.Wait()
		want := []string{"+1.5s quiet mention [@机器人帮我查一下明天的天气|北京的|还有明天要不要带伞]"}
		if diff := cmp.Diff(want, l.list()); diff != "" {
			t.Errorf("(-want +got):\n%s", diff)
		}
	})
}

// TestRealtimeMaxWindow is the spec's contrast: a follow-up every 500ms
// keeps the quiet timer from expiring; the window ends at +3000ms.
func TestRealtimeMaxWindow(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := &flushLog{start: time.Now()}
		o := spec()
		o.Flush = l.flush
		r := NewRealtime(o)
		r.Accept("g::A", m("0"), true, msg.TriggerMention)
		for i := 1; i <= 5; i++ { // +500 … +2500
			time.Sleep(500 * time.Millisecond)
			r.Accept("g::A", m(strconv.Itoa(i)), false, "")
		}
		time.Sleep(600 * time.Millisecond) // +3100, past the cap
		r.Accept("g::A", m("6"), false, "")
		synctest.Wait()
		got := l.list()
		if len(got) != 1 || got[0] != "+3s max-window mention [0|1|2|3|4|5]" {
			t.Fatalf("got %v", got)
		}
		// The message at +3100 had no window to join and was not
		// triggered: it was dropped.
		if r.Open() != 0 {
			t.Errorf("%d windows open", r.Open())
		}
	})
}

func TestRealtimeWindowsAndCapacity(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := &flushLog{start: time.Now()}
		o := spec()
		o.MaxMessages, o.MaxChars = 3, 10
		o.Flush = l.flush
		r := NewRealtime(o)
		if r.Accept("g::B", m("not triggered"), false, "") {
			t.Error("an untriggered message opens no window")
		}
		r.Accept("g::A", m("a1"), true, msg.TriggerMention)
		r.Accept("g::B", m("b1"), true, msg.TriggerKeyword) // another sender, another window
		r.Accept("g::A", m("a2"), false, "")
		r.Accept("g::A", m("a3"), false, "") // third message: max-messages at once
		r.Accept("g::B", m("b2"), false, "")
		r.Accept("g::C", m("01234567890"), true, msg.TriggerDirect) // over maxChars on opening
		synctest.Wait()
		want := []string{
			"+0s max-messages mention [a1|a2|a3]",
			"+0s max-chars direct [01234567890]",
		}
		if diff := cmp.Diff(want, l.list()); diff != "" {
			t.Errorf("(-want +got):\n%s", diff)
		}
		r.FlushAll(msg.FlushShutdown)
		if got := l.list(); len(got) != 3 || got[2] != "+0s shutdown keyword [b1|b2]" {
			t.Errorf("shutdown flush: %v", got)
		}
		time.Sleep(5 * time.Second) // timers of flushed windows do nothing
		synctest.Wait()
		if len(l.list()) != 3 {
			t.Errorf("a stale timer flushed again: %v", l.list())
		}
	})
}

// TestRealtimeShapePerChat: a chat's own shape decides its windows: a
// longer quiet time, or none at all; other chats keep the options'.
func TestRealtimeShapePerChat(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := &flushLog{start: time.Now()}
		o := spec()
		o.Flush = l.flush
		r := NewRealtime(o)
		slow := &Shape{Window: 5 * time.Second, MaxWindow: 10 * time.Second, MaxMessages: 10, MaxChars: 8000}
		off := &Shape{Disabled: true}
		r.AcceptIn("slow::A", m("s1"), true, msg.TriggerMention, slow)
		r.AcceptIn("off::A", m("o1"), true, msg.TriggerMention, off)
		if r.TakesIn("off::A", false, off) || r.AcceptIn("off::A", m("o2"), false, "", off) {
			t.Error("a chat without windows takes no follow-up")
		}
		r.Accept("g::A", m("g1"), true, msg.TriggerMention)
		time.Sleep(2 * time.Second)
		if !r.TakesIn("slow::A", false, slow) {
			t.Error("the slow chat's window is still open after 2 s")
		}
		r.AcceptIn("slow::A", m("s2"), false, "", slow)
		time.Sleep(6 * time.Second)
		synctest.Wait()
		want := []string{"+0s immediate mention [o1]", "+800ms quiet mention [g1]", "+7s quiet mention [s1|s2]"}
		if diff := cmp.Diff(want, l.list()); diff != "" {
			t.Errorf("(-want +got):\n%s", diff)
		}
	})
}

func TestRealtimeDisabledFlushesTriggeredAtOnce(t *testing.T) {
	l := &flushLog{start: time.Now()}
	o := spec()
	o.Disabled, o.Flush = true, l.flush
	r := NewRealtime(o)
	r.Accept("g::A", m("@bot hi"), true, msg.TriggerMention)
	if r.Accept("g::A", m("follow-up"), false, "") {
		t.Error("without windows an untriggered message is dropped")
	}
	if got := l.list(); len(got) != 1 || !strings.HasSuffix(got[0], "immediate mention [@bot hi]") {
		t.Errorf("got %v", got)
	}
	if r.Open() != 0 {
		t.Error("no window state when disabled")
	}
}

func TestRealtimeFlushNow(t *testing.T) {
	l := &flushLog{start: time.Now()}
	o := spec()
	o.Flush = l.flush
	r := NewRealtime(o)
	r.Accept("k", m("/new"), true, msg.TriggerDirect)
	r.FlushNow("k", msg.FlushImmediate)
	r.FlushNow("k", msg.FlushImmediate) // nothing left
	if got := l.list(); len(got) != 1 || !strings.Contains(got[0], "immediate direct [/new]") {
		t.Errorf("got %v", got)
	}
}

// TestDigestSpecTimeline: intervalMs 60000, maxMessages 50, minMessages 3.
func TestDigestSpecTimeline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := &flushLog{start: time.Now()}
		d := NewDigest(DigestOptions[int]{Interval: time.Minute, MinMessages: 3, MaxMessages: 50, MaxChars: 20000, Flush: l.flush})
		d.Accept("g", m("first")) // 10:00:00 opens, timer for 10:01:00
		time.Sleep(20 * time.Second)
		d.Accept("g", m("second")) // 10:00:20
		time.Sleep(40 * time.Second)
		synctest.Wait() // 10:01:00: 2 < 3, suppressed, re-armed
		if len(l.list()) != 0 || d.Pending("g") != 2 {
			t.Fatalf("10:01:00 must be suppressed: %v, %d pending", l.list(), d.Pending("g"))
		}
		time.Sleep(30 * time.Second)
		d.Accept("g", m("third")) // 10:01:30
		time.Sleep(30 * time.Second)
		synctest.Wait() // 10:02:00: flush
		want := []string{"+2m0s interval  [first|second|third]"}
		if diff := cmp.Diff(want, l.list()); diff != "" {
			t.Errorf("(-want +got):\n%s", diff)
		}
		if d.Pending("g") != 0 {
			t.Error("the window closed")
		}
	})
}

// TestDigestIntervalPerChat: a chat with an interval of its own flushes
// on it, and re-arms on it; others keep the options' interval.
func TestDigestIntervalPerChat(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := &flushLog{start: time.Now()}
		d := NewDigest(DigestOptions[int]{Interval: time.Minute, MinMessages: 2, MaxMessages: 50, MaxChars: 20000, Flush: l.flush})
		d.AcceptEvery("daily", m("a"), time.Hour)
		d.Accept("g", m("x"))
		d.Accept("g", m("y"))
		time.Sleep(time.Hour + time.Second) // "daily" holds 1 < 2 at +1h: re-armed for an hour
		synctest.Wait()
		d.AcceptEvery("daily", m("b"), time.Hour)
		time.Sleep(time.Hour)
		synctest.Wait()
		want := []string{"+1m0s interval  [x|y]", "+2h0m0s interval  [a|b]"}
		if diff := cmp.Diff(want, l.list()); diff != "" {
			t.Errorf("(-want +got):\n%s", diff)
		}
	})
}

func TestDigestMaxMessagesIgnoresMinAndTrimsByChars(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := &flushLog{start: time.Now()}
		d := NewDigest(DigestOptions[int]{Interval: time.Hour, MinMessages: 10, MaxMessages: 2, MaxChars: 100, Flush: l.flush})
		d.Accept("g", m("a"))
		d.Accept("g", m("b")) // two reach maxMessages; minMessages (clamped to 2) is not asked
		d.Accept("y", m(strings.Repeat("y", 60)))
		if dropped := d.Accept("y", m(strings.Repeat("z", 60))); len(dropped) != 1 || dropped[0].Message.Text[0] != 'y' { // over 100 chars: the oldest goes
			t.Errorf("dropped %+v", dropped)
		}
		if d.Pending("y") != 1 {
			t.Fatalf("%d pending in y", d.Pending("y"))
		}
		d.Accept("y", m("w"))
		synctest.Wait()
		want := []string{"+0s max-messages  [a|b]", "+0s max-messages  [" + strings.Repeat("z", 60) + "|w]"}
		if diff := cmp.Diff(want, l.list()); diff != "" {
			t.Errorf("(-want +got):\n%s", diff)
		}
		d.Accept("q", m("left behind"))
		d.Stop()
		time.Sleep(2 * time.Hour)
		synctest.Wait()
		if len(l.list()) != 2 {
			t.Error("a stopped digest sends nothing")
		}
	})
}

func TestHistoryTrimTakeAndDrain(t *testing.T) {
	h := NewHistory(3, 10, 0)
	var dropped []int64
	for i, s := range []string{"aaaa", "bbbb", "cc", "dd"} {
		dropped = append(dropped, h.Add("g", m(s).Message, int64(i+1))...)
	}
	// 4 messages > 3: "aaaa" goes; then 4+2+2 = 8 chars fits.
	if diff := cmp.Diff([]int64{1}, dropped); diff != "" {
		t.Errorf("dropped refs: %s", diff)
	}
	got, refs := h.Take("g", []msg.Message{{ID: "dd"}}, time.Now())
	if len(got) != 2 || got[0].Text != "bbbb" || got[1].Text != "cc" {
		t.Errorf("take: %+v", got)
	}
	if diff := cmp.Diff([]int64{2, 3, 4}, refs); diff != "" {
		t.Errorf("everything drained is handed back, the excluded too: %s", diff)
	}
	if again, _ := h.Take("g", nil, time.Now()); h.Len("g") != 0 || len(again) != 0 {
		t.Error("taking drains the buffer")
	}
	if d := h.Add("g", m("0123456789x").Message, 9); h.Len("g") != 0 || len(d) != 1 {
		t.Error("a message larger than maxChars is trimmed away")
	}

	aged := NewHistory(20, 4000, time.Hour)
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	aged.Add("g", msg.Message{ID: "old", Text: "old", Time: now.Add(-2 * time.Hour)}, 0)
	aged.Add("g", msg.Message{ID: "new", Text: "new", Time: now.Add(-time.Minute)}, 0)
	if got, _ := aged.Take("g", nil, now); len(got) != 1 || got[0].ID != "new" {
		t.Errorf("maxAge: %+v", got)
	}
}

// TestDigestReschedule: a chat whose interval changes while its window is
// open is due its new interval after the window's period began (at once
// when that is past), and re-arms on it; a chat whose interval stayed
// keeps its time.
func TestDigestReschedule(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := &flushLog{start: time.Now()}
		d := NewDigest(DigestOptions[int]{Interval: time.Minute, MinMessages: 1, MaxMessages: 50, MaxChars: 20000, Flush: l.flush})
		every := map[string]time.Duration{"shorter": 10 * time.Minute, "past": 10 * time.Minute, "same": 10 * time.Minute}
		for key := range every {
			d.AcceptEvery(key, m(key), every[key])
		}
		time.Sleep(2 * time.Minute)
		every["shorter"], every["past"] = 5*time.Minute, time.Minute
		d.Reschedule(func(key string) time.Duration { return every[key] })
		synctest.Wait() // "past" was due a minute ago: now
		time.Sleep(3 * time.Minute)
		synctest.Wait() // +5m: "shorter"
		d.AcceptEvery("shorter", m("again"), every["shorter"])
		time.Sleep(5 * time.Minute)
		synctest.Wait() // +10m: "same", and "shorter" on its new interval
		want := []string{"+2m0s interval  [past]", "+5m0s interval  [shorter]", "+10m0s interval  [again]", "+10m0s interval  [same]"}
		got := l.list()
		slices.Sort(got[2:])
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("(-want +got):\n%s", diff)
		}
	})
}
