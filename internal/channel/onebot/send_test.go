package onebot

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/pincerbot/pincer/internal/channel/onebot/onebottest"
	"github.com/pincerbot/pincer/internal/channel/onebot/wire"
	"github.com/pincerbot/pincer/internal/msg"
)

type sentMessage struct {
	GroupID int64          `json:"group_id"`
	UserID  int64          `json:"user_id"`
	Message []wire.Segment `json:"message"`
}

func sentCalls(t *testing.T, p *onebottest.Peer) []sentMessage {
	t.Helper()
	var out []sentMessage
	for _, c := range p.Calls() {
		if !strings.HasPrefix(c.Action, "send_") {
			continue
		}
		var m sentMessage
		if err := json.Unmarshal(c.Params, &m); err != nil {
			t.Fatal(err)
		}
		out = append(out, m)
	}
	return out
}

// numbering is an implementation that takes every action and answers it
// with the next message id, from 101.
func numbering(t *testing.T) *onebottest.Peer {
	next := int64(100)
	return onebottest.New(t, func(string, json.RawMessage) (any, int, string) {
		next++
		return map[string]any{"message_id": next}, 0, ""
	})
}

func TestSendChunksWithReplyOnFirst(t *testing.T) {
	p := numbering(t)
	c, _ := dial(t, p, nil)
	sent := newSentIDs(2)
	s := &chunkSender{Caller: c, ChunkLimit: 10, OnSent: func(_ context.Context, id msg.MessageID) { sent.Add(id) }}
	out := msg.Outbound{Peer: msg.Peer{Kind: msg.Group, ID: "123"}, ReplyTo: "-5", Text: "第一行文字\n第二行 @张三 好\n第三"}
	id, err := s.Send(context.Background(), out, outboundOptions{Mentions: true, Participants: []participant{{QQ: 9, Name: "张三"}}})
	if err != nil {
		t.Fatal(err)
	}
	if id != "101" {
		t.Errorf("first id %q", id)
	}
	calls := sentCalls(t, p)
	if len(calls) != 3 || calls[0].GroupID != 123 {
		t.Fatalf("calls %+v", calls)
	}
	var types [][]string
	for _, c := range calls {
		var ts []string
		for _, s := range c.Message {
			ts = append(ts, s.Type)
		}
		types = append(types, ts)
	}
	if diff := cmp.Diff([][]string{{"reply", "text"}, {"text", "at", "text"}, {"text"}}, types); diff != "" {
		t.Errorf("segments per chunk, reply only first (-want +got):\n%s", diff)
	}
	if calls[0].Message[0].Str("id") != "-5" || len(calls[0].Message[0].Data) != 1 {
		t.Errorf("the reply segment must carry only id: %+v", calls[0].Message[0])
	}
	if sent.Has("101") || !sent.Has("102") || !sent.Has("103") {
		t.Error("sent ids must keep the newest, FIFO")
	}
}

// TestAMessageIsRecordedAsSentAfterItsPartIsConfirmed: the sender tells
// OnSent (which records the id as the bot's) only once the part's
// confirmation returned, by which time the outbox has stored that the
// part went (see outbox.Confirmed).
func TestAMessageIsRecordedAsSentAfterItsPartIsConfirmed(t *testing.T) {
	p := numbering(t)
	c, _ := dial(t, p, nil)
	var order []string
	s := &chunkSender{Caller: c, ChunkLimit: 10, OnSent: func(_ context.Context, id msg.MessageID) { order = append(order, "recorded "+string(id)) }}
	out := msg.Outbound{Peer: msg.Peer{Kind: msg.Group, ID: "123"}, Text: "第一行文字\n第二行文字"}
	err := s.SendFrom(context.Background(), out, outboundOptions{}, 0, func(part int, id msg.MessageID, more bool) {
		order = append(order, fmt.Sprintf("confirmed %d as %s", part, id))
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"confirmed 0 as 101", "recorded 101", "confirmed 1 as 102", "recorded 102"}
	if diff := cmp.Diff(want, order); diff != "" {
		t.Errorf("order of confirmations and records (-want +got):\n%s", diff)
	}
}

func TestSendDirectAndNotices(t *testing.T) {
	p := onebottest.New(t, func(string, json.RawMessage) (any, int, string) { return map[string]any{"message_id": 1}, 0, "" })
	c, _ := dial(t, p, nil)
	s := &chunkSender{Caller: c}
	people := outboundOptions{Mentions: true, Participants: []participant{{QQ: 9, Name: "Ann"}}}
	if _, err := s.Send(context.Background(), msg.Outbound{Peer: msg.Peer{Kind: msg.Direct, ID: "42"}, Text: "hi @Ann [CQ:at,qq=9]"}, people); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Send(context.Background(), msg.Outbound{Peer: msg.Peer{Kind: msg.Group, ID: "7"}, Text: "failed @Ann", IsError: true}, people); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Send(context.Background(), msg.Outbound{Peer: msg.Peer{Kind: msg.Group, ID: "7"}, Text: "summary: @Ann said [CQ:at,qq=9]", NoMentions: true}, people); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Send(context.Background(), msg.Outbound{Peer: msg.Peer{Kind: msg.Group, ID: "7"}, Text: "  \n"}, people); err != nil {
		t.Fatal(err)
	}
	calls := sentCalls(t, p)
	if len(calls) != 3 {
		t.Fatalf("whitespace must send nothing: %d calls", len(calls))
	}
	for _, c := range calls {
		if len(c.Message) != 1 || c.Message[0].Type != "text" {
			t.Errorf("direct chats, notices and digests never convert mentions: %+v", c.Message)
		}
	}
	if calls[0].UserID != 42 {
		t.Errorf("private send to %d", calls[0].UserID)
	}
	for _, bad := range []msg.Peer{{Kind: msg.Group, ID: "284840486"}, {Kind: msg.Group, ID: "abc"}} {
		if _, err := s.Send(context.Background(), msg.Outbound{Peer: bad, Text: "x"}, people); err == nil {
			t.Errorf("send to %v accepted", bad)
		}
	}
}
