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
			{{Type: "text", Data: wire.Fields{}}},
			{{Type: "text", Data: wire.Fields{{Key: "text", Value: nil}}}},
			{{Type: "text", Data: wire.Fields{{Key: "text", Value: json.RawMessage{}}}}},
			{{Type: "image", Data: wire.Fields{{Key: "file", Value: json.RawMessage(`"a"`)}, {Key: "url", Value: json.RawMessage(` { "x" : [1, 2] } `)}, {Key: "sub", Value: json.RawMessage(`7`)}}}},
			{{Type: "text", Data: wire.Fields{{Key: "text", Value: json.RawMessage(`"unterminated`)}}}},
			{{Type: "text", Data: wire.Fields{{Key: "text", Value: json.RawMessage(`"bad \q escape"`)}}}},
			{{Type: "text", Data: wire.Fields{{Key: "text", Value: json.RawMessage(`"short \u12"`)}}}},
			{{Type: "text", Data: wire.Fields{{Key: "text", Value: json.RawMessage(`"a" "b"`)}}}},
			{{Type: "text", Data: wire.Fields{{Key: "text", Value: json.RawMessage("\"raw \x01 control\"")}}}},
			{{Type: "text", Data: wire.Fields{{Key: "text", Value: json.RawMessage(`"ends in \"`)}}}},
			{{Type: "te<xt", Data: wire.Fields{{Key: "te&xt", Value: json.RawMessage(`"x"`)}}}},
			{{Type: "text", Data: wire.Fields{{Key: "b", Value: json.RawMessage(`"2"`)}, {Key: "a", Value: json.RawMessage(`"1"`)}, {Key: "é", Value: json.RawMessage(`"3"`)}}}},
			{{Type: "text", Data: wire.Fields{{Key: "text", Value: json.RawMessage(`"1"`)}, {Key: "a", Value: nil}, {Key: "text", Value: json.RawMessage(`"2"`)}}}},
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
		segs = append(segs, wire.Segment{Type: "x", Data: wire.Fields{{Key: "v", Value: json.RawMessage(raw)}, {Key: "w", Value: json.RawMessage(text)}}})
		checkParamsEncoding(t, messageParams{target: chatTarget{"group_id", 1}, message: segs})
	})
}
