package wire

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// sameJSON reports whether two encoded values decode to the same value
// (both absent counts as the same).
func sameJSON(t *testing.T, a, b json.RawMessage) bool {
	t.Helper()
	if (a == nil) != (b == nil) {
		return false
	}
	if a == nil {
		return true
	}
	var x, y any
	if err := json.Unmarshal(a, &x); err != nil {
		t.Fatalf("%q: %v", a, err)
	}
	if err := json.Unmarshal(b, &y); err != nil {
		t.Fatalf("%q: %v", b, err)
	}
	return cmp.Equal(x, y)
}

var frameSeeds = []string{
	`{"self_id":3300000001,"user_id":20000272,"time":1764533538,"message_id":1000000005,"message_seq":1000000005,"real_id":1000000005,"message_type":"group","sender":{"user_id":20000272,"nickname":"Alice-71","card":"Alice","role":"member"},"raw_message":"昨天那个问题解决了没有","font":14,"sub_type":"normal","message":[{"type":"text","data":{"text":"昨天那个问题解决了没有"}}],"message_format":"array","post_type":"message","group_id":700000045}`,
	`{"post_type":"message","message_type":"group","group_id":"-1","message_id":1.5e3,"user_id":"abc","message":[{"type":"text","data":{"text":"\u0000x"}},3]}`,
	`{"status":"ok","retcode":0,"data":{"message_id":1},"echo":"1:2"}`,
	`{"post_type":"meta_event","meta_event_type":"heartbeat","interval":5000}`,
	`{"time":1764533540,"self_id":3300000001,"post_type":"notice","notice_type":"group_recall","group_id":700000045,"user_id":20000272,"operator_id":20000272,"message_id":1000000005}`,
	`{"post_type":"notice","notice_type":"friend_recall","user_id":20000272,"message_id":-7,"notice_type":7}`,
	`{"post_type":"meta_event","meta_event_type":"heartbeat","interval":5e3}`,
	`{"post_type":"message","POST_TYPE":"notice"}`,
	`{"post_type":"message","post_type":"notice"}`,
	`{"post_type":"message","raw_message":"\ud800x"}`,
	`{"post_type":"message","raw_message":"\ud83d\ude00 \u00e9"}`,
	`{"post_type":"message","sender":null,"message":null,"time":null}`,
	`{"post_type":"message","sender":{"user_id":"12","nickname":7}}`,
	`{"post_type":"message","message":"hi[CQ:at,qq=1]","self_id":"3300000001"}`,
	`{"ſub_type":"x","post_type":"message"}`,
	`{"post_type":"message","message":[{"type":"text","data":{"text":"a\\u0041\"b"}}]}`,
	"{\"post_type\":\"message\",\"raw_message\":\"\xff\"}",
	`[1,2]`,
	`{"post_type":"message" "x":1}`,
	`{"time":01}`,
	// Text fastjson's parser takes and JSON has not.
	`{"time":+1,"post_type":"message"}`,
	`{"time":.5,"post_type":"message"}`,
	`{"time":1.,"post_type":"message"}`,
	`{"time":1e,"post_type":"message"}`,
	`{"time":-,"post_type":"message"}`,
	`{"time":NaN,"post_type":"message"}`,
	`{"time":-Inf,"post_type":"message"}`,
	`{"time":nan,"post_type":"message"}`,
	`{"time":1-2,"post_type":"message"}`,
	`{"post_type":"message","raw_message":"a\xb"}`,
	`{"post_type":"message","raw_message":"a\'b"}`,
	`{"post_type":"message","message":[{"type":"text","data":{"text":"\a"}}]}`,
	`{"post_type":"message","message":[{"type":"face","data":{"id":0.5e+2}},{"type":"x","data":{"n":[-0,1E-3,true,false,null]}}]}`,
}

// TestTheFastPathTakesValidJSONOnly lists text fastjson's parser takes and
// JSON has not: decodeFast refuses each, for encoding/json to decide, and
// takes the valid frames beside them.
func TestTheFastPathTakesValidJSONOnly(t *testing.T) {
	for _, c := range []struct {
		frame string
		valid bool
	}{
		{`{"n":+1}`, false},
		{`{"n":.5}`, false},
		{`{"n":1.}`, false},
		{`{"n":1e}`, false},
		{`{"n":1e+}`, false},
		{`{"n":-}`, false},
		{`{"n":01}`, false},
		{`{"n":-01}`, false},
		{`{"n":NaN}`, false},
		{`{"n":nan}`, false},
		{`{"n":Inf}`, false},
		{`{"n":-inf}`, false},
		{`{"n":1-2}`, false},
		{`{"n":0x10}`, false},
		{`{"raw_message":"a\xb"}`, false},
		{`{"raw_message":"\'"}`, false},
		{`{"raw_message":"\u00"}`, false},
		{`{"a\qb":1}`, false},
		{`{"message":[{"type":"text","data":{"text":"\a"}}]}`, false},
		{`{"message":[{"type":"face","data":{"id":.1}}]}`, false},
		{`{"time":0}`, true},
		{`{"n":-0}`, true},
		{`{"time":1764533538}`, true},
		{`{"n":-1.25e+3}`, true},
		{`{"n":1E-3}`, true},
		{`{"n":0.0}`, true},
		{`{"raw_message":"\" \\ \/ \b \f \n \r \t \u00e9 1.5 NaN"}`, true},
		{`{"raw_message":"ends in a backslash \\","time":2}`, true},
		{`{"message":[{"type":"x","data":{"n":[true,false,null,-0.5e2]}}] , "time" : 3 }`, true},
	} {
		if json.Valid([]byte(c.frame)) != c.valid {
			t.Fatalf("%s: the case is wrong: json.Valid is %v", c.frame, !c.valid)
		}
		if _, ok := decodeFast([]byte(c.frame)); ok != c.valid {
			t.Errorf("decodeFast(%s) ok = %v, want %v", c.frame, ok, c.valid)
		}
	}
}

// FuzzFastDecode holds the fast decoding of frames to encoding/json's: it
// takes only valid JSON, and what it decodes, encoding/json decodes the
// same.
func FuzzFastDecode(f *testing.F) {
	for _, s := range frameSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, frame string) {
		got, ok := decodeFast([]byte(frame))
		if !ok {
			return
		}
		if !json.Valid([]byte(frame)) {
			t.Fatalf("invalid JSON decoded: %q", frame)
		}
		var want probe
		if err := json.Unmarshal([]byte(frame), &want); err != nil {
			t.Fatalf("decoded %q, which encoding/json refuses: %v", frame, err)
		}
		if got.decoded {
			// The message was decoded with the frame: as encoding/json
			// decodes it.
			if !sameSegments(t, got.segs, want.Message) {
				t.Fatalf("%q: segments %+v, encoding/json's differ", frame, got.segs)
			}
			got.segs, got.decoded, got.Message = nil, false, want.Message
		}
		raws := func(p *probe) []*json.RawMessage {
			return []*json.RawMessage{&p.Message, &p.Echo, &p.Status, &p.Retcode, &p.Data, &p.Wording, &p.Msg}
		}
		for i, g := range raws(&got) {
			w := raws(&want)[i]
			if !sameJSON(t, *g, *w) {
				t.Fatalf("%q: raw field %d: %q, encoding/json %q", frame, i, *g, *w)
			}
			*g, *w = nil, nil
		}
		if diff := cmp.Diff(want, got, cmp.AllowUnexported(Event{})); diff != "" {
			t.Fatalf("%q (-encoding/json +fast):\n%s", frame, diff)
		}
	})
}

// FuzzFastSegments holds the fast decoding of segment arrays to
// encoding/json's.
func FuzzFastSegments(f *testing.F) {
	for _, s := range []string{
		`[{"type":"text","data":{"text":"hi"}},{"type":"at","data":{"qq":123}}]`,
		`[{"type":"text","data":{"text":"one","text":"two"}}]`,
		`[{"TYPE":"text","Data":{"te\u0078t":"x"}},{"type":"text","data":{"text":"a"},"data":{"x":1}},1,"s"]`,
		`[{"type":"reply","data":{"id":"-5"}},{"type":"text","data":{"text":" q\u00e9\ud83d\ude00"}}]`,
		`[{"type":"text","data":null},{"type":null,"data":{}},{"type":"face"}]`,
		`[{"type":"forward","data":{"id":"x","content":[{"message":"inner"}]}}]`,
		`[{"type":"text","data":{"text":"\udc00"}}]`,
		`[]`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		if !json.Valid([]byte(raw)) {
			return
		}
		got, ok := segmentsFast([]byte(raw))
		if ok && !sameSegments(t, got, json.RawMessage(raw)) {
			t.Fatalf("%q: segments %+v, encoding/json's differ", raw, got)
		}
	})
}

// sameSegments reports whether segs are the segments encoding/json
// decodes from raw (all of them segment objects), those without a type
// left out, their data's keys in the same order.
func sameSegments(t *testing.T, got []Segment, raw json.RawMessage) bool {
	t.Helper()
	var all []Segment
	if err := json.Unmarshal(raw, &all); err != nil {
		t.Fatalf("decoded %q, which encoding/json refuses: %v", raw, err)
	}
	want := all[:0]
	for _, s := range all {
		if s.Type != "" {
			want = append(want, s)
		}
	}
	if len(got) != len(want) {
		return false
	}
	for i := range got {
		if got[i].Type != want[i].Type || len(got[i].Data) != len(want[i].Data) || (got[i].Data == nil) != (want[i].Data == nil) {
			return false
		}
		for j, f := range want[i].Data {
			if got[i].Data[j].Key != f.Key || !sameJSON(t, got[i].Data[j].Value, f.Value) {
				return false
			}
		}
	}
	return true
}

// TestFastDecodeTakesTheUsualFrame: the frames implementations send take
// the fast path; the unusual ones are left to encoding/json.
func TestFastDecodeTakesTheUsualFrame(t *testing.T) {
	for _, tc := range []struct {
		frame string
		fast  bool
	}{
		{frameSeeds[0], true},
		{`{"post_type":"message","raw_message":"\ud83d\ude00 \u00e9","sender":null}`, true},
		{`{"status":"ok","retcode":0,"data":{"message_id":1},"echo":"1:2"}`, true},
		{`{"post_type":"message","POST_TYPE":"notice"}`, false},
		{`{"post_type":"message","post_type":"notice"}`, false},
		{`{"post_type":"message","raw_message":"\ud800x"}`, false},
		{"{\"post_type\":\"message\",\"raw_message\":\"\xff\"}", false},
		{`{"time":01}`, false},
	} {
		_, fast := decodeFast([]byte(tc.frame))
		if fast != tc.fast {
			t.Errorf("%s: fast %v, want %v", tc.frame, fast, tc.fast)
		}
		ev, _ := Classify([]byte(tc.frame))
		var want probe
		if err := json.Unmarshal([]byte(tc.frame), &want); err == nil && ev != nil && ev.PostType != want.PostType {
			t.Errorf("%s: post_type %q, encoding/json %q", tc.frame, ev.PostType, want.PostType)
		}
	}
}

// TestRecallNoticesAreRead: a recall notice gives its type and the id of
// the message recalled, as QQ implementations send it.
func TestRecallNoticesAreRead(t *testing.T) {
	ev, err := DecodeEvent([]byte(frameSeeds[4]))
	if err != nil {
		t.Fatal(err)
	}
	if ev.PostType != "notice" || ev.NoticeType != "group_recall" || ev.MessageID != 1000000005 || ev.GroupID != 700000045 {
		t.Errorf("decoded %+v", ev)
	}
}
