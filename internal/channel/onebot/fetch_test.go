package onebot

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/pincerbot/pincer/internal/channel/onebot/wire"
	"github.com/pincerbot/pincer/internal/msg"
)

func TestFetchMessageAndForward(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t, AccountOptions{WSURL: "ws://onebot.test/", SelfID: 3300000001}, func(action string, params json.RawMessage) (any, int, string) {
			switch action {
			case "get_msg":
				if strings.Contains(string(params), `"message_id":404`) {
					return nil, 100, "message not found"
				}
				if strings.Contains(string(params), `"message_id":500`) {
					return "not an object", 0, ""
				}
				if strings.Contains(string(params), `"message_id":501`) {
					return nil, 0, "" // data: null
				}
				if strings.Contains(string(params), `"message_id":502`) {
					return map[string]any{}, 0, ""
				}
				return map[string]any{"message_id": 7, "time": 1774420200, "sender": map[string]any{"user_id": 10001, "nickname": "张三"},
					"message": []any{map[string]any{"type": "text", "data": map[string]any{"text": "看这个"}}, map[string]any{"type": "forward", "data": map[string]any{"id": "F1"}}}}, 0, ""
			case "get_forward_msg":
				// SnowLuma-like: "id" works; go-cqhttp-like ids need message_id.
				if strings.Contains(string(params), `"id":"gocq"`) {
					return nil, 100, "param error"
				}
				return map[string]any{"messages": []any{map[string]any{"sender": map[string]any{"user_id": 10002, "nickname": "李四"}, "time": 1774420205, "content": "里面"}}}, 0, ""
			}
			return nil, 0, ""
		})
		defer r.close()
		ctx := context.Background()
		if err := r.peer.Connected(ctx); err != nil {
			t.Fatal(err)
		}
		m, err := r.acct.FetchMessage(ctx, "7")
		if err != nil || m.Text != "看这个[合并转发]" || m.Sender.Name != "张三" || len(m.ForwardIDs) != 1 || m.ForwardIDs[0] != "F1" || m.Time.Unix() != 1774420200 {
			t.Errorf("get_msg: %+v %v", m, err)
		}
		var ae *wire.ActionError
		if _, err := r.acct.FetchMessage(ctx, "404"); !errors.As(err, &ae) {
			t.Errorf("a failed get_msg is an error: %v", err)
		}
		for _, id := range []msg.MessageID{"500", "501", "502"} {
			if _, err := r.acct.FetchMessage(ctx, id); !errors.Is(err, errUnreadable) {
				t.Errorf("get_msg %s: an unreadable answer (not an object, null, {}): %v", id, err)
			}
		}
		if _, err := r.acct.FetchMessage(ctx, "abc"); err == nil {
			t.Error("a non-numeric id is an error")
		}
		for _, id := range []msg.ForwardID{"F1", "gocq"} {
			ms, err := r.acct.FetchForward(ctx, id)
			if err != nil || len(ms) != 1 || ms[0].Text != "里面" || ms[0].Sender.ID != "10002" {
				t.Errorf("get_forward_msg %s: %+v %v", id, ms, err)
			}
		}
		var forwardCalls []string
		for _, c := range r.calls("get_forward_msg") {
			forwardCalls = append(forwardCalls, string(c.Params))
		}
		want := []string{`{"id":"F1"}`, `{"id":"gocq"}`, `{"message_id":"gocq"}`}
		if strings.Join(forwardCalls, " ") != strings.Join(want, " ") {
			t.Errorf("forward calls %v, want %v", forwardCalls, want)
		}
	})
}

// TestInlineForwardIDIsNeverFetched: get_forward_msg never sees a
// synthetic id.
func TestInlineForwardIDIsNeverFetched(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t, AccountOptions{WSURL: "ws://onebot.test/", SelfID: 3300000001}, answerSends)
		defer r.close()
		if err := r.peer.Connected(context.Background()); err != nil {
			t.Fatal(err)
		}
		// go-cqhttp inlines a nested forward as the node list of its
		// node's content.
		nested := `{"messages":[{"sender":{"user_id":10006,"nickname":"Frank"},"time":1759990060,
		  "content":[{"sender":{"user_id":10007,"nickname":"Gina"},"time":1759900000,"content":"上次的装备清单"}]}]}`
		id := wire.ForwardMessages(json.RawMessage(nested), 0)[0].ForwardIDs[0]
		if _, err := r.acct.FetchForward(context.Background(), id); err == nil {
			t.Error("want an error")
		}
		if calls := r.calls("get_forward_msg"); len(calls) != 0 {
			t.Errorf("calls %v", calls)
		}
	})
}
