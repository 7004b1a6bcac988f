package feishu

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pincerbot/pincer/internal/channel"
	"github.com/pincerbot/pincer/internal/channel/feishu/feishusim"
	"github.com/pincerbot/pincer/internal/msg"
)

// forwardBase is 09:12 on 2026-10-08 in Shanghai.
var forwardBase = time.Date(2026, 10, 8, 1, 12, 0, 0, time.UTC)

// forwardOf is a merged forward of a text by A and an image by B.
func forwardOf(id, chat string) feishusim.Message {
	return feishusim.Message{
		ID: id, ChatID: chat, MsgType: "merge_forward", SenderID: userA,
		Children: []feishusim.Message{
			{ID: id + "_img", MsgType: "image", SenderID: userB, Content: `{"image_key":"img_1"}`, CreateTime: forwardBase.Add(time.Minute)},
			{ID: id + "_txt", MsgType: "text", SenderID: userA, Content: `{"text":"大家好"}`, CreateTime: forwardBase},
		},
	}
}

// settled waits until the expansion of forward id has ended.
func (r *rig) settled(id string) {
	r.t.Helper()
	r.a.forward.mu.Lock()
	e, ok := r.a.forward.jobs[id]
	r.a.forward.mu.Unlock()
	if !ok {
		r.t.Fatalf("no expansion of %s", id)
	}
	<-e.done
}

func excerptOf(id string) string {
	return "【合并转发,共 2 条】\n" +
		"[2026-10-08 09:12] 张三:大家好\n" +
		"[2026-10-08 09:13] 李四:[图片 msg=" + id + "_img]"
}

// TestDirectForwardEnrich: a merged forward in a direct chat reaches the
// pipeline with its forward id, and Enrich turns it into the excerpt of
// its messages, from the one GET started when it arrived.
func TestDirectForwardEnrich(t *testing.T) {
	r := newRig(t, nil)
	r.run()
	m := r.take(forwardOf("om_fwd_dm", p2pChat))
	if !slices.Equal(m.ForwardIDs, []msg.ForwardID{"om_fwd_dm"}) || m.Peer != (msg.Peer{Kind: msg.Direct, ID: userA}) {
		t.Fatalf("forward ids %v, peer %v", m.ForwardIDs, m.Peer)
	}
	if m.Text != "Merged and Forwarded Message" {
		t.Errorf("before expansion %q, want the platform's fixed text", m.Text)
	}
	got := r.a.Enrich(context.Background(), []msg.Message{m})
	if got[0].Text != excerptOf("om_fwd_dm") || got[0].ForwardIDs != nil {
		t.Errorf("enriched %q, forward ids %v", got[0].Text, got[0].ForwardIDs)
	}
	if len(got[0].Segments) != 1 || got[0].Segments[0].Text != got[0].Text {
		t.Errorf("segments %+v", got[0].Segments)
	}
	if n := r.getCalls("om_fwd_dm"); n != 1 {
		t.Errorf("%d GETs", n)
	}
}

// TestForwardFailure: a forward whose GET fails (230027) keeps its
// placeholder, carries no forward id after Enrich and is logged once,
// with the code; the turn does not ask again right after the failure on
// arrival, a later look does.
func TestForwardFailure(t *testing.T) {
	var offset atomic.Int64
	r := newRig(t, func(o *Options) {
		o.Now = func() time.Time { return time.Now().Add(time.Duration(offset.Load())) }
	})
	r.run()
	r.sim.FailNext(feishusim.PathMessages+"/om_fwd_denied", feishusim.CodeNoPermission)
	m := r.take(forwardOf("om_fwd_denied", groupChat))
	r.settled("om_fwd_denied") // the expansion started on arrival failed
	got := r.a.Enrich(context.Background(), []msg.Message{m})
	if got[0].Text != "Merged and Forwarded Message" || got[0].ForwardIDs != nil {
		t.Errorf("enriched %q, forward ids %v", got[0].Text, got[0].ForwardIDs)
	}
	if n := r.getCalls("om_fwd_denied"); n != 1 {
		t.Errorf("%d GETs, want 1", n)
	}
	warns := r.logs.matching(slog.LevelWarn, "om_fwd_denied")
	if len(warns) != 1 || !strings.Contains(warns[0], "code=230027") {
		t.Errorf("warnings %q", warns)
	}
	offset.Store(int64(2 * time.Minute))
	got = r.a.Enrich(context.Background(), []msg.Message{m})
	if got[0].Text != excerptOf("om_fwd_denied") || r.getCalls("om_fwd_denied") != 2 {
		t.Errorf("later: %q after %d GETs", got[0].Text, r.getCalls("om_fwd_denied"))
	}
}

// TestForwardExpandedOnce: the expansion started on arrival and the
// turns' and quotes' asking at the same time share one GET.
func TestForwardExpandedOnce(t *testing.T) {
	r := newRig(t, nil)
	r.run()
	arrived, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	r.setIntercept(func(_ http.ResponseWriter, req *http.Request) bool {
		if req.Method == http.MethodGet && req.URL.Path == feishusim.PathMessages+"/om_fwd_once" {
			once.Do(func() { close(arrived) })
			<-release
		}
		return false
	})
	m := r.take(forwardOf("om_fwd_once", groupChat))
	<-arrived // the expansion started on arrival is under way
	var wg sync.WaitGroup
	results := make([]string, 6)
	for i := range results {
		wg.Go(func() {
			if i%2 == 0 {
				results[i] = r.a.Enrich(context.Background(), []msg.Message{m})[0].Text
				return
			}
			q, err := r.a.FetchMessage(context.Background(), "om_fwd_once")
			if err != nil {
				t.Error(err)
			}
			results[i] = q.Text
		})
	}
	close(release)
	wg.Wait()
	for i, got := range results {
		if got != excerptOf("om_fwd_once") {
			t.Errorf("asker %d got %q", i, got)
		}
	}
	if n := r.getCalls("om_fwd_once"); n != 1 {
		t.Errorf("%d GETs, want 1", n)
	}
}

// TestFetchMessageForward: a quoted forward reads as its excerpt, from
// one GET when it was never expanded, and from none when it was.
func TestFetchMessageForward(t *testing.T) {
	r := newRig(t, nil)
	r.run()
	_, err := r.sim.AddMessage(forwardOf("om_fwd_quoted", groupChat))
	must(t, err)
	for range 2 {
		q, err := r.a.FetchMessage(context.Background(), "om_fwd_quoted")
		must(t, err)
		if q.Text != excerptOf("om_fwd_quoted") || q.ForwardIDs != nil || q.Sender.ID != userA || q.Sender.Name != "张三" {
			t.Errorf("quote %+v", q)
		}
	}
	if n := r.getCalls("om_fwd_quoted"); n != 1 {
		t.Errorf("%d GETs, want 1", n)
	}
	m := r.take(forwardOf("om_fwd_arrived", groupChat))
	r.a.Enrich(context.Background(), []msg.Message{m})
	q, err := r.a.FetchMessage(context.Background(), "om_fwd_arrived")
	must(t, err)
	if q.Text != excerptOf("om_fwd_arrived") || q.Peer != (msg.Peer{Kind: msg.Group, ID: groupChat}) {
		t.Errorf("quote %+v", q)
	}
	if n := r.getCalls("om_fwd_arrived"); n != 1 {
		t.Errorf("%d GETs, want 1", n)
	}
}

// TestFetchMessagePlain: a quoted message reads from the first item of
// the answer only: a plain message, a child of a forward, and a forward
// when expansion is off.
func TestFetchMessagePlain(t *testing.T) {
	r := newRig(t, func(o *Options) { o.MergeForward.Enabled = false })
	r.run()
	plain, err := r.sim.AddMessage(feishusim.Message{ChatID: groupChat, SenderID: userB, Content: `{"text":"@_user_1 原文"}`,
		Mentions: []feishusim.Mention{{Key: "@_user_1", ID: userA, Name: "张三"}}})
	must(t, err)
	q, err := r.a.FetchMessage(context.Background(), msg.MessageID(plain))
	must(t, err)
	if q.Text != "@张三 原文" || q.Sender.Name != "李四" || !q.Mentioned(userA) {
		t.Errorf("plain %+v", q)
	}
	_, err = r.sim.AddMessage(forwardOf("om_fwd_off", groupChat))
	must(t, err)
	q, err = r.a.FetchMessage(context.Background(), "om_fwd_off_img")
	must(t, err)
	if q.Text != "[图片 msg=om_fwd_off_img]" {
		t.Errorf("child %q", q.Text)
	}
	q, err = r.a.FetchMessage(context.Background(), "om_fwd_off")
	must(t, err)
	if q.Text != "Merged and Forwarded Message" || q.ForwardIDs != nil {
		t.Errorf("forward with expansion off %+v", q)
	}
	if _, err := r.a.FetchMessage(context.Background(), "om_missing"); codeOf(err) != feishusim.CodeDeleted {
		t.Errorf("missing: %v", err)
	}
}

// TestHistory: /summary reads the chat through the list API, page after
// page, newest last, recalled messages left out, forwards carrying their
// ids, the bot's messages as the bot's; and before a given message.
func TestHistory(t *testing.T) {
	r := newRig(t, nil)
	r.run()
	base := time.Now().Add(-time.Hour).Truncate(time.Second)
	var ids []string
	for i := range 60 {
		m := feishusim.Message{ChatID: groupChat, SenderID: userA, Content: `{"text":"第` + string(rune('0'+i%10)) + `条"}`, CreateTime: base.Add(time.Duration(i) * time.Second)}
		switch {
		case i == 30:
			m = forwardOf("om_hist_fwd", groupChat)
			m.CreateTime = base.Add(time.Duration(i) * time.Second)
		case i == 45:
			m.SenderID = feishusim.DefaultAppID
		case i%2 == 1:
			m.SenderID = userB
		}
		id, err := r.sim.AddMessage(m)
		must(t, err)
		ids = append(ids, id)
	}
	must(t, r.sim.Recall(ids[10]))
	must(t, r.sim.Recall(ids[20]))
	hist, err := r.a.History(context.Background(), msg.Peer{Kind: msg.Group, ID: groupChat}, channel.HistoryQuery{Count: 55})
	must(t, err)
	if len(hist) != 55 || hist[54].ID != msg.MessageID(ids[59]) || hist[0].ID != msg.MessageID(ids[3]) {
		t.Fatalf("%d messages, %s … %s", len(hist), hist[0].ID, hist[len(hist)-1].ID)
	}
	for i := 1; i < len(hist); i++ {
		if !hist[i].Time.After(hist[i-1].Time) {
			t.Errorf("message %d is not newer than %d", i, i-1)
		}
	}
	for _, m := range hist {
		switch m.ID {
		case msg.MessageID(ids[10]), msg.MessageID(ids[20]):
			t.Errorf("recalled %s listed", m.ID)
		case "om_hist_fwd":
			if !slices.Equal(m.ForwardIDs, []msg.ForwardID{"om_hist_fwd"}) {
				t.Errorf("forward %+v", m)
			}
		case msg.MessageID(ids[45]):
			if m.Sender.ID != botID || m.Sender.Name != botName || !m.Sender.IsBot {
				t.Errorf("the bot's message %+v", m.Sender)
			}
		case msg.MessageID(ids[59]):
			if m.Sender.Name != "李四" {
				t.Errorf("sender %+v", m.Sender)
			}
		}
	}
	if n := len(r.sim.Calls(feishusim.PathMessages)); n < 2 {
		t.Errorf("%d list calls: no paging", n)
	}
	before, err := r.a.History(context.Background(), msg.Peer{Kind: msg.Group, ID: groupChat}, channel.HistoryQuery{Count: 5, Before: msg.MessageID(ids[40])})
	must(t, err)
	var got []msg.MessageID
	for _, m := range before {
		got = append(got, m.ID)
	}
	want := []msg.MessageID{msg.MessageID(ids[35]), msg.MessageID(ids[36]), msg.MessageID(ids[37]), msg.MessageID(ids[38]), msg.MessageID(ids[39])}
	if !slices.Equal(got, want) {
		t.Errorf("before %s: %v, want %v", ids[40], got, want)
	}
}

// TestHistoryDirect: a direct chat is read once a message showed its chat
// id; before that the caller falls back to its own log.
func TestHistoryDirect(t *testing.T) {
	r := newRig(t, nil)
	r.run()
	peer := msg.Peer{Kind: msg.Direct, ID: userA}
	if _, err := r.a.History(context.Background(), peer, channel.HistoryQuery{Count: 5}); !errors.Is(err, channel.ErrHistoryUnsupported) {
		t.Fatalf("unknown direct chat: %v", err)
	}
	r.take(feishusim.Message{ChatID: p2pChat, Content: `{"text":"你好"}`})
	hist, err := r.a.History(context.Background(), peer, channel.HistoryQuery{Count: 5})
	must(t, err)
	if len(hist) != 1 || hist[0].Text != "你好" || hist[0].Peer != peer {
		t.Errorf("history %+v", hist)
	}
}

// TestTyping: Typing(true) twice adds one reaction, Typing(false)
// removes it even when the turn's context has ended; with the option off
// nothing is added.
func TestTyping(t *testing.T) {
	r := newRig(t, nil)
	id, err := r.sim.AddMessage(feishusim.Message{ChatID: groupChat, SenderID: userA, Content: `{"text":"在忙吗"}`})
	must(t, err)
	typer := r.a.ReplierFor(msg.Message{ID: msg.MessageID(id), Peer: group}).(channel.Typer)
	must(t, typer.Typing(context.Background(), true))
	must(t, typer.Typing(context.Background(), true))
	if rs := r.sim.Reactions(); len(rs) != 1 || rs[0].EmojiType != "Typing" || rs[0].MessageID != id || rs[0].Removed {
		t.Fatalf("reactions %+v", rs)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	must(t, typer.Typing(ctx, false))
	if rs := r.sim.Reactions(); len(rs) != 1 || !rs[0].Removed {
		t.Errorf("reactions %+v", rs)
	}
	off := newRig(t, func(o *Options) { o.TypingReaction = false })
	id, err = off.sim.AddMessage(feishusim.Message{ChatID: groupChat, SenderID: userA, Content: `{"text":"x"}`})
	must(t, err)
	must(t, off.a.ReplierFor(msg.Message{ID: msg.MessageID(id), Peer: group}).(channel.Typer).Typing(context.Background(), true))
	if rs := off.sim.Reactions(); len(rs) != 0 {
		t.Errorf("reactions with the option off: %+v", rs)
	}
}

// TestLongConnectionDispatcher: events from the long connection are
// decoded and taken like the webhook's, other subscribed types are taken
// and dropped, and after Run nothing is taken (the platform redelivers).
func TestLongConnectionDispatcher(t *testing.T) {
	r := newRig(t, nil)
	r.run()
	// The event as the platform would push it, in plaintext.
	d := r.post(feishusim.Message{ID: "om_ws", ChatID: groupChat, SenderID: userA, Content: `{"text":"长连接"}`}, feishusim.EventOptions{Plaintext: true})
	if d.Status == http.StatusOK || r.taker.count() != 0 {
		t.Fatalf("a plaintext push to an encrypted webhook was taken (%d)", d.Status)
	}
	var stopped atomic.Bool
	disp := r.a.dispatcher(&stopped)
	if _, err := disp.Do(context.Background(), d.Payload); err != nil {
		t.Fatal(err)
	}
	if got := r.taker.all(); len(got) != 1 || got[0].m.Text != "长连接" {
		t.Fatalf("taken %+v", got)
	}
	read := []byte(`{"schema":"2.0","header":{"event_id":"e-read","event_type":"im.message.message_read_v1","create_time":"1"},"event":{}}`)
	if _, err := disp.Do(context.Background(), read); err != nil {
		t.Errorf("a read receipt: %v", err)
	}
	stopped.Store(true)
	d = r.post(feishusim.Message{ID: "om_ws2", ChatID: groupChat, SenderID: userA, Content: `{"text":"停了"}`}, feishusim.EventOptions{Plaintext: true})
	if _, err := disp.Do(context.Background(), d.Payload); err == nil || r.taker.count() != 1 {
		t.Errorf("taken after Run ended: %v", err)
	}
}
