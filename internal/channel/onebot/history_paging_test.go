package onebot

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/pincerbot/pincer/internal/channel"
	"github.com/pincerbot/pincer/internal/channel/onebot/wire"
	"github.com/pincerbot/pincer/internal/msg"
)

// fakeHistory answers get_group_msg_history the way one implementation
// does (reference §8.6), from a chat of n messages with seqs 1..n.
type fakeHistory struct {
	style string // gocqhttp, napcat, snowluma, llonebot
	n     int
	// max caps a page (go-cqhttp: always 20; SnowLuma: 200).
	max int

	calls []map[string]any
	at    []time.Time
}

func (f *fakeHistory) id(seq int) int64 {
	switch f.style {
	case "napcat":
		return int64(seq*7919%100003 + 1) // short ids: hashes, no order
	case "snowluma":
		return -int64(seq*31337%1000003 + 1)
	}
	return int64(5000 + seq)
}

func (f *fakeHistory) event(seq int) map[string]any {
	ev := map[string]any{
		"message_id": f.id(seq), "time": 1774400000 + seq*10, "user_id": 10001, "group_id": 700000001,
		"sender": map[string]any{"user_id": 10001, "nickname": "张三"}, "message": fmt.Sprintf("第%03d条", seq),
	}
	switch f.style {
	case "napcat":
		ev["message_seq"] = f.id(seq) // NapCat: message_seq is the short id
		ev["post_type"] = "message"
	case "snowluma":
		ev["message_seq"] = seq // no post_type
	default:
		ev["message_seq"] = seq
		ev["post_type"] = "message"
	}
	return ev
}

func (f *fakeHistory) seqOf(id int64) int {
	for seq := 1; seq <= f.n; seq++ {
		if f.id(seq) == id {
			return seq
		}
	}
	return 0
}

func num(v any) int64 {
	switch v := v.(type) {
	case float64:
		return int64(v)
	case string:
		var n int64
		_, _ = fmt.Sscan(v, &n)
		return n
	}
	return 0
}

func (f *fakeHistory) Call(_ context.Context, action string, params any, _ time.Duration) (json.RawMessage, error) {
	b, _ := json.Marshal(params)
	var p map[string]any
	_ = json.Unmarshal(b, &p)
	f.calls = append(f.calls, p)
	f.at = append(f.at, time.Now())
	if action != "get_group_msg_history" {
		return nil, &wire.ActionError{Action: action, Retcode: 1404}
	}
	count := int(num(p["count"]))
	if count <= 0 {
		count = 20
	}
	if f.max > 0 {
		count = min(count, f.max)
	}
	from, to := 0, 0 // seqs, inclusive
	switch f.style {
	case "gocqhttp": // message_seq, 0 = latest; seq-19..seq, count ignored
		anchor := int(num(p["message_seq"]))
		if anchor == 0 {
			anchor = f.n
		}
		from, to = anchor-19, anchor
	case "llonebot": // message_seq real seq, count; reverseOrder only reverses
		anchor := int(num(p["message_seq"]))
		if anchor == 0 {
			anchor = f.n
		}
		from, to = anchor-count+1, anchor
	case "napcat": // message_seq is a short id; reverse_order true goes older
		anchor := f.seqOf(num(p["message_seq"]))
		switch {
		case p["message_seq"] == nil:
			from, to = f.n-count+1, f.n
		case anchor == 0:
			return nil, &wire.ActionError{Action: action, Retcode: 200, Message: fmt.Sprintf("消息%v不存在", p["message_seq"])}
		case p["reverse_order"] == true || p["reverseOrder"] == true:
			from, to = anchor-count+1, anchor
		default:
			from, to = anchor, anchor+count-1
		}
	case "snowluma": // message_id, 0 = latest; anchor and older
		anchor := f.seqOf(num(p["message_id"]))
		if num(p["message_id"]) == 0 {
			anchor = f.n
		}
		from, to = anchor-count+1, anchor
	}
	var out []any
	for seq := max(from, 1); seq <= min(to, f.n); seq++ {
		out = append(out, f.event(seq))
	}
	if f.style == "llonebot" && p["reverseOrder"] == true {
		slices.Reverse(out)
	}
	if out == nil && f.style == "napcat" {
		return nil, &wire.ActionError{Action: action, Retcode: 200, Message: "消息不存在"}
	}
	return json.Marshal(map[string]any{"messages": out})
}

func seqTexts(from, to int) []string {
	var out []string
	for seq := from; seq <= to; seq++ {
		out = append(out, fmt.Sprintf("第%03d条", seq))
	}
	return out
}

func texts(ms []msg.Message) []string {
	var out []string
	for _, m := range ms {
		out = append(out, m.Text)
	}
	return out
}

// TestHistoryPagesBackUntilCount: implementations return at most 20 (or
// 200) messages a call whatever count says, so fetchHistory pages back
// from the oldest message so far until it has count, each implementation
// anchored the way it reads the anchor.
func TestHistoryPagesBackUntilCount(t *testing.T) {
	group := msg.Peer{Kind: msg.Group, ID: "700000001"}
	for _, f := range []*fakeHistory{
		{style: "gocqhttp", n: 100},
		{style: "napcat", n: 100, max: 20},
		{style: "snowluma", n: 100, max: 20},
		{style: "llonebot", n: 100, max: 20},
	} {
		t.Run(f.style, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				got, err := fetchHistory(context.Background(), f, "default", group, channel.HistoryQuery{Count: 50})
				if err != nil {
					t.Fatal(err)
				}
				if diff := strings.Join(texts(got), " "); diff != strings.Join(seqTexts(51, 100), " ") {
					t.Errorf("got %d messages: %s", len(got), diff)
				}
				if len(f.calls) != 3 {
					t.Errorf("%d calls, want 3", len(f.calls))
				}
				if len(f.calls) < 2 {
					return
				}
				second := f.calls[1]
				// The second page is anchored on the first page's oldest
				// message: seq 81 (id 5081 on go-cqhttp).
				wantSeq, wantID := int64(81), f.id(81)
				if f.style == "napcat" {
					wantSeq = f.id(81)
				}
				if num(second["message_seq"]) != wantSeq || num(second["message_id"]) != wantID {
					t.Errorf("second page anchored at message_seq %v message_id %v, want %d %d", second["message_seq"], second["message_id"], wantSeq, wantID)
				}
				if second["reverse_order"] != true || second["reverseOrder"] != true {
					t.Errorf("an anchored page asks for older messages: %v", second)
				}
				if f.calls[0]["message_seq"] != nil || f.calls[0]["reverse_order"] != false {
					t.Errorf("the first page is the latest: %v", f.calls[0])
				}
			})
		})
	}
}

// TestHistoryPagesArePaced: pages go DefaultHistoryGap apart.
func TestHistoryPagesArePaced(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakeHistory{style: "gocqhttp", n: 100}
		if _, err := fetchHistory(context.Background(), f, "default", msg.Peer{Kind: msg.Group, ID: "1"}, channel.HistoryQuery{Count: 50}); err != nil {
			t.Fatal(err)
		}
		for i := 1; i < len(f.at); i++ {
			if d := f.at[i].Sub(f.at[i-1]); d != defaultHistoryGap {
				t.Errorf("page %d came %v after the one before, want %v", i+1, d, defaultHistoryGap)
			}
		}
		f = &fakeHistory{style: "gocqhttp", n: 100}
		r := historyReader{Caller: f, Account: "default", Gap: time.Millisecond}
		if _, err := r.Read(context.Background(), msg.Peer{Kind: msg.Group, ID: "1"}, channel.HistoryQuery{Count: 50}); err != nil {
			t.Fatal(err)
		}
		if d := f.at[len(f.at)-1].Sub(f.at[0]); d != 2*time.Millisecond {
			t.Errorf("three pages took %v with a gap of 1ms", d)
		}
		// A cancelled read stops waiting.
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		f = &fakeHistory{style: "gocqhttp", n: 100}
		if _, err := fetchHistory(ctx, f, "default", msg.Peer{Kind: msg.Group, ID: "1"}, channel.HistoryQuery{Count: 50}); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("err %v", err)
		}
	})
}

// TestHistoryPagingStops: at the start of the chat (a page brings nothing
// new), and after a bounded number of pages.
func TestHistoryPagingStops(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		group := msg.Peer{Kind: msg.Group, ID: "1"}
		short := &fakeHistory{style: "gocqhttp", n: 30}
		got, err := fetchHistory(context.Background(), short, "default", group, channel.HistoryQuery{Count: 50})
		if err != nil || len(got) != 30 {
			t.Fatalf("%d messages, %v", len(got), err)
		}
		if len(short.calls) != 3 {
			t.Errorf("%d calls: the third page brings nothing new and ends it", len(short.calls))
		}
		napcat := &fakeHistory{style: "napcat", n: 30, max: 20}
		if got, err := fetchHistory(context.Background(), napcat, "default", group, channel.HistoryQuery{Count: 50}); err != nil || len(got) != 30 {
			t.Errorf("NapCat: %d messages, %v", len(got), err)
		}
		long := &fakeHistory{style: "gocqhttp", n: 100000}
		if _, err := fetchHistory(context.Background(), long, "default", group, channel.HistoryQuery{Count: 1000}); err != nil {
			t.Fatal(err)
		}
		if len(long.calls) != maxHistoryPages {
			t.Errorf("%d calls, want the bound %d", len(long.calls), maxHistoryPages)
		}
		few := &fakeHistory{style: "gocqhttp", n: 100000}
		if _, err := fetchHistory(context.Background(), few, "default", group, channel.HistoryQuery{Count: 21}); err != nil {
			t.Fatal(err)
		}
		if len(few.calls) != 2 {
			t.Errorf("%d calls for 21 messages", len(few.calls))
		}
		// An implementation that ignores the anchor brings nothing new.
		same := &fixedCaller{answers: map[string]json.RawMessage{"get_group_msg_history": fixture(t, "history_gocqhttp.json")}}
		if got, err := fetchHistory(context.Background(), same, "default", group, channel.HistoryQuery{Count: 50}); err != nil || len(got) != 3 {
			t.Errorf("%d messages, %v", len(got), err)
		}
	})
}

// TestHistoryKeepsWhatEarlierPagesBrought: a later page that fails ends
// the paging with what was read.
func TestHistoryKeepsWhatEarlierPagesBrought(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakeHistory{style: "gocqhttp", n: 100}
		calls := 0
		c := callerFunc(func(ctx context.Context, action string, params any, timeout time.Duration) (json.RawMessage, error) {
			calls++
			if calls > 1 {
				return nil, &wire.ActionError{Action: action, Retcode: 100, Message: "busy"}
			}
			return f.Call(ctx, action, params, timeout)
		})
		got, err := fetchHistory(context.Background(), c, "default", msg.Peer{Kind: msg.Group, ID: "1"}, channel.HistoryQuery{Count: 50})
		if err != nil || len(got) != 20 {
			t.Errorf("%d messages, %v", len(got), err)
		}
	})
}

type callerFunc func(ctx context.Context, action string, params any, timeout time.Duration) (json.RawMessage, error)

func (f callerFunc) Call(ctx context.Context, action string, params any, timeout time.Duration) (json.RawMessage, error) {
	return f(ctx, action, params, timeout)
}

// TestHistoryUnsupported: an implementation without the history actions
// (retcode 1404, or HTTP 404) yields channel.ErrHistoryUnsupported, so
// callers can fall back to pincer's own log.
func TestHistoryUnsupported(t *testing.T) {
	group := msg.Peer{Kind: msg.Group, ID: "1"}
	ws := &fixedCaller{errs: map[string]error{"get_group_msg_history": &wire.ActionError{Action: "get_group_msg_history", Retcode: 1404, Message: "不支持的Api"}}}
	if _, err := fetchHistory(context.Background(), ws, "default", group, channel.HistoryQuery{Count: 5}); !errors.Is(err, channel.ErrHistoryUnsupported) {
		t.Errorf("retcode 1404: %v", err)
	}
	srv := httptest.NewServer(http.NotFoundHandler())
	defer srv.Close()
	h := &httpCaller{BaseURL: srv.URL, Client: srv.Client(), Timeout: time.Second}
	_, err := fetchHistory(context.Background(), h, "default", msg.Peer{Kind: msg.Direct, ID: "2"}, channel.HistoryQuery{Count: 5})
	if !errors.Is(err, channel.ErrHistoryUnsupported) || !strings.Contains(err.Error(), "get_friend_msg_history") {
		t.Errorf("HTTP 404: %v", err)
	}
	other := &fixedCaller{errs: map[string]error{"get_group_msg_history": &wire.ActionError{Action: "get_group_msg_history", Retcode: 100, Message: "bad params"}}}
	if _, err := fetchHistory(context.Background(), other, "default", group, channel.HistoryQuery{Count: 5}); err == nil || errors.Is(err, channel.ErrHistoryUnsupported) {
		t.Errorf("another failure is not 'unsupported': %v", err)
	}
}

// TestHistoryToolGoesOlder: the agent tool's messageSeq pages toward
// older messages, NapCat included (it needs the reverse flag for that).
func TestHistoryToolGoesOlder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakeHistory{style: "napcat", n: 100}
		r := newRig(t, AccountOptions{WSURL: "ws://onebot.test/", SelfID: 3300000001}, func(action string, params json.RawMessage) (any, int, string) {
			data, err := f.Call(context.Background(), action, params, 0)
			if err != nil {
				var ae *wire.ActionError
				errors.As(err, &ae)
				return nil, ae.Retcode, ae.Message
			}
			return data, 0, ""
		})
		defer r.close()
		if err := r.peer.Connected(context.Background()); err != nil {
			t.Fatal(err)
		}
		tool := HistoryTool(func(msg.AccountID) (*Account, bool) { return r.acct, true }, time.UTC)
		out, err := tool.Call(context.Background(), json.RawMessage(fmt.Sprintf(`{"target":"group:700000001","count":5,"messageSeq":"%d"}`, f.id(60))))
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range seqTexts(55, 59) {
			if !strings.Contains(out, want) {
				t.Errorf("%s missing from\n%s", want, out)
			}
		}
		if strings.Contains(out, "第060条") || strings.Contains(out, "第061条") {
			t.Errorf("the anchor and newer messages are left out:\n%s", out)
		}
	})
}
