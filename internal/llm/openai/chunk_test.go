package openai

import (
	"reflect"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3/packages/ssestream"
	"github.com/valyala/fastjson"
)

// events is a decoder of the given events.
type eventList struct {
	evs    []ssestream.Event
	i      int
	closed int
}

func (l *eventList) Next() bool {
	if l.i >= len(l.evs) {
		return false
	}
	l.i++
	return true
}
func (l *eventList) Event() ssestream.Event { return l.evs[l.i-1] }
func (l *eventList) Close() error           { l.closed++; return nil }
func (l *eventList) Err() error             { return nil }

// step is what one Next of a stream gave.
type step struct {
	ok  bool
	cur chunk
	err string
}

func readAll(next func() bool, cur func() chunk, err func() error) []step {
	var out []step
	for range 8 {
		s := step{ok: next()}
		if s.ok {
			s.cur = cur()
		} else if e := err(); e != nil {
			s.err = e.Error()
		}
		out = append(out, s)
		if !s.ok {
			break
		}
	}
	return out
}

// chunkSeeds are chunks of real and odd servers, and the shapes where
// fastjson and encoding/json part ways.
var chunkSeeds = []string{
	`{"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}`,
	`{"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"收到，这就回答你\n第二行 \"引号\" \\ \u00e9 \ud55c"},"finish_reason":null}]}`,
	`{"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`,
	`{"id":"c","choices":[],"usage":{"prompt_tokens":120,"completion_tokens":7,"total_tokens":127}}`,
	`{"choices":[{"index":0,"delta":{"role":"assistant","content":null,"reasoning_content":"想一想"},"finish_reason":null}]}`,
	`{"choices":[{"index":0,"delta":{"content":"答","refusal":null,"extra":{"x":1}},"finish_reason":null}],"usage":null}`,
	`{"id":7,"choices":[{"finish_reason":false,"index":0,"delta":{"content":"案"}}]}`,
	`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c1","type":"function","function":{"name":"now","arguments":""}}]}}]}`,
	`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":1.0,"id":2,"function":{"name":null,"arguments":"{\"a\":1}"}},null,"x",{"index":-3}]}}]}`,
	`{"choices":[{"delta":{"tool_calls":[{"index":1e2},{"index":99999999999999999999},{"index":"1"}]}}]}`,
	`{"choices":[{"delta":{"content":"a"}}],"choices":[{"finish_reason":"stop"}]}`,
	`{"Choices":[{"delta":{"content":"a"}}]}`,
	`{"choices":[{"DELTA":{"content":"a"}, "delta":{"Content":"b"}}]}`,
	`{"choices":[{"delta":{"content":"a","content":"b"}}]}`,
	`{"choiceſ":[{"delta":{"content":"a"}}]}`,
	`{"choices":[{"delta":{"content":"\ud83d\ude00 \ud800 x"}}]}`,
	`{"choices":[{"delta":{"content":"\ud800\u0041"}}]}`,
	"{\"choices\":[{\"delta\":{\"content\":\"bad \xff utf-8\"}}]}",
	"{\"choices\":[{\"delta\":{\"content\":\"control \x01\"}}]}",
	`{"choices":[{"delta":{"content":"bad \q escape"}}]}`,
	`{"choices":[{"delta":{"content":"a"}}],"created":nan}`,
	`{"choices":[{"delta":{"content":"a"}}],"created":01}`,
	`{"choices":[{"delta":{"content":"a"}}]} trailing`,
	`{"choices":[{"delta":{"content":"a"`,
	`{"error":{"message":"overloaded","type":"server_error"}}`,
	`{"err\u006fr":{"message":"escaped"}}`,
	`{"choices":[],"error":null}`,
	`{"usage":"many"}`,
	`{"usage":[1,2]}`,
	`{"usage":true}`,
	`{"usage":{"prompt_tokens":-1,"completion_tokens":1.5}}`,
	`{"choices":{"delta":{}}}`,
	`{"choices":null}`,
	`{"choices":[null,1,{"delta":null,"finish_reason":7}]}`,
	`{"choices":[{"delta":{"tool_calls":null}},{"delta":{"tool_calls":{}}}]}`,
	`[]`,
	`"x"`,
	`null`,
	`  {"choices" : [ { "delta" : { "content" : "spaced" } } ] }  `,
	`{"ch\u006fices":[{"delta":{"content":"escaped key"}}]}`,
	`{"choices":[{"delta":{"content":"a"}}],"deep":` + strings.Repeat("[", 400) + strings.Repeat("]", 400) + `}`,
	`[DONE]`,
	``,
}

// FuzzChunkStreamMatchesTheSDK: whatever the server sends, the stream
// gives the chunks, the end and the error the SDK's own Stream would.
func FuzzChunkStreamMatchesTheSDK(f *testing.F) {
	for _, s := range chunkSeeds {
		f.Add(s, "")
	}
	f.Add(`{"choices":[]}`, "thread.run")
	f.Add(`{"choices":[{"delta":{"content":"a"}}]}`, "message")
	f.Fuzz(func(t *testing.T, data, typ string) {
		evs := []ssestream.Event{{Type: typ, Data: []byte(data + "\n")}, {Data: []byte(`{"choices":[{"delta":{"content":"next"}}]}` + "\n")}}
		sdkDec, ourDec := &eventList{evs: evs}, &eventList{evs: evs}
		sdk := ssestream.NewStream[chunk](sdkDec, nil)
		ours := newChunkStream(ourDec, nil)
		want := readAll(sdk.Next, sdk.Current, sdk.Err)
		got := readAll(ours.Next, ours.Current, ours.Err)
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%q (%q):\n got %+v\nwant %+v", data, typ, got, want)
		}
		if ourDec.closed != sdkDec.closed {
			t.Errorf("closed %d times, the SDK %d", ourDec.closed, sdkDec.closed)
		}
	})
}

// TestPlainChunksTakeTheFastDecoder: the chunks real servers send are
// decoded by fastjson, not handed to the SDK (which the fuzz test alone
// would not notice).
func TestPlainChunksTakeTheFastDecoder(t *testing.T) {
	var p fastjson.Parser
	for _, s := range chunkSeeds[:9] {
		var c chunk
		if !c.decodeFast(&p, []byte(s)) {
			t.Errorf("not decoded fast: %s", s)
		}
	}
}
