package wire

import (
	"encoding/json"
	"testing"
)

var responseSeeds = []string{
	`{"status":"ok","retcode":0,"data":{"message_id":1843200571,"sender":{"user_id":10001,"nickname":"Alice"},"message":[{"type":"text","data":{"text":"明天几点集合？"}}]},"message":"","wording":"","echo":"3:118","stream":"normal-action"}`,
	`{"status":"failed","retcode":100,"data":null,"message":"消息不存在","wording":"消息不存在","echo":"3:119"}`,
	`{"status":"failed","retcode":1200,"msg":"SEND_MSG_API_ERROR","wording":"群消息发送失败：账号可能被风控","echo":4}`,
	`{"retcode":0,"data":[1,2,3],"echo":"x"}`,
	`{"status":"ok","retcode":"0","echo":"1"}`,
	`{"status":"ok","retcode":0.5,"echo":"1"}`,
	`{"status":5,"echo":"1"}`,
	`{"status":"ok","message":[1],"echo":"1"}`,
	`{"Status":"ok","RETCODE":0,"Data":{"a":1},"echo":"1","echo":"2"}`,
	`{"status":"ok","data":{"a":"\ud800"},"echo":"1"}`,
	`{"post_type":"message","echo":"1","status":"ok"}`,
}

// FuzzDecodeResponse holds Decode's answers to encoding/json's reading of
// the frame as a Response: an answer it returns reads the same there, and
// an answer encoding/json reads (a frame Classify took for an answer
// before) it returns.
func FuzzDecodeResponse(f *testing.F) {
	for _, s := range responseSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, frame string) {
		ev, got := Decode([]byte(frame))
		if ev != nil && got != nil {
			t.Fatal("a frame is an event or an answer, not both")
		}
		var want Response
		wantErr := json.Unmarshal([]byte(frame), &want)
		if got == nil {
			if _, isResp := classifyOnly([]byte(frame)); isResp && wantErr == nil {
				t.Fatalf("%q: encoding/json reads the answer, Decode does not", frame)
			}
			return
		}
		if wantErr != nil {
			t.Fatalf("%q: decoded an answer encoding/json refuses: %v", frame, wantErr)
		}
		if !sameJSON(t, got.Data, want.Data) || !sameJSON(t, got.Echo, want.Echo) {
			t.Fatalf("%q: data %q echo %q, encoding/json %q %q", frame, got.Data, got.Echo, want.Data, want.Echo)
		}
		if got.Status != want.Status || got.Retcode != want.Retcode || got.Message != want.Message || got.Wording != want.Wording || got.Msg != want.Msg {
			t.Fatalf("%q: %+v, encoding/json %+v", frame, *got, want)
		}
	})
}

// classifyOnly is whether the frame's probe says it is an answer, as
// Classify decided before it decoded answers.
func classifyOnly(frame []byte) (*probe, bool) {
	var p probe
	if fast, ok := decodeFast(frame); ok {
		p = fast
	} else if json.Unmarshal(frame, &p) != nil {
		return nil, false
	}
	return &p, p.PostType == "" && (p.Echo != nil || p.Status != nil || p.Retcode != nil)
}

func TestDecodeReadsAnswers(t *testing.T) {
	ev, r := Decode([]byte(responseSeeds[0]))
	if ev != nil || r == nil || r.Status != "ok" || r.Retcode != 0 || string(r.Echo) != `"3:118"` {
		t.Fatalf("%+v %+v", ev, r)
	}
	data, err := r.Result("get_msg")
	if err != nil || !sameJSON(t, data, json.RawMessage(`{"message_id":1843200571,"sender":{"user_id":10001,"nickname":"Alice"},"message":[{"type":"text","data":{"text":"明天几点集合？"}}]}`)) {
		t.Errorf("data %s, %v", data, err)
	}
	_, r = Decode([]byte(responseSeeds[2]))
	if _, err := r.Result("send_group_msg"); err == nil || r.Msg != "SEND_MSG_API_ERROR" || r.Retcode != 1200 {
		t.Errorf("failure %+v %v", r, err)
	}
	if ev, r := Decode([]byte(`{"post_type":"meta_event","meta_event_type":"heartbeat","interval":5000}`)); ev == nil || r != nil {
		t.Errorf("an event: %+v %+v", ev, r)
	}
}

// FuzzAuthor holds the fast reading of get_msg's author to encoding/json's.
func FuzzAuthor(f *testing.F) {
	for _, s := range []string{
		`{"message_id":1843200571,"user_id":10001,"sender":{"user_id":10001,"nickname":"Alice","card":"Alice-杭州"},"message":[{"type":"text","data":{"text":"x"}}]}`,
		`{"message_id":11,"sender":{"user_id":"3300000001"}}`,
		`{"user_id":7}`,
		`{"sender":null,"user_id":"-5"}`,
		`{"sender":{"user_id":1,"user_id":2}}`,
		`{"Sender":{"USER_ID":3},"user_id":4}`,
		`{"sender":5}`,
		`{"user_id":"abc"}`,
		`[1]`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data string) {
		got, ok := authorFast([]byte(data))
		if !ok {
			return
		}
		want, wantOK := authorSlow([]byte(data))
		if !wantOK || got != want {
			t.Fatalf("%q: fast %v, encoding/json %v (%v)", data, got, want, wantOK)
		}
	})
}

func TestAuthor(t *testing.T) {
	for data, want := range map[string]ID{
		`{"message_id":1,"user_id":10001,"sender":{"user_id":3300000001,"nickname":"bot"}}`: 3300000001,
		`{"message_id":11,"sender":{"user_id":"3300000001"}}`:                               3300000001,
		`{"user_id":7}`:                        7,
		`{"Sender":{"USER_ID":3},"user_id":4}`: 3,
		`{"sender":{"user_id":1,"user_id":2}}`: 2,
		`{"message":"no author"}`:              0,
	} {
		if got, ok := Author(json.RawMessage(data)); !ok || got != want {
			t.Errorf("%s: %v %v, want %v", data, got, ok, want)
		}
	}
	if _, ok := Author(json.RawMessage(`[1]`)); ok {
		t.Error("an array has no author")
	}
}
