package openai

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pincerbot/pincer/internal/llm"
)

// cannedStream answers every request in memory with a short streamed
// reply, after reading its body; it notes when the body was read.
type cannedStream struct {
	start   time.Time
	toReq   atomic.Int64 // ns from start to the body read, summed
	reqs    atomic.Int64
	payload []byte
}

func (c *cannedStream) RoundTrip(r *http.Request) (*http.Response, error) {
	if _, err := io.Copy(io.Discard, r.Body); err != nil {
		return nil, err
	}
	r.Body.Close()
	c.toReq.Add(int64(time.Since(c.start)))
	c.reqs.Add(1)
	return &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"text/event-stream"}},
		Body: io.NopCloser(bytes.NewReader(c.payload)), Request: r}, nil
}

const cannedSSE = `data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}

data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"收到，这就回答你"},"finish_reason":null}]}

data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}

data: [DONE]

`

// benchRequest is the size of a group turn: a system prompt, a few
// earlier turns and two tools.
func benchRequest() llm.Request {
	req := llm.Request{Model: "bench", System: strings.Repeat("你是群聊里的助手，回答要简短。", 60), MaxTokens: 1024}
	for i := range 6 {
		req.Messages = append(req.Messages, llm.Message{Role: llm.RoleUser, Text: "[群聊 某某(12345)]: 明天几点集合？还有谁去？" + strings.Repeat("嗯", i)},
			llm.Message{Role: llm.RoleAssistant, Text: "明天九点在东门集合。"})
	}
	req.Messages = append(req.Messages, llm.Message{Role: llm.RoleUser, Text: "[群聊 某某(12345)]: @bot 今天天气怎么样？"})
	schema := map[string]any{"type": "object", "properties": map[string]any{
		"count": map[string]any{"type": "integer", "description": "how many"},
		"chat":  map[string]any{"type": "string", "description": "which chat"},
	}, "required": []any{"chat"}}
	req.Tools = []llm.Tool{{Name: "onebot_get_history", Description: "Read the chat's recent messages.", Parameters: schema},
		{Name: "onebot_get_group_members", Description: "List the group's members.", Parameters: schema}}
	return req
}

// BenchmarkStream runs whole streamed calls against an in-memory
// transport: the provider's own cost, without a network. to-request-µs
// is the time from the call to the server having read the request body.
func BenchmarkStream(b *testing.B) {
	c := &cannedStream{payload: []byte(cannedSSE)}
	p := New("sim", llm.Endpoint{BaseURL: "http://model.invalid/v1", APIKey: "k", HTTPClient: &http.Client{Transport: c}})
	req := benchRequest()
	ctx := context.Background()
	b.ReportAllocs()
	var total time.Duration
	for b.Loop() {
		c.start = time.Now()
		for ev, err := range p.Stream(ctx, req) {
			if err != nil {
				b.Fatal(err)
			}
			_ = ev
		}
		total += time.Since(c.start)
	}
	b.ReportMetric(float64(c.toReq.Load())/float64(c.reqs.Load())/1e3, "to-request-µs")
}
