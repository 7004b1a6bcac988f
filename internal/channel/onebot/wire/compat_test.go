package wire

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/pincerbot/pincer/internal/msg"
)

func TestParseCode(t *testing.T) {
	tests := []struct {
		code string
		ok   bool
		typ  string
		data map[string]string
	}{
		{"[CQ:at,qq=123]", true, "at", map[string]string{"qq": "123"}},
		{"[CQ:at,qq=123,name=张三]", true, "at", map[string]string{"qq": "123", "name": "张三"}},
		{"[CQ:at,name=A&#44;B,qq=42]", true, "at", map[string]string{"qq": "42", "name": "A,B"}},
		{"[CQ:face]", true, "face", map[string]string{}},
		{"[CQ:at,qq=1] ", false, "", nil},
		{" [CQ:at,qq=1]", false, "", nil},
		{"[CQ:at,qq=1][CQ:at,qq=2]", false, "", nil},
		{"[CQ:,qq=1]", false, "", nil},
		{"[CQ:at,qq=1", false, "", nil},
		{"at,qq=1]", false, "", nil},
		{"", false, "", nil},
	}
	for _, tt := range tests {
		seg, ok := ParseCode(tt.code)
		if ok != tt.ok {
			t.Errorf("%q: ok %v", tt.code, ok)
			continue
		}
		if !ok {
			continue
		}
		got := map[string]string{}
		for _, f := range seg.Data {
			got[f.Key] = seg.Str(f.Key)
		}
		if seg.Type != tt.typ || !cmp.Equal(tt.data, got) {
			t.Errorf("%q: %s %v, want %s %v", tt.code, seg.Type, got, tt.typ, tt.data)
		}
	}
}

func FuzzParseCode(f *testing.F) {
	f.Add("[CQ:at,qq=123,name=张三]")
	f.Add("[CQ:at,name=A&#44;B,qq=42]")
	f.Add("[CQ:forward,res_id=abc]")
	f.Add("[CQ:at,qq=1]x")
	f.Fuzz(func(t *testing.T, s string) {
		seg, ok := ParseCode(s)
		if !ok {
			return
		}
		if seg.Type == "" || seg.Type == "text" || !strings.HasPrefix(s, "[CQ:"+seg.Type) {
			t.Fatalf("%q parsed as a %q code", s, seg.Type)
		}
		// What it parsed is one code again once written out.
		again, ok := ParseCode(formatCQ([]Segment{seg}))
		if !ok || again.Type != seg.Type || len(again.Data) != len(seg.Data) {
			t.Fatalf("%q -> %q does not parse back: %+v", s, formatCQ([]Segment{seg}), again)
		}
	})
}

// TestForwardIDFromResIDOrForwardID: a forward segment whose id is in
// res_id or forward_id (LLOneBot, older go-cqhttp forks) is a forward to
// expand, in an event's segments, in its CQ string and in a forward
// node's content; id wins when there are several.
func TestForwardIDFromResIDOrForwardID(t *testing.T) {
	tests := []struct {
		name, message string
		want          []msg.ForwardID
	}{
		{"res_id", `[{"type":"forward","data":{"res_id":"Xq7c2L0V"}}]`, []msg.ForwardID{"Xq7c2L0V"}},
		{"forward_id", `[{"type":"forward","data":{"forward_id":"F-1"}}]`, []msg.ForwardID{"F-1"}},
		{"a number", `[{"type":"forward","data":{"res_id":7301}}]`, []msg.ForwardID{"7301"}},
		{"id wins", `[{"type":"forward","data":{"id":"a","res_id":"b","forward_id":"c"}}]`, []msg.ForwardID{"a"}},
		{"res_id before forward_id", `[{"type":"forward","data":{"id":"","forward_id":"c","res_id":"b"}}]`, []msg.ForwardID{"b"}},
		{"CQ string", `"看[CQ:forward,res_id=Xq7c2L0V]"`, []msg.ForwardID{"Xq7c2L0V"}},
		{"none", `[{"type":"forward","data":{"name":"x"}}]`, nil},
	}
	for _, tt := range tests {
		ev := event(t, `{"post_type":"message","message_type":"group","group_id":1,"message_id":9,"user_id":10001,"self_id":3300000001,
		  "sender":{"user_id":10001,"nickname":"张三"},"message":`+tt.message+`}`)
		m, err := ev.ToMessage("default", 3300000001)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(tt.want, m.ForwardIDs); diff != "" {
			t.Errorf("%s: forward ids (-want +got):\n%s", tt.name, diff)
		}
		if !strings.Contains(m.Text, "[合并转发]") {
			t.Errorf("%s: text %q", tt.name, m.Text)
		}
	}
	nodes := ForwardMessages(json.RawMessage(`{"messages":[
	  {"sender":{"user_id":2,"nickname":"b"},"content":[{"type":"forward","data":{"res_id":"inner-1"}}]},
	  {"sender":{"user_id":3,"nickname":"c"},"content":"[CQ:forward,forward_id=inner-2]"}]}`), 3300000001)
	if len(nodes) != 2 {
		t.Fatalf("nodes %+v", nodes)
	}
	for i, want := range []msg.ForwardID{"inner-1", "inner-2"} {
		if diff := cmp.Diff([]msg.ForwardID{want}, nodes[i].ForwardIDs); diff != "" {
			t.Errorf("node %d: forward ids (-want +got):\n%s", i, diff)
		}
	}
}
