package wire

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/pincerbot/pincer/internal/msg"
	quoting "github.com/pincerbot/pincer/internal/quote"
)

// node summarizes a decoded forward node, with nested inline content.
type fnode struct {
	Sender, Name, Text string
	Time               int64
	Inner              []fnode
}

func summarize(ms []msg.Message) []fnode {
	var out []fnode
	for _, m := range ms {
		n := fnode{Sender: string(m.Sender.ID), Name: m.Sender.Name, Text: m.Text}
		if !m.Time.IsZero() {
			n.Time = m.Time.Unix()
		}
		for _, s := range m.Segments {
			if s.Kind == msg.SegForward && s.Forward != nil {
				n.Inner = append(n.Inner, summarize(s.Forward)...)
			}
		}
		out = append(out, n)
	}
	return out
}

func TestForwardMessagesOfEveryShape(t *testing.T) {
	tests := map[string]struct {
		data string
		want []fnode
	}{
		"A: spec and Lagrange": {
			data: `{"message":[
			  {"type":"node","data":{"user_id":"10001","nickname":"张三","content":[{"type":"text","data":{"text":"第一条"}}]}},
			  {"type":"node","data":{"user_id":"10002","nickname":"李四","content":[{"type":"image","data":{"file":"a.jpg"}}]}}]}`,
			want: []fnode{{Sender: "10001", Name: "张三", Text: "第一条"}, {Sender: "10002", Name: "李四", Text: "[图片]"}},
		},
		"B: go-cqhttp with CQ strings and a nested node list": {
			data: `{"messages":[
			  {"sender":{"user_id":10001,"nickname":"张三"},"time":1774420200,"content":"你好[CQ:face,id=14]"},
			  {"sender":{"user_id":10002,"nickname":"李四"},"time":1774420201,"content":[
			    {"sender":{"user_id":10003,"nickname":"王五"},"time":1774420100,"content":"里层"}]}]}`,
			want: []fnode{
				{Sender: "10001", Name: "张三", Text: "你好[表情]", Time: 1774420200},
				{Sender: "10002", Name: "李四", Text: "[合并转发]", Time: 1774420201, Inner: []fnode{{Sender: "10003", Name: "王五", Text: "里层", Time: 1774420100}}},
			},
		},
		"C: NapCat events with inline nested content": {
			data: `{"messages":[
			  {"self_id":3300000001,"user_id":10001,"time":1774420200,"message_id":-5,"message_type":"group","group_id":284840486,
			   "sender":{"user_id":10001,"nickname":"zs","card":"张三"},"raw_message":"x","message_format":"array",
			   "message":[{"type":"forward","data":{"id":"inner-1","content":[
			     {"user_id":10004,"time":1774420000,"message_id":7,"sender":{"user_id":10004,"nickname":"赵六"},
			      "message":[{"type":"text","data":{"text":"最里层"}}]}]}}]}]}`,
			want: []fnode{{Sender: "10001", Name: "张三", Text: "[合并转发]", Time: 1774420200, Inner: []fnode{{Sender: "10004", Name: "赵六", Text: "最里层", Time: 1774420000}}}},
		},
		"mis-shaped fields become unknown": {
			data: `{"messages":[{"sender":"nobody","time":"soon","content":[{"type":"text","data":{"text":"ok"}}]}, 42, "x"]}`,
			want: []fnode{{Text: "ok"}},
		},
		"nothing usable": {data: `{"messages":{}}`},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			got := summarize(ForwardMessages(json.RawMessage(tt.data), 0))
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestInlineForwardInAnEvent(t *testing.T) {
	ev := event(t, `{"post_type":"message","message_type":"group","group_id":1,"message_id":9,"user_id":10001,"self_id":3300000001,
	  "sender":{"user_id":10001,"nickname":"张三"},
	  "message":[{"type":"forward","data":{"id":"fw-1","content":[{"sender":{"user_id":2,"nickname":"b"},"message":"hi"}]}}]}`)
	m, err := ev.ToMessage("default", 3300000001)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]msg.ForwardID{"fw-1"}, m.ForwardIDs); diff != "" {
		t.Errorf("forward ids: %s", diff)
	}
	if len(m.Segments) != 1 || len(m.Segments[0].Forward) != 1 || m.Segments[0].Forward[0].Text != "hi" {
		t.Errorf("inline content: %+v", m.Segments)
	}
	if m.Text != "[合并转发]" {
		t.Errorf("text %q", m.Text)
	}
}

func TestInlineForwardDepthIsBounded(t *testing.T) {
	inner := `{"sender":{"user_id":1},"message":"end"}`
	for range 20 {
		inner = `{"sender":{"user_id":1},"message":[{"type":"forward","data":{"id":"x","content":[` + inner + `]}}]}`
	}
	ms := ForwardMessages(json.RawMessage(`[`+inner+`]`), 0)
	depth := 0
	for len(ms) > 0 && len(ms[0].Segments) > 0 && ms[0].Segments[0].Forward != nil {
		ms = ms[0].Segments[0].Forward
		depth++
	}
	if depth > maxInlineDepth+1 {
		t.Errorf("decoded %d levels; the bound is %d", depth, maxInlineDepth)
	}
}

func FuzzForwardMessages(f *testing.F) {
	f.Add(`{"messages":[{"sender":{"user_id":1},"content":[{"sender":{"user_id":2},"content":"x"}]}]}`)
	f.Add(`[{"type":"node","data":{"user_id":"1","content":"[CQ:forward,id=2]"}}]`)
	f.Add(`{"messages":[{"sender":{"user_id":1},"content":[{"type":"forward","data":{"res_id":"r"}},{"type":"forward","data":{"forward_id":"f"}}]}]}`)
	f.Add(shapeBNested)
	f.Fuzz(func(t *testing.T, raw string) {
		_ = ForwardMessages(json.RawMessage(raw), 0)
	})
}

// shapeBNested is reference §13 E, Shape B: go-cqhttp inlines a nested
// forward as the node list of its node's content.
const shapeBNested = `{"messages": [
  {"sender": {"user_id": 10005, "nickname": "Eve"}, "time": 1759990000, "group_id": 0,
   "content": "路线已发群文件&#91;v2&#93;"},
  {"sender": {"user_id": 10006, "nickname": "Frank"}, "time": 1759990060, "group_id": 0,
   "content": [{"sender": {"user_id": 10007, "nickname": "Gina"}, "time": 1759900000,
                "content": "上次的装备清单"}]}
]}`

// TestInlineNestedForwardHasASyntheticID: the nested forward go-cqhttp
// inlines gets an id of its own (stable, derived from its content, never
// a resId) and is listed in its message's forward ids, so the quote
// resolver finds its inline content by id.
func TestInlineNestedForwardHasASyntheticID(t *testing.T) {
	ms := ForwardMessages(json.RawMessage(shapeBNested), 0)
	if len(ms) != 2 {
		t.Fatalf("%d messages", len(ms))
	}
	frank := ms[1]
	if len(frank.ForwardIDs) != 1 || len(frank.Segments) != 1 {
		t.Fatalf("forward ids %v segments %+v", frank.ForwardIDs, frank.Segments)
	}
	id := frank.ForwardIDs[0]
	if !IsInlineForward(id) || string(id) != frank.Segments[0].ID || len(frank.Segments[0].Forward) != 1 {
		t.Errorf("id %q, segment %+v", id, frank.Segments[0])
	}
	if again := ForwardMessages(json.RawMessage(shapeBNested), 0); again[1].ForwardIDs[0] != id {
		t.Errorf("the id is not stable: %q then %q", id, again[1].ForwardIDs[0])
	}
	other := ForwardMessages(json.RawMessage(strings.Replace(shapeBNested, "上次的装备清单", "别的", 1)), 0)
	if other[1].ForwardIDs[0] == id {
		t.Error("different content, same id")
	}
	if len(ms[0].ForwardIDs) != 0 {
		t.Errorf("a plain node has no forwards: %v", ms[0].ForwardIDs)
	}
	// NapCat's inline content keeps its real id.
	ev := event(t, `{"post_type":"message","message_type":"group","group_id":1,"message_id":9,"user_id":10001,
	  "message":[{"type":"forward","data":{"id":"7561234567890123456","content":[{"sender":{"user_id":2},"message":"hi"}]}},
	             {"type":"forward","data":{"content":[{"sender":{"user_id":3},"message":"no id"}]}}]}`)
	m, err := ev.ToMessage("default", 3300000001)
	if err != nil {
		t.Fatal(err)
	}
	if len(m.ForwardIDs) != 2 || m.ForwardIDs[0] != "7561234567890123456" || !IsInlineForward(m.ForwardIDs[1]) {
		t.Errorf("forward ids %v", m.ForwardIDs)
	}
}

// TestNestedInlineForwardIsQuoted: the quote resolver expands go-cqhttp's
// nested forward one level deeper than its node.
func TestNestedInlineForwardIsQuoted(t *testing.T) {
	f := forwardsFetcher{"res-1": ForwardMessages(json.RawMessage(shapeBNested), 0)}
	r := quoting.New(f, quoting.Settings{Enabled: true, ResolveForward: true, MaxDepth: 2, MaxNodes: 20, MaxChars: 4000, Timeout: time.Second}, time.UTC)
	got := quoting.Render(r.Resolve(context.Background(), msg.Message{ForwardIDs: []msg.ForwardID{"res-1"}}), time.UTC)
	want := "[引用消息：\n" +
		"  - Eve(10005) 06:06:40：路线已发群文件[v2]\n" +
		"  - Frank(10006) 06:07:40：[合并转发]\n" +
		"    - Gina(10007) 05:06:40：上次的装备清单\n" +
		"]"
	if got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

// forwardsFetcher serves forwards by id; anything else fails.
type forwardsFetcher map[msg.ForwardID][]msg.Message

func (f forwardsFetcher) FetchMessage(context.Context, msg.MessageID) (msg.Message, error) {
	return msg.Message{}, errors.New("no messages")
}

func (f forwardsFetcher) FetchForward(_ context.Context, id msg.ForwardID) ([]msg.Message, error) {
	if ms, ok := f[id]; ok {
		return ms, nil
	}
	return nil, fmt.Errorf("forward %s unknown", id)
}
