package openai

import (
	"bytes"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/openai/openai-go/v3/packages/ssestream"
	"github.com/valyala/fastjson"
)

// chunkStream reads the chunks of a streamed answer as the SDK's
// ssestream.Stream[chunk] does, with the same results and errors, but
// decodes a plain chunk with fastjson: encoding/json checked each chunk
// twice (once around its UnmarshalJSON, once inside) and reflected over
// the struct, most of the provider's own CPU in a short reply. A chunk the
// fast decoder cannot vouch for (an error event, a key that would match a
// field only without regard to case, a repeated key, a lone surrogate, a
// thread.* event) goes through the SDK's own Stream, one event at a time.
// FuzzChunkStreamMatchesTheSDK holds the two to the same outcome.
type chunkStream struct {
	dec      ssestream.Decoder
	cur      chunk
	err      error
	done     bool
	closeErr error
	parser   *fastjson.Parser
}

var chunkParsers = sync.Pool{New: func() any { return new(fastjson.Parser) }}

// newChunkStream reads dec; err, when not nil, is the stream's error from
// the start (the request failed), as ssestream.NewStream.
func newChunkStream(dec ssestream.Decoder, err error) *chunkStream {
	return &chunkStream{dec: dec, err: err}
}

// Next moves to the next chunk; false once the stream ended ([DONE], the
// end of the body, or an error, which Err then returns).
func (s *chunkStream) Next() bool {
	if s.err != nil {
		return s.finish(s.err)
	}
	if s.done || s.dec == nil {
		return false
	}
	if !s.dec.Next() {
		return s.finish(s.dec.Err())
	}
	ev := s.dec.Event()
	if bytes.HasPrefix(ev.Data, []byte("[DONE]")) {
		return s.finish(nil)
	}
	if !strings.HasPrefix(ev.Type, "thread.") {
		if s.parser == nil {
			s.parser = chunkParsers.Get().(*fastjson.Parser)
		}
		s.cur = chunk{}
		if s.cur.decodeFast(s.parser, ev.Data) {
			return true
		}
	}
	// The SDK's own reading of this one event.
	one := ssestream.NewStream[chunk](&oneEvent{ev: ev}, nil)
	if !one.Next() {
		return s.finish(one.Err())
	}
	s.cur = one.Current()
	return true
}

// Current is the chunk Next moved to.
func (s *chunkStream) Current() chunk { return s.cur }

// Err is the error that ended the stream, nil at its end or before.
func (s *chunkStream) Err() error { return s.err }

func (s *chunkStream) finish(err error) bool {
	s.err = err
	_ = s.Close()
	return false
}

// Close releases the decoder (the response body); later calls return the
// first call's result.
func (s *chunkStream) Close() error {
	if s.done {
		return s.closeErr
	}
	s.done = true
	if s.parser != nil {
		chunkParsers.Put(s.parser)
		s.parser = nil
	}
	if s.dec != nil {
		s.closeErr = s.dec.Close()
	}
	return s.closeErr
}

// oneEvent is a decoder of a single event, for the SDK's Stream to read.
type oneEvent struct {
	ev   ssestream.Event
	read bool
}

func (o *oneEvent) Next() bool {
	if o.read {
		return false
	}
	o.read = true
	return true
}

func (o *oneEvent) Event() ssestream.Event { return o.ev }
func (o *oneEvent) Close() error           { return nil }
func (o *oneEvent) Err() error             { return nil }

// decodeFast decodes data into c, which is empty, as encoding/json would
// through chunk.UnmarshalJSON (a value of an unexpected type leaves its
// field as it was) and reports true; or reports false when it cannot be
// sure to: data is not valid JSON, not an object, or has an "error" key,
// a key that encoding/json would match to a field by folding its case, a
// field twice, a string that is not valid UTF-8, or an escaped surrogate.
func (c *chunk) decodeFast(p *fastjson.Parser, data []byte) bool {
	if surrogateEscape(data) || fastjson.ValidateBytes(data) != nil {
		return false
	}
	v, err := p.ParseBytes(data)
	if err != nil || v.Type() != fastjson.TypeObject {
		return false
	}
	return fields(v, chunkFields, func(i int, v *fastjson.Value) bool {
		switch i {
		case 0: // choices
			switch v.Type() {
			case fastjson.TypeArray:
				items := v.GetArray()
				c.Choices = make([]chunkChoice, len(items))
				for j, item := range items {
					if item.Type() == fastjson.TypeObject && !c.Choices[j].decodeFast(item) {
						return false
					}
				}
			case fastjson.TypeNull:
				c.Choices = nil
			}
			return true
		case 1: // usage
			switch v.Type() {
			case fastjson.TypeNull:
				c.Usage = nil
				return true
			case fastjson.TypeObject:
				c.Usage = &chunkUsage{}
				return fields(v, usageFields, func(i int, v *fastjson.Value) bool {
					if i == 0 {
						setInt(v, &c.Usage.PromptTokens)
					} else {
						setInt(v, &c.Usage.CompletionTokens)
					}
					return true
				})
			default:
				// encoding/json makes the pointer before it finds the
				// value does not fit.
				c.Usage = &chunkUsage{}
				return true
			}
		}
		return false // error: the SDK's stream error
	})
}

var (
	chunkFields    = []string{"choices", "usage", "error"}
	choiceFields   = []string{"delta", "finish_reason"}
	deltaFields    = []string{"content", "reasoning_content", "tool_calls"}
	toolCallFields = []string{"index", "id", "function"}
	functionFields = []string{"name", "arguments"}
	usageFields    = []string{"prompt_tokens", "completion_tokens"}
)

func (ch *chunkChoice) decodeFast(v *fastjson.Value) bool {
	return fields(v, choiceFields, func(i int, v *fastjson.Value) bool {
		if i == 1 {
			return setString(v, &ch.FinishReason)
		}
		if v.Type() != fastjson.TypeObject {
			return true
		}
		d := &ch.Delta
		return fields(v, deltaFields, func(i int, v *fastjson.Value) bool {
			switch i {
			case 0:
				return setString(v, &d.Content)
			case 1:
				return setString(v, &d.ReasoningContent)
			}
			switch v.Type() {
			case fastjson.TypeArray:
				items := v.GetArray()
				d.ToolCalls = make([]chunkToolCall, len(items))
				for j, item := range items {
					if item.Type() == fastjson.TypeObject && !d.ToolCalls[j].decodeFast(item) {
						return false
					}
				}
			case fastjson.TypeNull:
				d.ToolCalls = nil
			}
			return true
		})
	})
}

func (tc *chunkToolCall) decodeFast(v *fastjson.Value) bool {
	return fields(v, toolCallFields, func(i int, v *fastjson.Value) bool {
		switch i {
		case 0:
			var n int64
			if setInt(v, &n) && int64(int(n)) == n {
				tc.Index = int(n)
			}
			return true
		case 1:
			return setString(v, &tc.ID)
		}
		if v.Type() != fastjson.TypeObject {
			return true
		}
		f := &tc.Function
		return fields(v, functionFields, func(i int, v *fastjson.Value) bool {
			if i == 0 {
				return setString(v, &f.Name)
			}
			return setString(v, &f.Arguments)
		})
	})
}

// fields calls set with the index in names of each key of object v that
// is one of them, in order, and reports whether every call did; false
// also when a key is one of names twice, or not one of them but equal to
// one without regard to case (or not ASCII, where encoding/json's folding
// is not checked here).
func fields(v *fastjson.Value, names []string, set func(i int, v *fastjson.Value) bool) bool {
	ok := true
	var seen uint32
	v.GetObject().Visit(func(key []byte, v *fastjson.Value) {
		if !ok {
			return
		}
		i := field(key, names)
		switch {
		case i == noField:
		case i == foldedField || seen&(1<<i) != 0:
			ok = false
		default:
			seen |= 1 << i
			ok = set(i, v)
		}
	})
	return ok
}

const (
	noField     = -1
	foldedField = -2
)

func field(key []byte, names []string) int {
	for i, n := range names {
		if string(key) == n {
			return i
		}
	}
	for _, b := range key {
		if b >= utf8.RuneSelf {
			return foldedField
		}
	}
	for _, n := range names {
		if bytes.EqualFold(key, []byte(n)) {
			return foldedField
		}
	}
	return noField
}

// setString sets *dst to v when it is a string; another value leaves
// *dst as it is. It reports false for a string that is not valid UTF-8
// (encoding/json replaces its bad bytes).
func setString(v *fastjson.Value, dst *string) bool {
	if v.Type() != fastjson.TypeString {
		return true
	}
	b, _ := v.StringBytes()
	if !utf8.Valid(b) {
		return false
	}
	*dst = string(b)
	return true
}

// setInt sets *dst to v when it is a number written as an integer that
// fits, as encoding/json does, and reports whether it did.
func setInt(v *fastjson.Value, dst *int64) bool {
	if v.Type() != fastjson.TypeNumber {
		return false
	}
	var buf [24]byte
	n, err := strconv.ParseInt(string(v.MarshalTo(buf[:0])), 10, 64)
	if err != nil {
		return false
	}
	*dst = n
	return true
}

// surrogateEscape reports whether data may hold an escaped UTF-16
// surrogate (\uD800 to \uDFFF), which fastjson and encoding/json decode
// differently when it is not half of a pair.
func surrogateEscape(data []byte) bool {
	for {
		i := bytes.Index(data, []byte(`\u`))
		if i < 0 || i+3 >= len(data) {
			return false
		}
		if c := data[i+2]; c == 'd' || c == 'D' {
			switch data[i+3] {
			case '8', '9', 'a', 'b', 'c', 'd', 'e', 'f', 'A', 'B', 'C', 'D', 'E', 'F':
				return true
			}
		}
		data = data[i+2:]
	}
}
