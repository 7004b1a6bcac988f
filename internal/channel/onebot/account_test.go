package onebot

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/pincerbot/pincer/internal/channel"
	"github.com/pincerbot/pincer/internal/channel/onebot/onebottest"
	"github.com/pincerbot/pincer/internal/msg"
)

// replySink answers every message with a fixed text through its replier.
type replySink struct {
	mu   sync.Mutex
	got  []msg.Message
	seen chan msg.Message
	text string
}

func (s *replySink) Dispatch(ctx context.Context, m msg.Message, r channel.Replier) error {
	s.mu.Lock()
	s.got = append(s.got, m)
	s.mu.Unlock()
	if _, err := r.Deliver(ctx, msg.Outbound{Account: m.Account, Peer: m.Peer, Text: s.text}); err != nil {
		return err
	}
	s.seen <- m
	return nil
}

func groupEvent(id, user int64, text string) map[string]any {
	return map[string]any{
		"time": 1774420200, "self_id": 3300000001, "post_type": "message", "message_type": "group",
		"message_id": id, "user_id": user, "group_id": 123,
		"sender":  map[string]any{"user_id": user, "nickname": "Ann"},
		"message": []any{map[string]any{"type": "text", "data": map[string]any{"text": text}}},
	}
}

func TestAccountReceivesAndReplies(t *testing.T) {
	p := onebottest.New(t, func(action string, _ json.RawMessage) (any, int, string) {
		return map[string]any{"message_id": 555}, 0, ""
	})
	filter, err := NewPeerFilter(nil, []string{"group:999"})
	if err != nil {
		t.Fatal(err)
	}
	a := NewAccount(AccountOptions{WSURL: p.URL, Filter: filter, ReplyToTrigger: true, Reconnect: Reconnect{Enabled: true, Retries: -1, MinDelay: time.Millisecond, MaxDelay: time.Millisecond}})
	sink := &replySink{seen: make(chan msg.Message, 4), text: "hi @Ann"}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx, sink) }()
	defer func() { cancel(); <-done }()

	if err := p.Connected(ctx); err != nil {
		t.Fatal(err)
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(p.Push(ctx, map[string]any{"post_type": "meta_event", "meta_event_type": "lifecycle", "sub_type": "connect", "self_id": 3300000001}))
	self := groupEvent(1, 3300000001, "my own echo")
	denied := groupEvent(2, 10001, "from a denied group")
	denied["group_id"] = 999
	must(p.Push(ctx, self))
	must(p.Push(ctx, denied))
	must(p.Push(ctx, groupEvent(3, 10001, "hello bot")))

	m := <-sink.seen
	if m.ID != "3" || m.Text != "hello bot" || m.Peer.ID != "123" {
		t.Fatalf("dispatched %+v", m)
	}
	if stateOf(a) != StateConnected || a.Self() != 3300000001 {
		t.Errorf("state %s self %d", stateOf(a), a.Self())
	}
	var sent []onebottest.Call
	for _, c := range p.Calls() {
		if c.Action == "send_group_msg" {
			sent = append(sent, c)
		}
	}
	if len(sent) != 1 {
		t.Fatalf("sends %+v", sent)
	}
	var params sentMessage
	must(json.Unmarshal(sent[0].Params, &params))
	if len(params.Message) != 3 || params.Message[0].Type != "reply" || params.Message[0].Str("id") != "3" || params.Message[2].Type != "at" || params.Message[2].Str("qq") != "10001" {
		t.Errorf("reply segments %+v", params.Message)
	}
	if mine, _ := a.SentByBot(context.Background(), msg.Peer{Kind: msg.Group, ID: "700000001"}, "555"); !mine {
		t.Error("the sent id must be remembered for reply-to-self")
	}

	// The connection drops; the account comes back by itself.
	p.DropAll()
	if err := p.Connected(ctx); err != nil {
		t.Fatal(err)
	}
	must(p.Push(ctx, groupEvent(4, 10001, "again")))
	if m := <-sink.seen; m.ID != "4" {
		t.Errorf("after reconnect: %+v", m)
	}
	sink.mu.Lock()
	n := len(sink.got)
	sink.mu.Unlock()
	if n != 2 {
		t.Errorf("%d messages dispatched; the bot's own and the denied group's must not be", n)
	}
}
