package openai

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"sync"
	"unsafe"

	"github.com/pincerbot/pincer/internal/llm"
)

// The request body is encoded by hand (see appendBody), and the streamed
// chunks decoded from plain structs with encoding/json, rather than
// through the SDK's params and chunk types: their reflective codec cost
// twice the time and memory of the rest of a call (see BenchmarkStream).
// The request is sent as the SDK sent it (auth, headers, errors; see api)
// and the stream framed as the SDK frames it (events, [DONE], error
// events); TestBodyMatchesTheSDK holds the two encodings of a request to
// the same JSON.

// imageURL is an image part's picture, sent inline as a data URL.
type imageURL llm.Image

// MarshalJSON encodes the image as {"url":"data:<mime>;base64,<data>"},
// its base64 written once into a buffer of the exact size.
func (u *imageURL) MarshalJSON() ([]byte, error) {
	mime := u.MIME
	if !plainJSON(u.MIME) {
		quoted, err := json.Marshal(u.MIME)
		if err != nil {
			return nil, fmt.Errorf("image MIME type: %w", err)
		}
		mime = string(quoted[1 : len(quoted)-1])
	}
	b := make([]byte, 0, len(imageURLHead)+len(mime)+len(imageURLMid)+base64.StdEncoding.EncodedLen(len(u.Data))+len(imageURLTail))
	b = append(b, imageURLHead...)
	b = append(b, mime...)
	b = append(b, imageURLMid...)
	b = base64.StdEncoding.AppendEncode(b, u.Data)
	return append(b, imageURLTail...), nil
}

const (
	imageURLHead = `{"url":"data:`
	imageURLMid  = `;base64,`
	imageURLTail = `"}`
)

// plainJSON reports a string that needs no escapes inside JSON quotes.
func plainJSON(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}

type chatFunction struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// schemas keeps the encoded parameters of the tools seen, by the identity
// of their Parameters map: a tool is declared once and offered in every
// turn, and encoding its schema (a tree of maps, their keys sorted each
// time) cost more than the rest of the request. A map is held with its
// encoding, so its address cannot be reused by another while it is kept.
type schemas struct {
	mu   sync.Mutex
	byID map[unsafe.Pointer]schema
}

type schema struct {
	params map[string]any
	raw    json.RawMessage
}

// maxSchemas bounds the schemas kept, should a caller build its tools'
// maps anew for every request.
const maxSchemas = 1024

// encode returns params as JSON, as encoding/json writes it without HTML
// escapes; nil for none.
func (c *schemas) encode(params map[string]any) (json.RawMessage, error) {
	if params == nil {
		return nil, nil
	}
	id := reflect.ValueOf(params).UnsafePointer()
	c.mu.Lock()
	s, ok := c.byID[id]
	c.mu.Unlock()
	if ok {
		return s.raw, nil
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(params); err != nil {
		return nil, err
	}
	raw := json.RawMessage(bytes.TrimSuffix(buf.Bytes(), []byte("\n")))
	c.mu.Lock()
	if c.byID == nil || len(c.byID) >= maxSchemas {
		c.byID = make(map[unsafe.Pointer]schema)
	}
	c.byID[id] = schema{params: params, raw: raw}
	c.mu.Unlock()
	return raw, nil
}

// bodySize estimates the encoded size of req's body: its texts, with
// room for the JSON around them and the escapes in them, and its images
// in base64.
func bodySize(req llm.Request) int {
	n := 256 + len(req.System) + len(req.Model)
	images := 0
	for _, m := range req.Messages {
		n += 64 + len(m.Text)
		for _, c := range m.ToolCalls {
			n += 96 + len(c.Name) + len(c.Arguments)
		}
		for _, img := range m.Images {
			images += 96 + len(img.MIME) + base64.StdEncoding.EncodedLen(len(img.Data))
		}
	}
	n += 512 * len(req.Tools)
	return n + n/8 + images
}

// chunk is the part of a streamed chat.completion.chunk the provider
// reads.
type chunk struct {
	Choices []chunkChoice `json:"choices"`
	// Usage comes in a last chunk from servers that send it (OpenAI only
	// when asked; DeepSeek, Qwen and others always).
	Usage *chunkUsage `json:"usage"`
}

type chunkChoice struct {
	Delta        chunkDelta `json:"delta"`
	FinishReason string     `json:"finish_reason"`
}

type chunkDelta struct {
	Content string `json:"content"`
	// ReasoningContent is DeepSeek's and Qwen's thinking.
	ReasoningContent string          `json:"reasoning_content"`
	ToolCalls        []chunkToolCall `json:"tool_calls"`
}

type chunkToolCall struct {
	Index    int          `json:"index"`
	ID       string       `json:"id"`
	Function chatFunction `json:"function"`
}

type chunkUsage struct {
	PromptTokens     int64 `json:"prompt_tokens"`
	CompletionTokens int64 `json:"completion_tokens"`
}

// UnmarshalJSON decodes a chunk leniently, as the SDK does: a field of an
// unexpected type (a compatible server's number for a string) is left
// empty instead of failing the stream; malformed JSON still fails it.
func (c *chunk) UnmarshalJSON(data []byte) error {
	type plain chunk
	err := json.Unmarshal(data, (*plain)(c))
	if _, wrongType := errors.AsType[*json.UnmarshalTypeError](err); wrongType {
		return nil
	}
	return err
}

// newStreaming sends req and returns its chunk stream, as the SDK's
// Chat.Completions.NewStreaming would.
func (p *Provider) newStreaming(ctx context.Context, req llm.Request) *chunkStream {
	// Not recycled: the transport may still be writing a body after the
	// response arrived. Sized once, from the texts it carries.
	var raw *http.Response
	body, err := p.appendBody(make([]byte, 0, bodySize(req)), req)
	if err != nil {
		err = fmt.Errorf("encode request: %w", err)
	} else {
		raw, err = p.client.post(ctx, "chat/completions", "application/json", body)
	}
	return newChunkStream(newSSEDecoder(raw), err)
}
