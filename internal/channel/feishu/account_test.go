package feishu

import (
	"context"
	"errors"
	"fmt"
	"github.com/pincerbot/pincer/internal/lanes"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"github.com/pincerbot/pincer/internal/channel/feishu/feishusim"
	"github.com/pincerbot/pincer/internal/msg"
)

// TestDedupEventAndMessage: the same event twice, and the same message
// under a new event id, are taken once.
func TestDedupEventAndMessage(t *testing.T) {
	r := newRig(t, nil)
	r.run()
	d := r.postOK(feishusim.Message{ID: "om_dedup1", ChatID: groupChat, SenderID: userA, Content: `{"text":"一次"}`})
	if d := r.post("om_dedup1", feishusim.EventOptions{EventID: d.EventID}); d.Status != http.StatusOK {
		t.Fatalf("redelivery answered %d", d.Status)
	}
	if d := r.post("om_dedup1", feishusim.EventOptions{}); d.Status != http.StatusOK {
		t.Fatalf("new event answered %d", d.Status)
	}
	if n := r.taker.count(); n != 1 {
		t.Errorf("%d taken, want 1", n)
	}
}

// TestDedupContentKey: a redelivery under a fresh message_id (same
// sender, chat, creation time and content) is taken once; a message that
// differs in its content or its time is another message.
func TestDedupContentKey(t *testing.T) {
	r := newRig(t, nil)
	r.run()
	at := time.Now().Truncate(time.Millisecond)
	m := feishusim.Message{ID: "om_ck1", ChatID: groupChat, SenderID: userA, Content: `{"text":"同一句"}`, CreateTime: at}
	r.postOK(m)
	m.ID = "om_ck2"
	r.postOK(m)
	if n := r.taker.count(); n != 1 {
		t.Fatalf("%d taken, want 1", n)
	}
	m.ID, m.Content = "om_ck3", `{"text":"另一句"}`
	r.postOK(m)
	m.ID, m.CreateTime = "om_ck4", at.Add(time.Millisecond)
	r.postOK(m)
	if n := r.taker.count(); n != 3 {
		t.Errorf("%d taken, want 3", n)
	}
}

// TestDedupSurvivesRestart: with the store, a redelivery to a new
// account (pincer restarted) is still recognized, by event id and by
// message id.
func TestDedupSurvivesRestart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "p.db")
	st := openStore(t, path)
	r := newRig(t, func(o *Options) { o.Dedup = st })
	r.run()
	d := r.postOK(feishusim.Message{ID: "om_restart", ChatID: groupChat, SenderID: userA, Content: `{"text":"重启前"}`})

	// Each account behind a webhook of its own, sharing the store or not.
	restart := func(withStore bool) *taker {
		o := r.options(r.api.URL)
		if withStore {
			o.Dedup = st
		}
		a := New(o)
		tk := newTaker()
		runAccount(t, a, tk)
		h, err := a.WebhookHandler()
		must(t, err)
		srv := httptest.NewServer(h)
		t.Cleanup(srv.Close)
		for _, opts := range []feishusim.EventOptions{{EventID: d.EventID}, {}} {
			got, err := r.sim.PostEvent(context.Background(), srv.URL, "om_restart", opts)
			must(t, err)
			if got.Status != http.StatusOK {
				t.Fatalf("redelivery answered %d", got.Status)
			}
		}
		return tk
	}
	if n := restart(true).count(); n != 0 {
		t.Errorf("the restarted account took %d redeliveries", n)
	}
	// Without the store a new account takes it: the test sees the store
	// at work, not the first account's memory.
	if n := restart(false).count(); n != 1 {
		t.Errorf("an account without the store took %d, want 1", n)
	}
}

// TestPeerFilter: allow and deny lists of chats, users and *, deny
// winning, and a denied message never reaching the pipeline.
func TestPeerFilter(t *testing.T) {
	group := msg.Peer{Kind: msg.Group, ID: groupChat}
	direct := msg.Peer{Kind: msg.Direct, ID: userA}
	cases := []struct {
		allow, deny []string
		chat        string
		peer        msg.Peer
		sender      msg.UserID
		want        bool
	}{
		{nil, nil, groupChat, group, userA, true},
		{[]string{"chat:" + groupChat}, nil, groupChat, group, userA, true},
		{[]string{"chat:oc_else"}, nil, groupChat, group, userA, false},
		{[]string{"user:" + userA}, nil, groupChat, group, userA, true},
		{[]string{"user:" + userA}, nil, groupChat, group, userB, false},
		{[]string{"*"}, []string{"user:" + userB}, groupChat, group, userB, false},
		{[]string{"chat:" + groupChat}, []string{"chat:" + groupChat}, groupChat, group, userA, false},
		{nil, []string{"*"}, p2pChat, direct, userA, false},
		{[]string{"chat:" + p2pChat}, nil, p2pChat, direct, userA, true},
		{[]string{"CHAT:" + groupChat}, nil, groupChat, group, userA, true},
	}
	for i, c := range cases {
		f, err := NewPeerFilter(c.allow, c.deny)
		if err != nil {
			t.Fatal(err)
		}
		if got := f.Allows(c.chat, c.peer, c.sender); got != c.want {
			t.Errorf("case %d: allow %v deny %v: %v, want %v", i, c.allow, c.deny, got, c.want)
		}
	}
	for _, bad := range []string{"group:1", "chat:", "ou_x", ""} {
		if _, err := NewPeerFilter([]string{bad}, nil); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	f, err := NewPeerFilter([]string{"*"}, []string{"user:" + userB})
	must(t, err)
	r := newRig(t, func(o *Options) { o.Filter = f })
	r.run()
	r.postOK(feishusim.Message{ChatID: groupChat, SenderID: userB, Content: `{"text":"被拒"}`})
	r.postOK(feishusim.Message{ChatID: groupChat, SenderID: userA, Content: `{"text":"可以"}`})
	if got := r.taker.all(); len(got) != 1 || got[0].m.Sender.ID != userA {
		t.Errorf("taken %+v", got)
	}
}

// TestWebhookRejects: a bad signature, a missing one and a wrong
// Verification Token are answered 401 and not taken, and a stream of bad
// signatures is logged once.
func TestWebhookRejects(t *testing.T) {
	r := newRig(t, nil)
	r.run()
	ev := feishusim.Message{ID: "om_forged", ChatID: groupChat, SenderID: userA, Content: `{"text":"伪造"}`}
	if d := r.post(ev, feishusim.EventOptions{Signature: "00" + feishusim.Signature("1", "2", "3", nil)[2:]}); d.Status != http.StatusUnauthorized {
		t.Errorf("bad signature: %d", d.Status)
	}
	for range 3 {
		if d := r.post("om_forged", feishusim.EventOptions{Signature: "deadbeef"}); d.Status != http.StatusUnauthorized {
			t.Errorf("bad signature: %d", d.Status)
		}
	}
	if d := r.post("om_forged", feishusim.EventOptions{Unsigned: true}); d.Status != http.StatusUnauthorized {
		t.Errorf("unsigned: %d", d.Status)
	}
	if d := r.post("om_forged", feishusim.EventOptions{Token: "wrong-token"}); d.Status != http.StatusUnauthorized {
		t.Errorf("wrong token: %d", d.Status)
	}
	if n := r.taker.count(); n != 0 {
		t.Errorf("%d forged events taken", n)
	}
	if lines := r.logs.matching(slog.LevelWarn, "request rejected", "bad signature"); len(lines) != 1 {
		t.Errorf("bad signatures logged %d times: %q", len(lines), lines)
	}
	// The genuine event still gets in.
	if d := r.post("om_forged", feishusim.EventOptions{}); d.Status != http.StatusOK || r.taker.count() != 1 {
		t.Errorf("genuine event: %d, %d taken", d.Status, r.taker.count())
	}
	// The URL verification challenge is answered.
	d := r.post(feishusim.URLVerification{Challenge: "ajls384kdjx98XX"}, feishusim.EventOptions{})
	if d.Status != http.StatusOK || string(d.Response) != `{"challenge":"ajls384kdjx98XX"}` {
		t.Errorf("challenge: %d %s", d.Status, d.Response)
	}
}

// TestWebhookBeforeRun: before Run knows the bot, an event is answered
// 503 (the platform pushes it again) and not taken; pushed again once it
// runs, it is taken.
func TestWebhookBeforeRun(t *testing.T) {
	r := newRig(t, nil)
	d := r.post(feishusim.Message{ID: "om_early", ChatID: groupChat, SenderID: userA, Content: `{"text":"早到"}`}, feishusim.EventOptions{})
	if d.Status != http.StatusServiceUnavailable {
		t.Fatalf("before Run: %d", d.Status)
	}
	r.run()
	if d := r.post("om_early", feishusim.EventOptions{EventID: d.EventID}); d.Status != http.StatusOK {
		t.Fatalf("after Run: %d", d.Status)
	}
	if got := r.taker.all(); len(got) != 1 || got[0].m.ID != "om_early" {
		t.Errorf("taken %+v", got)
	}
}

// TestSeenKeys: keys are remembered for the ttl and no longer, and at
// most max of them.
func TestSeenKeys(t *testing.T) {
	s := newSeenKeys(time.Hour, 4)
	t0 := time.Unix(1760000000, 0)
	if !s.claim([]string{"a", "b"}, t0) || s.claim([]string{"c", "a"}, t0) {
		t.Fatal("a claimed key claimed again")
	}
	if !s.claim([]string{"a"}, t0.Add(time.Hour+time.Second)) {
		t.Error("an expired key is still remembered")
	}
	for i := range 100 {
		s.claim([]string{fmt.Sprint("k", i)}, t0.Add(2*time.Hour))
	}
	if len(s.keys) > 4 || len(s.queue)-s.head > 5 {
		t.Errorf("%d keys, %d queued: unbounded", len(s.keys), len(s.queue)-s.head)
	}
	if s.claim([]string{"k99"}, t0.Add(2*time.Hour)) {
		t.Error("the newest key was forgotten")
	}
}

// failingDedup is a store whose claims fail.
type failingDedup struct{}

func (failingDedup) ClaimDedup(context.Context, string, time.Duration) (bool, error) {
	return false, errors.New("disk I/O error")
}
func (failingDedup) PruneDedup(context.Context) (int64, error)  { return 0, nil }
func (failingDedup) ReleaseDedup(context.Context, string) error { return nil }

// TestDedupStoreFailing: when the store fails, messages are still taken
// (deduplicated in memory) and the failure is logged once, not per key or
// message.
func TestDedupStoreFailing(t *testing.T) {
	r := newRig(t, func(o *Options) { o.Dedup = failingDedup{} })
	r.run()
	for i := range 3 {
		r.postOK(feishusim.Message{ChatID: groupChat, SenderID: userA, Content: fmt.Sprintf(`{"text":"第%d条"}`, i)})
	}
	if n := r.taker.count(); n != 3 {
		t.Errorf("%d taken, want 3", n)
	}
	if lines := r.logs.matching(slog.LevelWarn, "dedup"); len(lines) != 1 {
		t.Errorf("logged %d times: %q", len(lines), lines)
	}
}

// TestSaturatedWebhookAsksForRedelivery: with the ingest lanes full, an
// event waits its moment, is answered 503 and is not taken; its claims
// are given back (in memory and in the store), so the platform's retry,
// once there is room, is taken in once.
func TestSaturatedWebhookAsksForRedelivery(t *testing.T) {
	st := openStore(t, filepath.Join(t.TempDir(), "busy.db"))
	r := newRig(t, func(o *Options) { o.Dedup = st })
	l := lanes.New(lanes.Options{Workers: 1, Capacity: 1})
	t.Cleanup(l.Close)
	runAccount(t, r.a, lanes.Sink{Lanes: l, Next: r.taker})
	release := make(chan struct{})
	must(t, l.Submit(context.Background(), "busy", func() { <-release }))
	d := r.post(feishusim.Message{ID: "om_busy", ChatID: groupChat, SenderID: userA, Content: `{"text":"挤不进来"}`}, feishusim.EventOptions{})
	if d.Status != http.StatusServiceUnavailable {
		t.Fatalf("saturated: answered %d", d.Status)
	}
	if n := r.taker.count(); n != 0 {
		t.Fatalf("%d taken while saturated", n)
	}
	close(release)
	if d := r.post("om_busy", feishusim.EventOptions{EventID: d.EventID}); d.Status != http.StatusOK {
		t.Fatalf("the retry answered %d", d.Status)
	}
	if d := r.post("om_busy", feishusim.EventOptions{EventID: d.EventID}); d.Status != http.StatusOK {
		t.Fatalf("a second retry answered %d", d.Status)
	}
	// The chat's lane runs in order: once a marker queued behind the
	// retries has run, what the retries handed in has been taken.
	marker := make(chan struct{})
	must(t, l.Submit(context.Background(), lanes.Key(msg.Message{Channel: ChannelID, Account: msg.DefaultAccount, Peer: msg.Peer{Kind: msg.Group, ID: groupChat}}), func() { close(marker) }))
	<-marker
	if got := r.taker.all(); len(got) != 1 || got[0].m.ID != "om_busy" {
		t.Errorf("taken %+v, want om_busy once", got)
	}
}
