package onebot

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/pincerbot/pincer/internal/msg"
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
	f.Fuzz(func(t *testing.T, raw string) {
		_ = ForwardMessages(json.RawMessage(raw), 0)
	})
}
