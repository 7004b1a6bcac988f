package onebot

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/pincerbot/pincer/internal/channel"
	"github.com/pincerbot/pincer/internal/channel/onebot/wire"
	"github.com/pincerbot/pincer/internal/msg"
)

// fixedCaller answers every action from a map and records the params.
type fixedCaller struct {
	answers map[string]json.RawMessage
	errs    map[string]error
	got     map[string]json.RawMessage
}

func (f *fixedCaller) Call(_ context.Context, action string, params any, _ time.Duration) (json.RawMessage, error) {
	b, _ := json.Marshal(params)
	if f.got == nil {
		f.got = map[string]json.RawMessage{}
	}
	f.got[action] = b
	if err := f.errs[action]; err != nil {
		return nil, err
	}
	return f.answers[action], nil
}

// fetchHistory reads history through c with the default pacing.
func fetchHistory(ctx context.Context, c caller, account msg.AccountID, peer msg.Peer, q channel.HistoryQuery) ([]msg.Message, error) {
	return historyReader{Caller: c, Account: account}.Read(ctx, peer, q)
}

func fixture(t *testing.T, name string) json.RawMessage {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	var resp wire.Response
	if err := json.Unmarshal(b, &resp); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	data, err := resp.Result("fixture")
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return data
}

type line struct{ ID, Sender, Name, Text string }

func lines(ms []msg.Message) []line {
	var out []line
	for _, m := range ms {
		out = append(out, line{string(m.ID), string(m.Sender.ID), m.Sender.Name, m.Text})
	}
	return out
}

func TestHistoryShapesOfEachImplementation(t *testing.T) {
	group := msg.Peer{Kind: msg.Group, ID: "700000001"}
	want := []line{
		{"101", "10001", "张三", "早"},
		{"102", "3300000001", "助手", "早上好"},
		{"103", "10002", "李四 (管理)", "[图片]看这个"},
	}
	for _, name := range []string{"history_napcat.json", "history_snowluma.json", "history_gocqhttp.json", "history_llonebot.json"} {
		t.Run(name, func(t *testing.T) { synctest.Test(t, func(t *testing.T) { testHistoryShape(t, name, group, want) }) })
	}
}

func testHistoryShape(t *testing.T, name string, group msg.Peer, want []line) {
	c := &fixedCaller{answers: map[string]json.RawMessage{"get_group_msg_history": fixture(t, name)}}
	got, err := fetchHistory(context.Background(), c, "default", group, channel.HistoryQuery{Count: 20})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, lines(got)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	for _, m := range got {
		if m.Peer != group || m.Channel != ChannelID {
			t.Errorf("peer %v channel %v", m.Peer, m.Channel)
		}
	}
}

func TestHistoryParamsAreThePortableForm(t *testing.T) {
	c := &fixedCaller{answers: map[string]json.RawMessage{"get_friend_msg_history": json.RawMessage(`{"messages":[]}`)}}
	if _, err := fetchHistory(context.Background(), c, "default", msg.Peer{Kind: msg.Direct, ID: "10001"}, channel.HistoryQuery{Count: 5, Before: "-77"}); err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	_ = json.Unmarshal(c.got["get_friend_msg_history"], &got)
	// Anchored: NapCat goes toward older messages only with the reverse
	// flag (LLOneBot merely reverses the array; the others ignore it).
	want := map[string]any{"user_id": 10001.0, "count": 5.0, "message_seq": -77.0, "message_id": -77.0, "reverse_order": true, "reverseOrder": true}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	// No anchor: latest messages, no anchor keys at all (NapCat would
	// read 0 as a message id).
	c.answers["get_group_msg_history"] = json.RawMessage(`{"messages":[]}`)
	if _, err := fetchHistory(context.Background(), c, "default", msg.Peer{Kind: msg.Group, ID: "5"}, channel.HistoryQuery{Count: 3}); err != nil {
		t.Fatal(err)
	}
	if s := string(c.got["get_group_msg_history"]); strings.Contains(s, "message_seq") || !strings.Contains(s, `"group_id":5`) {
		t.Errorf("params %s", s)
	}
}

func TestHistoryDropsTheAnchorAndKeepsTheNewestCount(t *testing.T) {
	data := json.RawMessage(`{"messages":[
	  {"message_id":3,"time":30,"user_id":1,"sender":{"user_id":1,"nickname":"a"},"message":"c"},
	  {"message_id":1,"time":10,"user_id":1,"sender":{"user_id":1,"nickname":"a"},"message":"a"},
	  {"message_id":2,"time":20,"user_id":1,"sender":{"user_id":1,"nickname":"a"},"message":"b"},
	  {"message_id":2,"time":20,"user_id":1,"sender":{"user_id":1,"nickname":"a"},"message":"b"},
	  {"message_id":4,"time":40,"user_id":1,"sender":{"user_id":1,"nickname":"a"},"message":"anchor"}
	]}`)
	c := &fixedCaller{answers: map[string]json.RawMessage{"get_group_msg_history": data}}
	got, err := fetchHistory(context.Background(), c, "default", msg.Peer{Kind: msg.Group, ID: "5"}, channel.HistoryQuery{Count: 2, Before: "4"})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]line{{"2", "1", "a", "b"}, {"3", "1", "a", "c"}}, lines(got)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestHistoryEmptyAndFailures(t *testing.T) {
	ctx := context.Background()
	group := msg.Peer{Kind: msg.Group, ID: "5"}
	napcatEmpty := &fixedCaller{errs: map[string]error{"get_group_msg_history": &wire.ActionError{Action: "get_group_msg_history", Retcode: 200, Message: "消息0不存在"}}}
	if got, err := fetchHistory(ctx, napcatEmpty, "default", group, channel.HistoryQuery{Count: 5}); err != nil || len(got) != 0 {
		t.Errorf("NapCat's empty history: %v %v", got, err)
	}
	broken := &fixedCaller{errs: map[string]error{"get_group_msg_history": &wire.ActionError{Action: "get_group_msg_history", Retcode: 100, Message: "bad params"}}}
	if _, err := fetchHistory(ctx, broken, "default", group, channel.HistoryQuery{Count: 5}); err == nil {
		t.Error("a real failure must be reported")
	}
	noGroup := &fixedCaller{errs: map[string]error{"get_group_msg_history": &wire.ActionError{Action: "get_group_msg_history", Retcode: 100, Message: "群5不存在"}}}
	if _, err := fetchHistory(ctx, noGroup, "default", group, channel.HistoryQuery{Count: 5}); err == nil {
		t.Error("a group that does not exist is a failure, not an empty history")
	}
	for _, p := range []msg.Peer{{Kind: msg.Group, ID: "284840486"}, {Kind: msg.Group, ID: "x"}, {Kind: "thread", ID: "1"}} {
		if _, err := fetchHistory(ctx, broken, "default", p, channel.HistoryQuery{Count: 5}); err == nil {
			t.Errorf("%v: want an error", p)
		}
	}
	if _, err := fetchHistory(ctx, broken, "default", group, channel.HistoryQuery{Count: 5, Before: "abc"}); err == nil {
		t.Error("a non-numeric anchor is an error")
	}
	garbage := &fixedCaller{answers: map[string]json.RawMessage{"get_group_msg_history": json.RawMessage(`{"messages":"nope"}`)}}
	if got, err := fetchHistory(ctx, garbage, "default", group, channel.HistoryQuery{Count: 5}); err != nil || len(got) != 0 {
		t.Errorf("a mis-shaped answer is an empty history: %v %v", got, err)
	}
}

func TestHistoryTool(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		history := fixture(t, "history_napcat.json")
		r := newRig(t, AccountOptions{WSURL: "ws://onebot.test/", SelfID: 3300000001}, func(action string, params json.RawMessage) (any, int, string) {
			switch action {
			case "get_group_msg_history":
				return history, 0, ""
			case "get_friend_msg_history":
				return map[string]any{"messages": []any{}}, 0, ""
			}
			return nil, 0, ""
		})
		defer r.close()
		if err := r.peer.Connected(context.Background()); err != nil {
			t.Fatal(err)
		}
		lookup := func(id msg.AccountID) (*Account, bool) { return r.acct, id == "default" }
		tool := HistoryTool(lookup, time.FixedZone("CST", 8*3600))
		call := func(args string) string {
			t.Helper()
			out, err := tool.Call(context.Background(), json.RawMessage(args))
			if err != nil {
				t.Fatalf("tools never fail the turn: %v", err)
			}
			return out
		}
		want := "[08:00:01] 张三(10001): 早\n[08:00:02] 助手(3300000001): 早上好\n[08:00:03] 李四 (管理)(10002): [图片]看这个"
		if got := call(`{"target":"group:700000001"}`); got != want {
			t.Errorf("got\n%s\nwant\n%s", got, want)
		}
		if got := call(`{"target":"10001"}`); got != "（无历史消息）" {
			t.Errorf("empty: %q", got)
		}
		for args, wantErr := range map[string]string{
			`{"target":"group:abc"}`:                   "not a QQ or group number",
			`{"target":"group:1","accountId":"other"}`: `no QQ account "other"`,
			`[]`: "arguments",
		} {
			got := call(args)
			var res struct{ Status, Error string }
			if json.Unmarshal([]byte(got), &res) != nil || res.Status != "failed" || !strings.Contains(res.Error, wantErr) {
				t.Errorf("%s: got %s, want a failed result containing %q", args, got, wantErr)
			}
		}
		// count: default 20, floored, clamped to 1..100, non-numbers 20.
		counts := map[string]float64{`{"target":"1"}`: 20, `{"target":"1","count":0}`: 1, `{"target":"1","count":7.9}`: 7, `{"target":"1","count":"500"}`: 100, `{"target":"1","count":"lots"}`: 20, `{"target":"1","count":-3}`: 1}
		for args, want := range counts {
			call(args)
			calls := r.calls("get_friend_msg_history")
			var p map[string]any
			_ = json.Unmarshal(calls[len(calls)-1].Params, &p)
			if p["count"] != want {
				t.Errorf("%s: count %v, want %v", args, p["count"], want)
			}
		}
	})
}

func TestMembersTool(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		members := []any{
			map[string]any{"user_id": 10001, "nickname": "zs", "card": "张三\n[管理]", "role": "owner"},
			map[string]any{"user_id": 10002, "nickname": "李四", "card": "", "role": "admin"},
			map[string]any{"user_id": 10003, "nickname": "", "card": ""},
		}
		fail := false
		r := newRig(t, AccountOptions{WSURL: "ws://onebot.test/", SelfID: 3300000001}, func(action string, params json.RawMessage) (any, int, string) {
			if action == "get_group_member_list" {
				if fail {
					return nil, 100, "group not found"
				}
				if strings.Contains(string(params), `"group_id":2`) {
					return []any{}, 0, ""
				}
				return members, 0, ""
			}
			return nil, 0, ""
		})
		defer r.close()
		if err := r.peer.Connected(context.Background()); err != nil {
			t.Fatal(err)
		}
		tool := MembersTool(func(id msg.AccountID) (*Account, bool) { return r.acct, id == "default" })
		call := func(args string) string {
			out, err := tool.Call(context.Background(), json.RawMessage(args))
			if err != nil {
				t.Fatalf("tools never fail the turn: %v", err)
			}
			return out
		}
		if got, want := call(`{"groupId":"1"}`), "张三 (管理)(10001) — owner\n李四(10002) — admin\n?(10003) — member"; got != want {
			t.Errorf("got\n%s\nwant\n%s", got, want)
		}
		if got, want := call(`{"groupId":1,"limit":2}`), "张三 (管理)(10001) — owner\n李四(10002) — admin\n（仅显示前 2 / 共 3 名成员）"; got != want {
			t.Errorf("got\n%s\nwant\n%s", got, want)
		}
		if got := call(`{"groupId":"2"}`); got != "（该群暂无成员信息）" {
			t.Errorf("empty: %q", got)
		}
		call(`{"groupId":"1","noCache":"yes"}`)
		call(`{"groupId":"1","noCache":true}`)
		calls := r.calls("get_group_member_list")
		if s := string(calls[len(calls)-2].Params); strings.Contains(s, "no_cache") {
			t.Errorf("a non-boolean noCache is unset: %s", s)
		}
		if s := string(calls[len(calls)-1].Params); !strings.Contains(s, `"no_cache":true`) {
			t.Errorf("noCache true: %s", s)
		}
		fail = true
		for _, args := range []string{`{"groupId":"1"}`, `{"groupId":"x"}`, `{"groupId":284840486}`} {
			if got := call(args); !strings.HasPrefix(got, `{"error":`) || !strings.Contains(got, `"status":"failed"`) {
				t.Errorf("%s: %s", args, got)
			}
		}
	})
}
