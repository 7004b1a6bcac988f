// Package openai is an llm.Provider for the OpenAI chat-completions API and
// every server compatible with it (DeepSeek, Qwen, Ollama, vLLM, llama.cpp),
// sending its requests as the official openai-go SDK did (see api) and
// reading its streams with the SDK's ssestream.
package openai

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"net/http"
	"net/url"

	"github.com/openai/openai-go/v3/packages/ssestream"

	"github.com/pincerbot/pincer/internal/llm"
)

// Provider is an OpenAI-compatible llm.Provider.
type Provider struct {
	id       string
	client   *api
	endpoint llm.Endpoint
	// legacyMaxTokens sends max_tokens instead of max_completion_tokens:
	// compatible servers know the older field, OpenAI's newest models only
	// the newer.
	legacyMaxTokens bool
	// askUsage asks for the token counts at the stream's end
	// (stream_options.include_usage), which OpenAI sends only when asked
	// and compatible servers send unasked (DeepSeek, Qwen), or refuse to
	// be asked for (some reject the unknown field).
	askUsage bool
	// schemas are the tools' parameters, encoded once.
	schemas schemas
}

var _ llm.Provider = (*Provider)(nil)

// New returns a provider with id (the ref prefix) for the given endpoint.
// Nothing is retried here: failures are classified and retried by the
// caller, which honours Retry-After across models.
func New(id string, o llm.Endpoint) *Provider {
	key := o.APIKey
	if key == "" {
		// Local servers need no key; $OPENAI_API_KEY belongs to another
		// provider entry.
		key = "none"
	}
	return &Provider{id: id, client: newAPI(o.BaseURL, key, o.Headers, o.Client()), endpoint: o, legacyMaxTokens: !isOpenAI(o.BaseURL), askUsage: isOpenAI(o.BaseURL)}
}

func isOpenAI(base string) bool {
	if base == "" {
		return true
	}
	u, err := url.Parse(base)
	return err == nil && u.Hostname() == "api.openai.com"
}

// ID implements llm.Provider.
func (p *Provider) ID() string { return p.id }

// maxToolCalls bounds the tool calls of one answer: a server that numbers
// one beyond it is broken, and its index must not size an allocation.
const maxToolCalls = 128

// Stream implements llm.Provider.
func (p *Provider) Stream(ctx context.Context, req llm.Request) iter.Seq2[llm.Event, error] {
	return func(yield func(llm.Event, error) bool) {
		callCtx, cancel := p.endpoint.CallContext(ctx)
		defer cancel()
		stream := p.newStreaming(callCtx, req)
		defer stream.Close()
		var finish string
		var calls []llm.ToolCall // by stream index
		var usage llm.Usage
		for stream.Next() {
			cur := stream.Current()
			if u := cur.Usage; u != nil {
				usage = llm.Usage{InputTokens: u.PromptTokens, OutputTokens: u.CompletionTokens}
			}
			for _, c := range cur.Choices {
				for _, tc := range c.Delta.ToolCalls {
					if tc.Index < 0 || tc.Index >= maxToolCalls {
						yield(llm.Event{}, llm.HTTPError(p.id, req.Model, 0, nil, "api_error",
							fmt.Errorf("tool call index %d out of range [0, %d)", tc.Index, maxToolCalls)))
						return
					}
					for tc.Index >= len(calls) {
						calls = append(calls, llm.ToolCall{})
					}
					call := &calls[tc.Index]
					if tc.ID != "" {
						call.ID = tc.ID
					}
					call.Name += tc.Function.Name
					call.Arguments += tc.Function.Arguments
				}
				if text := c.Delta.ReasoningContent; text != "" && !yield(llm.Event{Kind: llm.EventReasoning, Text: text}, nil) {
					return
				}
				if c.Delta.Content != "" && !yield(llm.Event{Kind: llm.EventText, Text: c.Delta.Content}, nil) {
					return
				}
				if c.FinishReason != "" {
					finish = c.FinishReason
				}
			}
		}
		if err := stream.Err(); err != nil {
			yield(llm.Event{}, p.classify(ctx, req.Model, err))
			return
		}
		if finish == "" {
			yield(llm.Event{}, llm.Transport(p.id, req.Model, ctx, llm.ErrTruncated))
			return
		}
		for _, call := range calls {
			if call.Arguments == "" {
				call.Arguments = "{}"
			}
			if !yield(llm.Event{Kind: llm.EventToolCall, ToolCall: call}, nil) {
				return
			}
		}
		yield(llm.Event{Kind: llm.EventDone, StopReason: finish, Usage: usage}, nil)
	}
}

func (p *Provider) classify(parent context.Context, model string, err error) *llm.Error {
	return classify(parent, p.id, model, err)
}

// classify makes err, from a call of provider id to model, an *llm.Error:
// an HTTP error answer by its status and error type, an error event
// inside a stream as a server failure, anything else by llm.Transport.
func classify(parent context.Context, id, model string, err error) *llm.Error {
	var apiErr *apiError
	if errors.As(err, &apiErr) {
		var h http.Header
		if apiErr.Response != nil {
			h = apiErr.Response.Header
		}
		typ := apiErr.Type
		if apiErr.Code != "" {
			typ = apiErr.Code
		}
		return llm.HTTPError(id, model, apiErr.StatusCode, h, typ, err)
	}
	var streamErr *ssestream.StreamError
	if errors.As(err, &streamErr) {
		// An error event inside a 200 stream: the server failed mid-reply.
		return llm.HTTPError(id, model, 0, nil, "api_error", err)
	}
	return llm.Transport(id, model, parent, err)
}
