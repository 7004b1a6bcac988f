package onebot

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/pincerbot/pincer/internal/channel/onebot/wire"
)

// checkParamsEncoding fails t unless p encodes, alone and in a request
// frame, to the bytes encoding/json gives for the map it stands for (or
// fails where encoding/json fails).
func checkParamsEncoding(t *testing.T, p messageParams) {
	t.Helper()
	want, wantErr := json.Marshal(p.asMap())
	got, err := json.Marshal(p)
	if (err != nil) != (wantErr != nil) || !bytes.Equal(got, want) {
		t.Errorf("params %+v:\n got %s (%v)\nwant %s (%v)", p, got, err, want, wantErr)
	}
	c := &Conn{prefix: "1:"}
	_, frame, err := c.request("send_group_msg", p)
	wantFrame, wantErr := json.Marshal(wire.Request{Action: "send_group_msg", Echo: "1:1", Params: p.asMap()})
	if (err != nil) != (wantErr != nil) || !bytes.Equal(frame, wantFrame) {
		t.Errorf("frame of %+v:\n got %s (%v)\nwant %s (%v)", p, frame, err, wantFrame, wantErr)
	}
}

var paramTexts = []string{
	"收到，这就回答你 问题 1",
	"line one\nline two\t\"quoted\" \\ back",
	"<b>html</b> & entities",
	"separators \u2028 and \u2029",
	"bad \xff\xfe utf-8",
	"control \x01\x1f and \x7f",
	"emoji 😀 and [CQ:face,id=1] kept as text",
	"@张三 hello @10001 and a@b.c",
	"",
}

// TestMessageParamsEncodeAsTheMap: the params of a send encode to the same
// bytes as the map they replaced, whatever the segments hold.
func TestMessageParamsEncodeAsTheMap(t *testing.T) {
	opts := outboundOptions{Mentions: true, Participants: []participant{{QQ: 10001, Name: "张三"}}}
	for _, target := range []chatTarget{{"group_id", 700000001}, {"user_id", 10001}, {"group_id", -5}, {"we\"ird", 1}, {"<", 2}} {
		for _, text := range paramTexts {
			segs := outboundSegments(text, opts)
			checkParamsEncoding(t, messageParams{target: target, message: segs})
			if _, ok := appendRequest(nil, "send_group_msg", "1:1", messageParams{target: target, message: segs}); !ok && plainKey(target.key) {
				t.Errorf("%q was left to encoding/json", text)
			}
			reply := append([]wire.Segment{wire.NewSegment("reply", "id", "123")}, segs...)
			checkParamsEncoding(t, messageParams{target: target, message: reply})
		}
		for _, segs := range [][]wire.Segment{
			nil,
			{},
			{{Type: "text"}},
			{{Type: "text", Data: map[string]json.RawMessage{}}},
			{{Type: "text", Data: map[string]json.RawMessage{"text": nil}}},
			{{Type: "text", Data: map[string]json.RawMessage{"text": {}}}},
			{{Type: "image", Data: map[string]json.RawMessage{"file": json.RawMessage(`"a"`), "url": json.RawMessage(` { "x" : [1, 2] } `), "sub": json.RawMessage(`7`)}}},
			{{Type: "text", Data: map[string]json.RawMessage{"text": json.RawMessage(`"unterminated`)}}},
			{{Type: "text", Data: map[string]json.RawMessage{"text": json.RawMessage(`"bad \q escape"`)}}},
			{{Type: "text", Data: map[string]json.RawMessage{"text": json.RawMessage(`"short \u12"`)}}},
			{{Type: "text", Data: map[string]json.RawMessage{"text": json.RawMessage(`"a" "b"`)}}},
			{{Type: "text", Data: map[string]json.RawMessage{"text": json.RawMessage("\"raw \x01 control\"")}}},
			{{Type: "text", Data: map[string]json.RawMessage{"text": json.RawMessage(`"ends in \"`)}}},
			{{Type: "te<xt", Data: map[string]json.RawMessage{"te&xt": json.RawMessage(`"x"`)}}},
			{{Type: "text", Data: map[string]json.RawMessage{"b": json.RawMessage(`"2"`), "a": json.RawMessage(`"1"`), "é": json.RawMessage(`"3"`)}}},
		} {
			checkParamsEncoding(t, messageParams{target: target, message: segs})
		}
	}
}

// FuzzMessageParamsEncodeAsTheMap: the same for any text a reply may
// have, and any raw value a segment may hold.
func FuzzMessageParamsEncodeAsTheMap(f *testing.F) {
	for _, s := range paramTexts {
		f.Add(s, `"x"`)
	}
	f.Add("x", `{"a": "<b>"}`)
	f.Add("x", `"\u2028"`)
	f.Fuzz(func(t *testing.T, text, raw string) {
		segs := outboundSegments(text, outboundOptions{Mentions: true, Participants: []participant{{QQ: 10001, Name: "张三"}}})
		segs = append(segs, wire.Segment{Type: "x", Data: map[string]json.RawMessage{"v": json.RawMessage(raw), "w": json.RawMessage(text)}})
		checkParamsEncoding(t, messageParams{target: chatTarget{"group_id", 1}, message: segs})
	})
}
