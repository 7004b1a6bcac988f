package wire

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/pincerbot/pincer/internal/msg"
)

func TestIDDecoding(t *testing.T) {
	tests := map[string]ID{`123`: 123, `-1288031235`: -1288031235, `"-1288031235"`: -1288031235, `"42"`: 42, `null`: 0, `""`: 0, `1.7e9`: 1700000000, `3300000001`: 3300000001}
	for in, want := range tests {
		var id ID
		if err := json.Unmarshal([]byte(in), &id); err != nil || id != want {
			t.Errorf("%s: got %d, %v; want %d", in, id, err, want)
		}
	}
	for _, bad := range []string{`"abc"`, `1.5`, `{}`} {
		var id ID
		if err := json.Unmarshal([]byte(bad), &id); err == nil {
			t.Errorf("%s accepted as %d", bad, id)
		}
	}
	if b, _ := json.Marshal(ID(-5)); string(b) != "-5" {
		t.Errorf("marshal %s", b)
	}
}

func TestSegmentStr(t *testing.T) {
	var s Segment
	if err := json.Unmarshal([]byte(`{"type":"image","data":{"file":"a.jpg","sub_type":0,"flash":true,"content":[{"x":1}],"name":null}}`), &s); err != nil {
		t.Fatal(err)
	}
	for key, want := range map[string]string{"file": "a.jpg", "sub_type": "0", "flash": "true", "content": "", "name": "", "missing": ""} {
		if got := s.Str(key); got != want {
			t.Errorf("Str(%q) = %q, want %q", key, got, want)
		}
	}
}

// TestSegmentsEncodeAnyText: text with control characters or runes beyond
// the basic plane (the tag characters of a flag emoji) encodes as valid
// JSON and reads back the same; the send request can be encoded.
func TestSegmentsEncodeAnyText(t *testing.T) {
	for _, text := range []string{"🏴󠁧󠁢󠁥󠁮󠁧󠁿 flag", "bell\a tab\t nul\x00 end", "<b>&amp;</b>", "\u2028line"} {
		seg := NewSegment("text", "text", text)
		if !json.Valid(seg.Data.Get("text")) {
			t.Errorf("%q encodes as invalid JSON: %s", text, seg.Data.Get("text"))
		}
		if got := seg.Str("text"); got != text {
			t.Errorf("read back %q, want %q", got, text)
		}
		if _, err := json.Marshal(map[string]any{"message": []Segment{seg}}); err != nil {
			t.Errorf("a send with %q cannot be encoded: %v", text, err)
		}
	}
}

func TestParseMessageForms(t *testing.T) {
	tests := []struct {
		in    string
		types []string
		err   bool
	}{
		{`[{"type":"text","data":{"text":"hi"}},{"type":"at","data":{"qq":123}}]`, []string{"text", "at"}, false},
		{`{"type":"face","data":{"id":"1"}}`, []string{"face"}, false},
		{`"hi[CQ:at,qq=123]"`, []string{"text", "at"}, false},
		{`[1, "x", {"type":"text","data":{"text":"ok"}}, {"data":{}}]`, []string{"text"}, false},
		{`null`, nil, false},
		{`42`, nil, true},
		{`{"data":{}}`, nil, true},
	}
	for _, tt := range tests {
		segs, err := parseMessage(json.RawMessage(tt.in), false)
		if (err != nil) != tt.err {
			t.Errorf("%s: err %v", tt.in, err)
			continue
		}
		var types []string
		for _, s := range segs {
			types = append(types, s.Type)
		}
		if diff := cmp.Diff(tt.types, types); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tt.in, diff)
		}
	}
}

func TestCQEscaping(t *testing.T) {
	const text = "价格[含税],A&B"
	if got := EscapeText(text); got != "价格&#91;含税&#93;,A&amp;B" {
		t.Errorf("text: %q", got)
	}
	if got := escapeParam(text); got != "价格&#91;含税&#93;&#44;A&amp;B" {
		t.Errorf("param: %q", got)
	}
	if got := unescape("&amp;#91;"); got != "&#91;" {
		t.Errorf("&amp; must be unescaped last: %q", got)
	}
	if got := unescape(escapeParam(text)); got != text {
		t.Errorf("round trip: %q", got)
	}
}

func TestParseCQ(t *testing.T) {
	segs := parseCQ("hi &#91;x&#93; [CQ:at,qq=123,name=A&#44;B][CQ:share,url=http://a?b=c&amp;d=e] [CQ:at,qq=1")
	if len(segs) != 4 {
		t.Fatalf("segments %+v", segs)
	}
	if segs[0].Str("text") != "hi [x] " || segs[1].Str("qq") != "123" || segs[1].Str("name") != "A,B" {
		t.Errorf("first %+v %+v", segs[0], segs[1])
	}
	if segs[2].Type != "share" || segs[2].Str("url") != "http://a?b=c&d=e" {
		t.Errorf("a value may hold '=': %+v", segs[2])
	}
	if segs[3].Str("text") != " [CQ:at,qq=1" {
		t.Errorf("an unclosed code is text: %q", segs[3].Str("text"))
	}
	if got := formatCQ(parseCQ("a[CQ:image,file=x.jpg,url=u?a=1&amp;b=2]b")); got != "a[CQ:image,file=x.jpg,url=u?a=1&amp;b=2]b" {
		t.Errorf("format %q", got)
	}
}

func FuzzParseCQ(f *testing.F) {
	f.Add("hi[CQ:at,qq=123]x")
	f.Add("[CQ:,a=b][CQ:x]&amp;#91;")
	f.Add("[CQ:image,file=a&#44;b,url=]")
	f.Add("[CQ:at,qq=123,name=张三]hi[CQ:at,name=A&#44;B,qq=4][CQ:forward,res_id=r1][CQ:forward,forward_id=f1]")
	f.Fuzz(func(t *testing.T, s string) {
		segs := parseCQ(s)
		again := parseCQ(formatCQ(segs))
		if formatCQ(again) != formatCQ(segs) {
			t.Fatalf("not stable: %q -> %q -> %q", s, formatCQ(segs), formatCQ(again))
		}
	})
}

func FuzzParseMessage(f *testing.F) {
	f.Add(`[{"type":"text","data":{"text":"hi"}}]`)
	f.Add(`"[CQ:at,qq=1]"`)
	f.Add(`{"type":"forward","data":{"id":"x","content":[{"message":[]}]}}`)
	f.Add(`[{"type":"reply","data":{"id":"-5"}},{"type":"at","data":{"qq":"3300000001"}},{"type":"text","data":{"text":" q"}}]`)
	f.Add(`[{"type":"forward","data":{"res_id":"r1"}},{"type":"forward","data":{"forward_id":12}},{"type":"at","data":{"qq":"1","name":"x"}}]`)
	f.Add(`"[CQ:at,qq=3300000001,name=bot] [CQ:forward,res_id=r1]"`)
	f.Fuzz(func(t *testing.T, raw string) {
		segs, _ := parseMessage(json.RawMessage(raw), false)
		var m msg.Message
		fill(&m, segs, 0, 3300000001)
	})
}

func event(t *testing.T, s string) Event {
	t.Helper()
	ev, err := DecodeEvent([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	return ev
}

func TestGroupMessageEvent(t *testing.T) {
	ev := event(t, `{
	  "time": 1774420200, "self_id": 3300000001, "post_type": "message", "message_type": "group",
	  "sub_type": "normal", "message_id": "-1288031235", "user_id": 10001, "group_id": 123456,
	  "sender": {"user_id": 10001, "nickname": "Alice", "card": "管理员]\n[QQ 群主"},
	  "message": [
	    {"type": "reply", "data": {"id": "-5"}},
	    {"type": "at", "data": {"qq": "20002"}},
	    {"type": "text", "data": {"text": " "}},
	    {"type": "at", "data": {"qq": 3300000001, "name": "助手"}},
	    {"type": "text", "data": {"text": " 看看这个 "}},
	    {"type": "image", "data": {"file": "a.jpg", "url": "https://x/a.jpg", "sub_type": 0}},
	    {"type": "at", "data": {"qq": "all"}},
	    {"type": "forward", "data": {"id": "res123"}},
	    {"type": "dice", "data": {"result": 3}}
	  ]
	}`)
	m, err := ev.ToMessage(msg.DefaultAccount, 0)
	if err != nil {
		t.Fatal(err)
	}
	if m.ID != "-1288031235" || m.Peer != (msg.Peer{Kind: msg.Group, ID: "123456"}) || m.Sender.ID != "10001" {
		t.Errorf("ids %+v", m)
	}
	if m.Sender.Name != "管理员) (QQ 群主" {
		t.Errorf("name %q", m.Sender.Name)
	}
	if m.Text != "@助手 看看这个 [图片]@全体成员[合并转发][dice]" {
		t.Errorf("text %q", m.Text)
	}
	if m.ReplyTo != "-5" || !m.AtAll || len(m.ForwardIDs) != 1 || m.ForwardIDs[0] != "res123" {
		t.Errorf("reply %q atAll %v forwards %v", m.ReplyTo, m.AtAll, m.ForwardIDs)
	}
	if diff := cmp.Diff([]msg.UserID{"3300000001"}, m.Mentions); diff != "" {
		t.Errorf("mentions: the at after the reply is QQ's own and @all never counts (-want +got):\n%s", diff)
	}
	if !m.Mentioned("3300000001") || !m.Time.Equal(time.Unix(1774420200, 0)) {
		t.Errorf("mentioned %v time %v", m.Mentioned("3300000001"), m.Time)
	}
}

func TestPrivateStringEvent(t *testing.T) {
	ev := event(t, `{"time":1,"self_id":1,"post_type":"message","message_type":"private","message_id":7,"user_id":42,
	  "sender":{"user_id":42,"nickname":""},"message":"你好[CQ:face,id=14]&#91;ok&#93;"}`)
	m, err := ev.ToMessage("work", 0)
	if err != nil {
		t.Fatal(err)
	}
	if m.Peer != (msg.Peer{Kind: msg.Direct, ID: "42"}) || m.Account != "work" || m.Sender.Name != "42" || m.Text != "你好[表情][ok]" {
		t.Errorf("%+v", m)
	}
}

func TestRawMessageFallback(t *testing.T) {
	ev := event(t, `{"post_type":"message","message_type":"private","user_id":5,"message":42,"raw_message":"from raw"}`)
	m, err := ev.ToMessage(msg.DefaultAccount, 1)
	if err != nil || m.Text != "from raw" {
		t.Errorf("%q %v", m.Text, err)
	}
}

func TestRefusedEvents(t *testing.T) {
	tests := []struct {
		json string
		self ID
		want error
	}{
		{`{"post_type":"message_sent","message_type":"group","group_id":1,"user_id":9}`, 9, ErrSelf},
		{`{"post_type":"message","message_type":"private","user_id":9,"self_id":9}`, 0, ErrSelf},
		{`{"post_type":"message","message_type":"group","group_id":284840486,"user_id":5}`, 9, errPlaceholder},
		{`{"post_type":"meta_event","meta_event_type":"heartbeat"}`, 9, ErrNotMessage},
		{`{"post_type":"notice","notice_type":"group_recall"}`, 9, ErrNotMessage},
	}
	for _, tt := range tests {
		if _, err := event(t, tt.json).ToMessage(msg.DefaultAccount, tt.self); !errors.Is(err, tt.want) {
			t.Errorf("%s: %v, want %v", tt.json, err, tt.want)
		}
	}
	if _, err := event(t, `{"post_type":"message","message_type":"channel","user_id":5}`).ToMessage(msg.DefaultAccount, 9); err == nil {
		t.Error("an unknown message type must be an error")
	}
	if _, err := DecodeEvent([]byte(`{"time":"soon"}`)); err == nil {
		t.Error("a bad frame must be an error")
	}
}

// FuzzFrame feeds arbitrary WebSocket frames through the decoding a
// connection does: no panic, and an event is never also an answer.
func FuzzFrame(f *testing.F) {
	f.Add(`{"post_type":"message","message_type":"group","group_id":"-1","message_id":1.5e3,"user_id":"abc","message":[{"type":"text","data":{"text":"\u0000x"}},3]}`)
	f.Add(`{"status":"ok","retcode":0,"data":{"message_id":1},"echo":"1:2"}`)
	f.Add(`{"post_type":"meta_event","meta_event_type":"heartbeat","interval":5000}`)
	f.Add(`[1,2]`)
	f.Fuzz(func(t *testing.T, frame string) {
		ev, response := Classify([]byte(frame))
		if response && ev != nil {
			t.Fatal("a frame is an event or an answer, not both")
		}
		if ev != nil {
			if m, err := ev.ToMessage("default", 3300000001); err == nil && m.Peer.Kind == msg.Group && m.Peer.ID == PlaceholderGroup.String() {
				t.Fatal("the placeholder group became a chat")
			}
		}
	})
}

// TestRequestEncodesAsAMap: an action request encodes as the map of its
// fields did, key for key and byte for byte.
func TestRequestEncodesAsAMap(t *testing.T) {
	params := map[string]any{"group_id": 1, "message": []Segment{NewSegment("text", "text", "<a&b> \u2028")}}
	for _, p := range []any{params, struct{}{}, "x"} {
		got, err := json.Marshal(Request{Action: "send_group_msg", Echo: "3:<7>", Params: p})
		if err != nil {
			t.Fatal(err)
		}
		want, _ := json.Marshal(map[string]any{"action": "send_group_msg", "params": p, "echo": "3:<7>"})
		if string(got) != string(want) {
			t.Errorf("%s, want %s", got, want)
		}
	}
}

// TestQuoteLeavesHTMLAlone: a segment's text is sent with <, > and & as
// they are, as the Encoder with HTML escaping off wrote it.
func TestQuoteLeavesHTMLAlone(t *testing.T) {
	if got, want := string(quote("a<b>&\"c\"\n")), `"a<b>&\"c\"\n"`; got != want {
		t.Errorf("quote = %s, want %s", got, want)
	}
}
