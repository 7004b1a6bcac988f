package openai

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/shared"

	"github.com/pincerbot/pincer/internal/llm"
	"github.com/pincerbot/pincer/internal/llm/llmtest"
)

// sdkParams builds req as the SDK's own params: the oracle the encoded
// body must match.
func sdkParams(p *Provider, req llm.Request) sdk.ChatCompletionNewParams {
	msgs := make([]sdk.ChatCompletionMessageParamUnion, 0, len(req.Messages)+1)
	if req.System != "" {
		msgs = append(msgs, sdk.SystemMessage(req.System))
	}
	for _, m := range req.Messages {
		switch m.Role {
		case llm.RoleAssistant:
			if len(m.ToolCalls) == 0 {
				msgs = append(msgs, sdk.AssistantMessage(m.Text))
				continue
			}
			a := sdk.ChatCompletionAssistantMessageParam{}
			if m.Text != "" {
				a.Content.OfString = sdk.String(m.Text)
			}
			for _, c := range m.ToolCalls {
				a.ToolCalls = append(a.ToolCalls, sdk.ChatCompletionMessageToolCallUnionParam{
					OfFunction: &sdk.ChatCompletionMessageFunctionToolCallParam{
						ID:       c.ID,
						Function: sdk.ChatCompletionMessageFunctionToolCallFunctionParam{Name: c.Name, Arguments: c.Arguments},
					},
				})
			}
			msgs = append(msgs, sdk.ChatCompletionMessageParamUnion{OfAssistant: &a})
		case llm.RoleTool:
			msgs = append(msgs, sdk.ToolMessage(m.Text, m.ToolCallID))
		default:
			if len(m.Images) == 0 {
				msgs = append(msgs, sdk.UserMessage(m.Text))
				continue
			}
			var parts []sdk.ChatCompletionContentPartUnionParam
			if m.Text != "" {
				parts = append(parts, sdk.TextContentPart(m.Text))
			}
			for _, img := range m.Images {
				parts = append(parts, sdk.ImageContentPart(sdk.ChatCompletionContentPartImageImageURLParam{
					URL: "data:" + img.MIME + ";base64," + base64.StdEncoding.EncodeToString(img.Data),
				}))
			}
			msgs = append(msgs, sdk.UserMessage(parts))
		}
	}
	params := sdk.ChatCompletionNewParams{Model: req.Model, Messages: msgs}
	for _, t := range req.Tools {
		params.Tools = append(params.Tools, sdk.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{
			Name: t.Name, Description: sdk.String(t.Description), Parameters: shared.FunctionParameters(t.Parameters),
		}))
	}
	if llm.ThinkingBudget(req.Thinking) > 0 {
		params.ReasoningEffort = shared.ReasoningEffort(req.Thinking)
	}
	if p.askUsage {
		params.StreamOptions = sdk.ChatCompletionStreamOptionsParam{IncludeUsage: sdk.Bool(true)}
	}
	if req.MaxTokens > 0 {
		if p.legacyMaxTokens {
			params.MaxTokens = sdk.Int(int64(req.MaxTokens))
		} else {
			params.MaxCompletionTokens = sdk.Int(int64(req.MaxTokens))
		}
	}
	return params
}

func decoded(t *testing.T, v any) map[string]any {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// decodedBody is a request body as JSON values.
func decodedBody(t *testing.T, body []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(body, &m); err != nil {
		t.Fatalf("%v: %s", err, body)
	}
	return m
}

// requestKinds are requests of every kind of turn.
func requestKinds() map[string]llm.Request {
	tools := benchRequest().Tools
	return map[string]llm.Request{
		"group turn": benchRequest(),
		"bare":       {Model: "m", Messages: []llm.Message{{Role: llm.RoleUser, Text: ""}}},
		"tool round": {Model: "m", System: "s <b>&</b>", Tools: tools, Thinking: "high", MaxTokens: 7, Messages: []llm.Message{
			{Role: llm.RoleUser, Text: "查一下"},
			{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "c1", Name: "onebot_get_history", Arguments: `{"chat":"1"}`}, {ID: "c2", Name: "x", Arguments: "{}"}}},
			{Role: llm.RoleTool, ToolCallID: "c1", Text: `{"status":"ok"}`},
			{Role: llm.RoleTool, ToolCallID: "c2", Text: ""},
			{Role: llm.RoleAssistant, Text: "先看看", ToolCalls: []llm.ToolCall{{ID: "c3", Name: "x", Arguments: "{}"}}},
			{Role: llm.RoleTool, ToolCallID: "c3", Text: "done"},
			{Role: llm.RoleAssistant, Text: ""},
		}},
		"thinking off":   {Model: "m", Thinking: "off", Messages: []llm.Message{{Role: llm.RoleUser, Text: "x"}}},
		"tool no schema": {Model: "m", Tools: []llm.Tool{{Name: "now"}}, Messages: []llm.Message{{Role: llm.RoleUser, Text: "x"}}},
		"schema with markup": {Model: "m", Tools: []llm.Tool{{Name: "html", Parameters: map[string]any{
			"type": "object", "properties": map[string]any{"q": map[string]any{"type": "string", "description": "<a> & \"b\" 查"}},
		}}}, Messages: []llm.Message{{Role: llm.RoleUser, Text: "x"}}},
		"images": {Model: "m", System: "s", Messages: []llm.Message{
			{Role: llm.RoleUser, Text: "看这张图 <b>", Images: []llm.Image{{MIME: "image/png", Data: pngBytes}}},
			{Role: llm.RoleAssistant, Text: "一只猫"},
			{Role: llm.RoleUser, Images: []llm.Image{{MIME: "image/jpeg", Data: bytes.Repeat([]byte{0xff, 0xd8, 0x00}, 700)}, {MIME: "image/webp", Data: []byte{}}}},
			{Role: llm.RoleUser, Text: "and this?", Images: []llm.Image{{MIME: "image/gif", Data: []byte("GIF89a")}}},
		}},
		"odd MIME": {Model: "m", Messages: []llm.Message{{Role: llm.RoleUser, Images: []llm.Image{{MIME: "image/<x>\"&\n", Data: []byte("x")}}}}},
		"escapes everywhere": {Model: "m\"<", System: "\u2028\x00", Thinking: "medium", Messages: []llm.Message{
			{Role: llm.RoleUser, Text: "bad \xff utf8 \t"},
			{Role: llm.RoleAssistant, Text: "<&>", ToolCalls: []llm.ToolCall{{ID: "\"", Name: "\\", Arguments: "{\"a\":\"<b>\"}"}}},
			{Role: llm.RoleTool, ToolCallID: "c\u2029", Text: ""},
		}},
	}
}

// TestBodyMatchesTheSDK holds the hand-encoded request to the JSON the
// SDK's params make of the same request, for every kind of turn.
func TestBodyMatchesTheSDK(t *testing.T) {
	for name, req := range requestKinds() {
		for _, legacy := range []bool{false, true} {
			p := &Provider{legacyMaxTokens: legacy, askUsage: !legacy}
			want := decoded(t, sdkParams(p, req))
			want["stream"] = true // what NewStreaming adds
			// Twice: the second time the tools' schemas are the kept ones.
			for range 2 {
				body, err := p.appendBody(nil, req)
				if err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(want, decodedBody(t, body)); diff != "" {
					t.Errorf("%s (legacy %v): body differs from the SDK's (-sdk +ours):\n%s", name, legacy, diff)
				}
			}
		}
	}
}

// pngBytes is the start of a PNG file: bytes whose base64 has every
// kind of character.
var pngBytes = []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\xfb\xff\xfe")

// TestUserImagesAreContentParts: a user turn with images is sent with
// its content as parts, the text first (none when it is empty), then
// each image as a data URL; a turn without images keeps its content a
// plain string, byte for byte as before.
func TestUserImagesAreContentParts(t *testing.T) {
	bodies := make(chan []byte, 1)
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		bodies <- b
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"ok\"},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n")
	}))
	defer s.Close()
	p := New("openai", llm.Endpoint{BaseURL: s.URL + "/v1"})
	req := llm.Request{Model: "gpt-4o", Messages: []llm.Message{
		{Role: llm.RoleUser, Text: "plain"},
		{Role: llm.RoleUser, Text: "看 <this>", Images: []llm.Image{{MIME: "image/png", Data: pngBytes}, {MIME: "image/jpeg", Data: []byte{0xff, 0xd8, 0xff}}}},
		{Role: llm.RoleUser, Images: []llm.Image{{MIME: "image/gif", Data: []byte("GIF89a")}}},
	}}
	if _, _, _, err := llmtest.Collect(p.Stream(t.Context(), req)); err != nil {
		t.Fatal(err)
	}
	body := string(<-bodies)
	png := base64.StdEncoding.EncodeToString(pngBytes)
	want := `"messages":[{"role":"user","content":"plain"},` +
		`{"role":"user","content":[{"type":"text","text":"看 <this>"},` +
		`{"type":"image_url","image_url":{"url":"data:image/png;base64,` + png + `"}},` +
		`{"type":"image_url","image_url":{"url":"data:image/jpeg;base64,/9j/"}}]},` +
		`{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:image/gif;base64,R0lGODlh"}}]}],`
	if !strings.Contains(body, want) {
		t.Errorf("body\n%s\nlacks\n%s", body, want)
	}
	if !strings.ContainsAny(png, "+/") {
		t.Fatalf("%s: the test image should need base64's + or /", png)
	}
}

// TestOddImageMIMEStaysValidJSON: a MIME type that needs escapes is
// escaped, not spliced raw into the body.
func TestOddImageMIMEStaysValidJSON(t *testing.T) {
	odd := "image/\"x\\y\n"
	data, err := json.Marshal((*imageURL)(&llm.Image{MIME: odd, Data: []byte{1, 2, 3}}))
	if err != nil {
		t.Fatal(err)
	}
	var got struct{ URL string }
	if err := json.Unmarshal(data, &got); err != nil {
		t.Fatalf("%s: %v", data, err)
	}
	if want := "data:" + odd + ";base64,AQID"; got.URL != want {
		t.Errorf("url %q, want %q", got.URL, want)
	}
}

// sse serves the given data lines as one streamed answer.
func sse(t *testing.T, lines ...string) *Provider {
	t.Helper()
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for _, l := range lines {
			fmt.Fprintf(w, "data: %s\n\n", l)
		}
	}))
	t.Cleanup(s.Close)
	return New("compat", llm.Endpoint{BaseURL: s.URL + "/v1"})
}

// TestChunksOfOddServersAreReadLeniently: a field of an unexpected type
// (null, a number where a string belongs) is read as empty, as the SDK's
// own decoder would, and the rest of the chunk still counts.
func TestChunksOfOddServersAreReadLeniently(t *testing.T) {
	p := sse(t,
		`{"choices":[{"index":0,"delta":{"role":"assistant","content":null,"reasoning_content":"想一想"},"finish_reason":null}]}`,
		`{"choices":[{"index":0,"delta":{"content":"答","refusal":null,"extra":{"x":1}},"finish_reason":null}],"usage":null}`,
		`{"id":7,"choices":[{"finish_reason":false,"index":0,"delta":{"content":"案"}}]}`,
		`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c1","type":"function","function":{"name":"now","arguments":""}}]}}]}`,
		`{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}`,
		`{"choices":[],"usage":{"prompt_tokens":120,"completion_tokens":7,"total_tokens":127}}`,
		`[DONE]`)
	var calls []llm.ToolCall
	var text, reasoning string
	var stop string
	var usage llm.Usage
	for ev, err := range p.Stream(t.Context(), llm.Request{Model: "m", Messages: []llm.Message{{Role: llm.RoleUser, Text: "x"}}}) {
		if err != nil {
			t.Fatal(err)
		}
		switch ev.Kind {
		case llm.EventText:
			text += ev.Text
		case llm.EventReasoning:
			reasoning += ev.Text
		case llm.EventToolCall:
			calls = append(calls, ev.ToolCall)
		case llm.EventDone:
			stop, usage = ev.StopReason, ev.Usage
		}
	}
	want := []llm.ToolCall{{ID: "c1", Name: "now", Arguments: "{}"}}
	if usage != (llm.Usage{InputTokens: 120, OutputTokens: 7}) {
		t.Errorf("usage %+v: the server's last chunk said 120 in, 7 out", usage)
	}
	if text != "答案" || reasoning != "想一想" || stop != "tool_calls" || !cmp.Equal(calls, want) {
		t.Errorf("text %q, reasoning %q, stop %q, calls %+v", text, reasoning, stop, calls)
	}
}

// TestMalformedChunkAndAbsurdToolIndexFailTheCall: broken JSON, and a
// tool call numbered so high its index would size an allocation, end the
// call with a server error rather than a panic or a huge slice.
func TestMalformedChunkAndAbsurdToolIndexFailTheCall(t *testing.T) {
	for name, line := range map[string]string{
		"broken JSON":  `{"choices":[{"delta":{"content":"a"`,
		"absurd index": `{"choices":[{"index":0,"delta":{"tool_calls":[{"index":2000000000,"id":"c","function":{"name":"x"}}]}}]}`,
		"error event":  `{"error":{"message":"overloaded","type":"server_error"}}`,
	} {
		p := sse(t, line, `[DONE]`)
		_, _, _, err := llmtest.Collect(p.Stream(t.Context(), llm.Request{Model: "m", Messages: []llm.Message{{Role: llm.RoleUser, Text: "x"}}}))
		if err == nil {
			t.Errorf("%s: the call succeeded", name)
		}
	}
}

// TestUsageAskedOfOpenAIOnly: a stream from OpenAI asks for the usage
// chunk, which OpenAI sends only when asked (and a daily token budget
// counts); a compatible server is not asked, as some refuse the field and
// the others send their counts unasked.
func TestUsageAskedOfOpenAIOnly(t *testing.T) {
	for base, want := range map[string]bool{
		"":                            true,
		"https://api.openai.com/v1":   true,
		"https://api.deepseek.com/v1": false,
		"http://127.0.0.1:11434/v1":   false,
	} {
		body, err := New("p", llm.Endpoint{BaseURL: base}).appendBody(nil, llm.Request{Model: "m", Messages: []llm.Message{{Role: llm.RoleUser, Text: "x"}}})
		if err != nil {
			t.Fatal(err)
		}
		got := decodedBody(t, body)["stream_options"]
		if want && !cmp.Equal(got, map[string]any{"include_usage": true}) || !want && got != nil {
			t.Errorf("base %q: stream_options %v, want asked %v", base, got, want)
		}
	}
}
