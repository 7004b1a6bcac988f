package onebot

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/pincerbot/pincer/internal/msg"
)

// memSent is an in-memory store.SentLog.
type memSent struct {
	mu  sync.Mutex
	ids map[string]time.Time
}

func (m *memSent) key(ch msg.ChannelID, acct msg.AccountID, id msg.MessageID) string {
	return string(ch) + "/" + string(acct) + "/" + string(id)
}

func (m *memSent) RecordSent(_ context.Context, ch msg.ChannelID, acct msg.AccountID, ids ...msg.MessageID) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.ids == nil {
		m.ids = map[string]time.Time{}
	}
	for _, id := range ids {
		m.ids[m.key(ch, acct, id)] = time.Now()
	}
	return nil
}

func (m *memSent) WasSent(_ context.Context, ch msg.ChannelID, acct msg.AccountID, id msg.MessageID) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	_, ok := m.ids[m.key(ch, acct, id)]
	return ok, nil
}

func (m *memSent) PruneSent(_ context.Context, before time.Time) (int64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var n int64
	for k, at := range m.ids {
		if at.Before(before) {
			delete(m.ids, k)
			n++
		}
	}
	return n, nil
}

func (m *memSent) has(acct msg.AccountID, id msg.MessageID) bool {
	ok, _ := m.WasSent(context.Background(), ChannelID, acct, id)
	return ok
}

// TestSentByBotSurvivesARestart: every chunk's id goes to the store, and a
// new account on the same store (the process restarted) knows them
// without asking the implementation.
func TestSentByBotSurvivesARestart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := &memSent{}
		next := int64(100)
		h := func(action string, _ json.RawMessage) (any, int, string) {
			switch action {
			case "send_group_msg":
				next++
				return map[string]any{"message_id": next}, 0, ""
			case "get_msg":
				return nil, 100, "message not found"
			}
			return nil, 0, ""
		}
		o := AccountOptions{WSURL: "ws://onebot.test/", SelfID: 3300000001, ChunkLimit: 10, Sent: st}
		r := newRig(t, o, h)
		if err := r.peer.Connected(context.Background()); err != nil {
			t.Fatal(err)
		}
		group := msg.Peer{Kind: msg.Group, ID: "700000001"}
		if _, err := r.acct.Send(context.Background(), msg.Outbound{Peer: group, Text: "第一行文字\n第二行 @张三 好\n第三"}); err != nil {
			t.Fatal(err)
		}
		if next != 103 {
			t.Fatalf("%d chunks, want 3", next-100)
		}
		for _, id := range []msg.MessageID{"101", "102", "103"} {
			if !st.has("default", id) {
				t.Errorf("chunk %s is not in the store", id)
			}
		}
		r.close()

		r = newRig(t, o, h)
		defer r.close()
		if err := r.peer.Connected(context.Background()); err != nil {
			t.Fatal(err)
		}
		for _, id := range []msg.MessageID{"101", "102", "103"} {
			if !r.acct.SentByBot(context.Background(), id) {
				t.Errorf("%s: sent before the restart", id)
			}
		}
		if r.acct.SentByBot(context.Background(), "104") {
			t.Error("104 was never sent")
		}
		if calls := r.calls("get_msg"); len(calls) != 1 {
			t.Errorf("get_msg is asked only about the unknown id: %d calls", len(calls))
		}
		other := NewAccount(AccountOptions{ID: "work", SelfID: 3300000001, Sent: st})
		if other.SentByBot(context.Background(), "101") {
			t.Error("another account's sends are not this one's")
		}
	})
}

// TestSentByBotAsksGetMsg: an id known to neither memory nor store is the
// bot's when get_msg says its sender is the bot. Answers, both ways, are
// remembered for a while; a failure means "not the bot".
func TestSentByBotAsksGetMsg(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := func(action string, params json.RawMessage) (any, int, string) {
			if action != "get_msg" {
				return nil, 0, ""
			}
			switch {
			case strings.Contains(string(params), `"message_id":-7`): // the bot's, NapCat shape
				return map[string]any{"message_id": -7, "user_id": 3300000001, "sender": map[string]any{"user_id": 3300000001, "nickname": "bot"}, "message": "hi"}, 0, ""
			case strings.Contains(string(params), `"message_id":8`): // someone else's
				return map[string]any{"message_id": 8, "sender": map[string]any{"user_id": 10002}, "message": "hi"}, 0, ""
			case strings.Contains(string(params), `"message_id":11`): // Lagrange: sender only, as a string
				return map[string]any{"message_id": 11, "sender": map[string]any{"user_id": "3300000001"}, "message": "hi"}, 0, ""
			}
			return nil, 100, "message not found"
		}
		r := newRig(t, AccountOptions{WSURL: "ws://onebot.test/", SelfID: 3300000001, Sent: &memSent{}}, h)
		defer r.close()
		if err := r.peer.Connected(context.Background()); err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		for id, want := range map[msg.MessageID]bool{"-7": true, "8": false, "9": false, "11": true, "x": false} {
			if got := r.acct.SentByBot(ctx, id); got != want {
				t.Errorf("%s: %v, want %v", id, got, want)
			}
		}
		asked := len(r.calls("get_msg"))
		if asked != 4 {
			t.Errorf("%d get_msg calls, want 4 (a non-numeric id is not asked about)", asked)
		}
		for id, want := range map[msg.MessageID]bool{"-7": true, "8": false, "9": false} {
			if got := r.acct.SentByBot(ctx, id); got != want {
				t.Errorf("again %s: %v, want %v", id, got, want)
			}
		}
		if n := len(r.calls("get_msg")); n != asked {
			t.Errorf("answers are remembered: %d more calls", n-asked)
		}
		time.Sleep(ownerTTL)
		r.acct.SentByBot(ctx, "8")
		if n := len(r.calls("get_msg")); n != asked+1 {
			t.Errorf("an answer is forgotten after %v: %d more calls", ownerTTL, n-asked)
		}
	})
}

// TestSentByBotGetMsgTimesOut: an implementation that never answers holds
// the message up for ownerTimeout at most, and the id is asked about
// again next time.
func TestSentByBotGetMsgTimesOut(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t, AccountOptions{WSURL: "ws://onebot.test/", SelfID: 3300000001, ownerTimeout: 2 * time.Second, RequestTimeout: time.Minute}, nil)
		defer r.close()
		if err := r.peer.Connected(context.Background()); err != nil {
			t.Fatal(err)
		}
		r.peer.Silence("get_msg")
		start := time.Now()
		if r.acct.SentByBot(context.Background(), "12") {
			t.Error("no answer is not the bot")
		}
		if d := time.Since(start); d != 2*time.Second {
			t.Errorf("waited %v, want the owner timeout", d)
		}
		r.acct.SentByBot(context.Background(), "12")
		if n := len(r.calls("get_msg")); n != 2 {
			t.Errorf("%d calls; a timeout is not an answer to remember", n)
		}
	})
}

// TestSentIDsArePruned: ids older than SentRetention leave the store, at
// the next send an hour or more after the last pruning.
func TestSentIDsArePruned(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := &memSent{}
		next := int64(0)
		r := newRig(t, AccountOptions{WSURL: "ws://onebot.test/", SelfID: 3300000001, Sent: st}, func(action string, _ json.RawMessage) (any, int, string) {
			if action == "send_group_msg" {
				next++
				return map[string]any{"message_id": next}, 0, ""
			}
			return nil, 0, ""
		})
		defer r.close()
		if err := r.peer.Connected(context.Background()); err != nil {
			t.Fatal(err)
		}
		group := msg.Peer{Kind: msg.Group, ID: "700000001"}
		send := func() {
			if _, err := r.acct.Send(context.Background(), msg.Outbound{Peer: group, Text: "hi"}); err != nil {
				t.Fatal(err)
			}
		}
		send() // 1
		time.Sleep(SentRetention)
		send() // 2: prunes nothing older than a week yet (1 is exactly a week old)
		time.Sleep(time.Hour)
		send() // 3: prunes 1
		if st.has("default", "1") || !st.has("default", "2") || !st.has("default", "3") {
			t.Errorf("store after a week and an hour: %v", st.ids)
		}
	})
}
