package onebot

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/pincerbot/pincer/internal/channel/onebot/onebottest"
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

// ask asks a whether id is the bot's and waits for the answer, which
// comes later, on another goroutine.
func ask(a *Account, id msg.MessageID) (bool, error) {
	type answer struct {
		mine bool
		err  error
	}
	c := make(chan answer, 1)
	a.AskSentByBot(context.Background(), id, func(mine bool, err error) { c <- answer{mine, err} })
	got := <-c
	return got.mine, got.err
}

var rigGroup = msg.Peer{Kind: msg.Group, ID: "700000001"}

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
		if _, err := r.acct.Send(context.Background(), msg.Outbound{Peer: rigGroup, Text: "第一行文字\n第二行 @张三 好\n第三"}); err != nil {
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
			if mine, known := r.acct.SentByBot(context.Background(), rigGroup, id); !mine || !known {
				t.Errorf("%s: sent before the restart (%v, %v)", id, mine, known)
			}
		}
		if mine, known := r.acct.SentByBot(context.Background(), rigGroup, "104"); mine || known {
			t.Errorf("104 was never sent, and only the implementation can tell whose it is: (%v, %v)", mine, known)
		}
		if calls := r.calls("get_msg"); len(calls) != 0 {
			t.Errorf("SentByBot never asks the implementation: %d get_msg calls", len(calls))
		}
		if mine, err := ask(r.acct, "104"); mine || err != nil {
			t.Errorf("104 asked: %v, %v", mine, err)
		}
		if calls := r.calls("get_msg"); len(calls) != 1 {
			t.Errorf("get_msg is asked only about the unknown id: %d calls", len(calls))
		}
		other := NewAccount(AccountOptions{ID: "work", SelfID: 3300000001, Sent: st})
		if mine, _ := other.SentByBot(context.Background(), rigGroup, "101"); mine {
			t.Error("another account's sends are not this one's")
		}
	})
}

// TestSentByBotAsksGetMsg: an id known to neither memory nor store is the
// bot's when get_msg says its sender is the bot. Answers, both ways, are
// remembered for a while; a failure the implementation reports means
// "not the bot".
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
			if got, err := ask(r.acct, id); got != want || err != nil {
				t.Errorf("%s: %v (%v), want %v", id, got, err, want)
			}
		}
		asked := len(r.calls("get_msg"))
		if asked != 4 {
			t.Errorf("%d get_msg calls, want 4 (a non-numeric id is not asked about)", asked)
		}
		for id, want := range map[msg.MessageID]bool{"-7": true, "8": false, "9": false, "x": false} {
			if got, known := r.acct.SentByBot(ctx, rigGroup, id); got != want || !known {
				t.Errorf("again %s: %v (known %v), want %v", id, got, known, want)
			}
		}
		if n := len(r.calls("get_msg")); n != asked {
			t.Errorf("answers are remembered: %d more calls", n-asked)
		}
		time.Sleep(ownerTTL)
		if _, known := r.acct.SentByBot(ctx, rigGroup, "8"); known {
			t.Errorf("an answer is forgotten after %v", ownerTTL)
		}
	})
}

// TestSentByBotKnowsWhatOthersSent: a message that came in from someone
// else is not the bot's, so quoting it costs no get_msg, in its own chat.
func TestSentByBotKnowsWhatOthersSent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t, AccountOptions{WSURL: "ws://onebot.test/", SelfID: 3300000001}, nil)
		defer r.close()
		ctx := context.Background()
		if err := r.peer.Connected(ctx); err != nil {
			t.Fatal(err)
		}
		if err := r.peer.Push(ctx, groupEvent(-2093321870, 10001, "明天几点集合？")); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if mine, known := r.acct.SentByBot(ctx, msg.Peer{Kind: msg.Group, ID: "123"}, "-2093321870"); mine || !known {
			t.Errorf("a message received from 10001: (%v, %v)", mine, known)
		}
		if _, known := r.acct.SentByBot(ctx, rigGroup, "-2093321870"); known {
			t.Error("the same id in another chat is another message")
		}
		if n := len(r.calls("get_msg")); n != 0 {
			t.Errorf("%d get_msg calls", n)
		}
	})
}

// TestSentByBotGetMsgTimesOut: an implementation that never answers gets
// ownerTimeout; nobody waits for it meanwhile, the timeout is reported,
// and the id is asked about again next time.
func TestSentByBotGetMsgTimesOut(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t, AccountOptions{WSURL: "ws://onebot.test/", SelfID: 3300000001, ownerTimeout: 2 * time.Second, RequestTimeout: time.Minute}, nil)
		defer r.close()
		if err := r.peer.Connected(context.Background()); err != nil {
			t.Fatal(err)
		}
		r.peer.Silence("get_msg")
		start := time.Now()
		answered := make(chan error, 1)
		r.acct.AskSentByBot(context.Background(), "12", func(mine bool, err error) {
			if mine {
				t.Error("no answer is not the bot")
			}
			answered <- err
		})
		if d := time.Since(start); d != 0 {
			t.Errorf("asking took %v; it must not wait", d)
		}
		if err := <-answered; !errors.Is(err, errTimeout) {
			t.Errorf("err %v, want a timeout", err)
		}
		if d := time.Since(start); d != 2*time.Second {
			t.Errorf("answered after %v, want the owner timeout", d)
		}
		if _, err := ask(r.acct, "12"); !errors.Is(err, errTimeout) {
			t.Errorf("again: %v", err)
		}
		if n := len(r.calls("get_msg")); n != 2 {
			t.Errorf("%d calls; a timeout is not an answer to remember", n)
		}
	})
}

// TestAsksShareALookupAndAreBounded: several quotes of one message wait
// for one get_msg; beyond maxAsks lookups in flight a new one is not
// asked but answered at once with errTooManyAsks. When the connection
// drops, the waiting ones are asked again over the next (get_msg only
// reads), and answered then.
func TestAsksShareALookupAndAreBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t, AccountOptions{WSURL: "ws://onebot.test/", SelfID: 3300000001, ownerTimeout: time.Hour, RequestTimeout: time.Hour}, nil)
		defer r.close()
		if err := r.peer.Connected(context.Background()); err != nil {
			t.Fatal(err)
		}
		r.peer.Silence("get_msg")
		var mu sync.Mutex
		errs := map[string]int{}
		note := func(mine bool, err error) {
			mu.Lock()
			defer mu.Unlock()
			if mine {
				t.Error("mine without an answer")
			}
			switch {
			case errors.Is(err, errTooManyAsks):
				errs["too many"]++
			case err == nil:
				errs["not mine"]++
			default:
				errs[fmt.Sprint(err)]++
			}
		}
		for i := range maxAsks {
			r.acct.AskSentByBot(context.Background(), msg.MessageID(strconv.Itoa(i)), note)
		}
		r.acct.AskSentByBot(context.Background(), "0", note) // shares the first lookup
		r.acct.AskSentByBot(context.Background(), "-1", note)
		synctest.Wait()
		if n := len(r.calls("get_msg")); n != maxAsks {
			t.Errorf("%d get_msg calls, want %d", n, maxAsks)
		}
		mu.Lock()
		if errs["too many"] != 1 || len(errs) != 1 {
			t.Errorf("answers so far %v, want one refusal", errs)
		}
		mu.Unlock()
		r.peer.Speak("get_msg") // the next connection answers
		r.peer.DropAll()
		time.Sleep(10 * time.Second) // the account connects again (within askWait)
		synctest.Wait()
		mu.Lock()
		defer mu.Unlock()
		if errs["not mine"] != maxAsks+1 || errs["too many"] != 1 || len(errs) != 2 {
			t.Errorf("answers after the connection dropped %v, want %d not mine (asked again) and the refusal", errs, maxAsks+1)
		}
		if n := len(r.calls("get_msg")); n != 2*maxAsks {
			t.Errorf("%d get_msg calls, want %d: each asked again once", n, 2*maxAsks)
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
		send := func() {
			if _, err := r.acct.Send(context.Background(), msg.Outbound{Peer: rigGroup, Text: "hi"}); err != nil {
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

// TestAQuestionWaitsForTheConnection: asked before the implementation is
// connected (as a restart asks again what its last run left unanswered),
// the question waits for the connection and the bot's QQ number, and is
// answered then; with no connection within askWait it fails with
// errNotConnected.
func TestAQuestionWaitsForTheConnection(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := func(action string, _ json.RawMessage) (any, int, string) {
			if action == "get_msg" {
				return map[string]any{"message_id": 12, "sender": map[string]any{"user_id": 3300000001}}, 0, ""
			}
			return nil, 0, ""
		}
		// The bot's number is learned from the connection, not configured.
		r := newRig(t, AccountOptions{Reverse: true, Token: "k"}, h)
		defer r.close()
		answered := make(chan error, 1)
		var mine bool
		r.acct.AskSentByBot(context.Background(), "12", func(m bool, err error) { mine = m; answered <- err })
		time.Sleep(10 * time.Second)
		synctest.Wait()
		select {
		case err := <-answered:
			t.Fatalf("answered (%v) with no connection to ask over", err)
		default:
		}
		if err := r.peer.DialReverse(context.Background(), rigReverse, onebottest.ReverseOptions{SelfID: 3300000001, Authorization: "Token k", Client: r.net.Client()}); err != nil {
			t.Fatal(err)
		}
		if err := <-answered; err != nil || !mine {
			t.Fatalf("once connected: mine %v, err %v; want the bot's", mine, err)
		}

		start := time.Now()
		r.peer.DropAll()
		synctest.Wait()
		if _, err := ask(r.acct, "13"); !errors.Is(err, errNotConnected) {
			t.Fatalf("with no connection: %v; want errNotConnected", err)
		}
		if d := time.Since(start); d < askWait {
			t.Errorf("gave up after %v; want askWait", d)
		}
	})
}

// TestAQuestionWaitsForAHolderOfTheConnection: in a cluster, a process
// without the connection asks through its holder; while no process holds
// it (the holder died and the lease is not taken yet), the question waits
// and is asked again, rather than failing at once.
func TestAQuestionWaitsForAHolderOfTheConnection(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		var requests int
		far := NewAccount(AccountOptions{ID: "default", SelfID: 3300000001, Remote: RemoteCaller(func(ctx context.Context, call []byte) ([]byte, error) {
			requests++
			if time.Since(start) < 5*time.Second {
				return nil, errors.New("cluster: no holder serves the request")
			}
			return []byte(`{"data":{"message_id":12,"sender":{"user_id":3300000001}}}`), nil
		})})
		mine, err := ask(far, "12")
		if err != nil || !mine {
			t.Fatalf("mine %v, err %v; want the bot's, once a holder answers", mine, err)
		}
		if d := time.Since(start); d < 5*time.Second || d > 6*time.Second {
			t.Errorf("answered after %v; want soon after a holder came, at 5 s", d)
		}
		if requests < 2 {
			t.Errorf("%d requests; want it asked again", requests)
		}
	})
}
