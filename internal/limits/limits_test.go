package limits

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/pincerbot/pincer/internal/msg"
	"github.com/pincerbot/pincer/internal/store"
)

// memTokens is a store.TokenUse in memory.
type memTokens struct {
	mu     sync.Mutex
	counts map[string]int64 // by day + " " + key
	adds   int
}

func (s *memTokens) AddTokens(_ context.Context, day string, n int64, keys ...string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.counts == nil {
		s.counts = map[string]int64{}
	}
	s.adds++
	for _, k := range keys {
		s.counts[day+" "+k] += n
	}
	return nil
}

func (s *memTokens) TokensUsed(_ context.Context, day string, keys ...string) (map[string]int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]int64{}
	for _, k := range keys {
		if n, ok := s.counts[day+" "+k]; ok {
			out[k] = n
		}
	}
	return out, nil
}

func (s *memTokens) TopTokenUse(context.Context, string, string, int) ([]store.TokenCount, error) {
	return nil, nil
}

func (s *memTokens) PruneTokenUse(_ context.Context, before string) (int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var n int64
	for k := range s.counts {
		if k[:len(time.DateOnly)] < before {
			delete(s.counts, k)
			n++
		}
	}
	return n, nil
}

func from(user string, kind msg.PeerKind, peer string) msg.Message {
	return msg.Message{Channel: "onebot", Account: "default", Peer: msg.Peer{Kind: kind, ID: peer}, Sender: msg.Sender{ID: msg.UserID(user)}}
}

func static(s Settings) func(msg.Message) Settings { return func(msg.Message) Settings { return s } }

func admit(t *testing.T, l *Limiter, m msg.Message) Verdict {
	t.Helper()
	v, err := l.Admit(context.Background(), m)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestMessagesPerMinuteWindow: a person's third turn within a minute of
// their first is held until the minute is over, named by its setting,
// with a notice for the first turn held only; after the minute, turns run
// again and a new window starts.
func TestMessagesPerMinuteWindow(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := New(Options{Settings: static(Settings{PerUser: Limit{MessagesPerMinute: 2}})})
		m := from("10001", msg.Direct, "10001")
		start := time.Now()
		for i := range 2 {
			if v := admit(t, l, m); v.Held() {
				t.Fatalf("turn %d held: %+v", i+1, v)
			}
			time.Sleep(10 * time.Second)
		}
		v := admit(t, l, m)
		if !v.Held() || v.Setting() != "limits.perUser.messagesPerMinute" || v.Limit != 2 || !v.Resets.Equal(start.Add(time.Minute)) || !v.Notify {
			t.Fatalf("third turn: %+v", v)
		}
		if d := v.Detail(time.UTC); !strings.Contains(d, "limits.perUser.messagesPerMinute = 2 reached") || !strings.Contains(d, "resets at 2000-01-01 00:01:00 UTC") {
			t.Errorf("detail %q", d)
		}
		if v := admit(t, l, m); !v.Held() || v.Notify {
			t.Errorf("fourth turn, same window: %+v, want held without a notice", v)
		}
		// Someone else is not held.
		if v := admit(t, l, from("10002", msg.Direct, "10002")); v.Held() {
			t.Errorf("another person held: %+v", v)
		}
		time.Sleep(time.Until(start.Add(time.Minute)) - time.Nanosecond)
		if v := admit(t, l, m); !v.Held() {
			t.Errorf("a moment before the reset: %+v, want held", v)
		}
		time.Sleep(time.Nanosecond)
		for i := range 2 {
			if v := admit(t, l, m); v.Held() {
				t.Fatalf("turn %d of the next window held: %+v", i+1, v)
			}
		}
		if v := admit(t, l, m); !v.Held() || !v.Notify || !v.Resets.Equal(start.Add(2*time.Minute)) {
			t.Errorf("third turn of the next window: %+v, want held with a notice", v)
		}
	})
}

// TestPerChatCountsEveryone: a chat's cap counts the turns of everyone in
// it; a digest (a turn nobody sent) starts no turn of the chat.
func TestPerChatCountsEveryone(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := New(Options{Settings: static(Settings{PerChat: Limit{MessagesPerMinute: 2}})})
		digest := msg.Message{Channel: "onebot", Account: "default", Peer: msg.Peer{Kind: msg.Group, ID: "1"}}
		for range 3 {
			if v := admit(t, l, digest); v.Held() {
				t.Fatalf("digest held: %+v", v)
			}
		}
		admit(t, l, from("a", msg.Group, "1"))
		admit(t, l, from("b", msg.Group, "1"))
		v := admit(t, l, from("c", msg.Group, "1"))
		if !v.Held() || v.Setting() != "limits.perChat.messagesPerMinute" {
			t.Errorf("third turn in the group: %+v", v)
		}
		if v := admit(t, l, from("c", msg.Group, "2")); v.Held() {
			t.Errorf("another group held: %+v", v)
		}
	})
}

// TestIdleWindowsAreForgotten: the windows of keys that went quiet are
// dropped, so the map holds only the recent ones.
func TestIdleWindowsAreForgotten(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := New(Options{Settings: static(Settings{PerUser: Limit{MessagesPerMinute: 5}, PerChat: Limit{MessagesPerMinute: 5}})})
		for i := range 1000 {
			admit(t, l, from(fmt.Sprint(i), msg.Direct, fmt.Sprint(i)))
		}
		if n := len(l.windows); n != 2000 {
			t.Fatalf("%d windows, want 2000", n)
		}
		time.Sleep(2 * time.Minute)
		admit(t, l, from("x", msg.Direct, "x"))
		if n := len(l.windows); n != 2 {
			t.Errorf("%d windows after two quiet minutes, want 2", n)
		}
	})
}

// TestTokensPerDay: the turn after a person's budget is spent is held
// until midnight in the limiter's timezone, with one notice; the next day
// starts from zero. The counts go to the store, once per turn for the
// person and the chat, and a budget spent before a restart holds after it.
func TestTokensPerDay(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cst := time.FixedZone("CST", 8*3600)
		st := &memTokens{}
		opts := Options{Settings: static(Settings{PerUser: Limit{TokensPerDay: 100}}), Store: st, Location: cst}
		l := New(opts)
		m := from("10001", msg.Direct, "10001")
		ctx := context.Background()
		if v := admit(t, l, m); v.Held() {
			t.Fatalf("first turn held: %+v", v)
		}
		l.Spend(ctx, m, 60)
		if v := admit(t, l, m); v.Held() {
			t.Fatalf("turn after 60 of 100 held: %+v", v)
		}
		l.Spend(ctx, m, 50)
		v := admit(t, l, m)
		// The bubble starts at midnight UTC, 08:00 in UTC+8: the day ends
		// 16 hours later.
		midnight := time.Date(2000, 1, 2, 0, 0, 0, 0, cst)
		if !v.Held() || v.Setting() != "limits.perUser.tokensPerDay" || v.Used != 110 || !v.Resets.Equal(midnight) || !v.Notify {
			t.Fatalf("turn after the budget: %+v", v)
		}
		if d := v.Detail(cst); !strings.Contains(d, "110 tokens used today") || !strings.Contains(d, "resets at 2000-01-02 00:00:00 CST") {
			t.Errorf("detail %q", d)
		}
		if v := admit(t, l, m); !v.Held() || v.Notify {
			t.Errorf("again the same day: %+v, want held without a notice", v)
		}
		if st.adds != 2 || st.counts["2000-01-01 user:onebot:10001"] != 110 || st.counts["2000-01-01 chat:onebot:default:direct:10001"] != 110 {
			t.Errorf("store: %d adds, %v", st.adds, st.counts)
		}
		u, err := l.Today(ctx, m)
		if err != nil || u.User != 110 || u.Chat != 110 || u.UserBudget != 100 || u.Day != "2000-01-01" {
			t.Errorf("today: %+v %v", u, err)
		}
		// After a restart, the store's count holds.
		if v := admit(t, New(opts), m); !v.Held() || v.Used != 110 {
			t.Errorf("after a restart: %+v", v)
		}
		time.Sleep(time.Until(midnight))
		if v := admit(t, l, m); v.Held() {
			t.Errorf("the next day: %+v", v)
		}
	})
}

// TestNoLimitsCountOnly: without caps nothing is held, and tokens are
// still counted for /status and the dashboard; a nil limiter does
// nothing.
func TestNoLimitsCountOnly(t *testing.T) {
	st := &memTokens{}
	l := New(Options{Store: st})
	m := from("a", msg.Group, "g")
	if v := admit(t, l, m); v.Held() {
		t.Errorf("held without caps: %+v", v)
	}
	l.Spend(context.Background(), m, 7)
	if u, err := l.Today(context.Background(), m); err != nil || u.User != 7 || u.Chat != 7 {
		t.Errorf("today: %+v %v", u, err)
	}
	var none *Limiter
	if v := admit(t, none, m); v.Held() {
		t.Error("nil limiter held a turn")
	}
	none.Spend(context.Background(), m, 1)
}

// TestPruneKeepsAMonth: Prune drops the counts of the days before the
// last KeepDays, days in the limiter's timezone.
func TestPruneKeepsAMonth(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := &memTokens{}
		ctx := context.Background()
		for _, day := range []string{"1999-12-01", "1999-12-02", "2000-01-01"} {
			_ = st.AddTokens(ctx, day, 1, "chat:x")
		}
		// 2000-01-01 in UTC+8; 31 days from 1999-12-02 on.
		l := New(Options{Store: st, Location: time.FixedZone("CST", 8*3600)})
		if n, err := l.Prune(ctx); err != nil || n != 1 {
			t.Errorf("pruned %d, %v; want 1", n, err)
		}
		if _, ok := st.counts["1999-12-02 chat:x"]; !ok {
			t.Errorf("the 31st day back was pruned: %v", st.counts)
		}
	})
}
