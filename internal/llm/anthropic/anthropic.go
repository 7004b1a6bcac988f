// Package anthropic is an llm.Provider for Anthropic's messages API, built
// on the official anthropic-sdk-go SDK.
package anthropic

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"iter"
	"net/http"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"

	"github.com/pincerbot/pincer/internal/llm"
)

// Provider is an Anthropic llm.Provider.
type Provider struct {
	id       string
	client   sdk.Client
	endpoint llm.Endpoint
}

var _ llm.Provider = (*Provider)(nil)

// defaultMaxTokens is used when a request names none; the API requires it.
const defaultMaxTokens = 4096

// New returns a provider with id (the ref prefix). The SDK's own retries are
// off: failures are classified and retried by the caller.
func New(id string, o llm.Endpoint) *Provider {
	opts := []option.RequestOption{option.WithMaxRetries(0), option.WithAPIKey(o.APIKey)}
	if o.BaseURL != "" {
		opts = append(opts, option.WithBaseURL(o.BaseURL))
	}
	for k, v := range o.Headers {
		opts = append(opts, option.WithHeader(k, v))
	}
	opts = append(opts, option.WithHTTPClient(o.Client()), option.WithMiddleware(keepAlive))
	return &Provider{id: id, client: sdk.NewClient(opts...), endpoint: o}
}

// keepAlive lets a streamed answer's connection serve the next call (see
// llm.KeepAlive).
func keepAlive(req *http.Request, next option.MiddlewareNext) (*http.Response, error) {
	return llm.KeepAlive(next(req))
}

// ID implements llm.Provider.
func (p *Provider) ID() string { return p.id }

// Stream implements llm.Provider.
func (p *Provider) Stream(ctx context.Context, req llm.Request) iter.Seq2[llm.Event, error] {
	return func(yield func(llm.Event, error) bool) {
		callCtx, cancel := p.endpoint.CallContext(ctx)
		defer cancel()
		stream := p.client.Messages.NewStreaming(callCtx, params(req))
		defer stream.Close()
		var (
			done  bool
			stop  string
			usage llm.Usage
			calls []llm.ToolCall
			call  *llm.ToolCall // the tool_use block being streamed
		)
		for stream.Next() {
			ev := stream.Current()
			switch ev.Type {
			case "message_start":
				usage.InputTokens = ev.Message.Usage.InputTokens
			case "content_block_start":
				if ev.ContentBlock.Type == "tool_use" {
					call = &llm.ToolCall{ID: ev.ContentBlock.ID, Name: ev.ContentBlock.Name}
				}
			case "content_block_stop":
				if call != nil {
					if call.Arguments == "" {
						call.Arguments = "{}"
					}
					calls = append(calls, *call)
					call = nil
				}
			case "content_block_delta":
				switch ev.Delta.Type {
				case "input_json_delta":
					if call != nil {
						call.Arguments += ev.Delta.PartialJSON
					}
				case "text_delta":
					if ev.Delta.Text != "" && !yield(llm.Event{Kind: llm.EventText, Text: ev.Delta.Text}, nil) {
						return
					}
				case "thinking_delta":
					if ev.Delta.Thinking != "" && !yield(llm.Event{Kind: llm.EventReasoning, Text: ev.Delta.Thinking}, nil) {
						return
					}
				}
			case "message_delta":
				stop = string(ev.Delta.StopReason)
				usage.OutputTokens = ev.Usage.OutputTokens
			case "message_stop":
				done = true
			}
		}
		if err := stream.Err(); err != nil {
			yield(llm.Event{}, p.classify(ctx, req.Model, err))
			return
		}
		if !done {
			yield(llm.Event{}, llm.Transport(p.id, req.Model, ctx, llm.ErrTruncated))
			return
		}
		for _, c := range calls {
			if !yield(llm.Event{Kind: llm.EventToolCall, ToolCall: c}, nil) {
				return
			}
		}
		yield(llm.Event{Kind: llm.EventDone, StopReason: stop, Usage: usage}, nil)
	}
}

func params(req llm.Request) sdk.MessageNewParams {
	msgs := make([]sdk.MessageParam, 0, len(req.Messages))
	for _, m := range req.Messages {
		switch m.Role {
		case llm.RoleAssistant:
			var blocks []sdk.ContentBlockParamUnion
			if m.Text != "" {
				blocks = append(blocks, sdk.NewTextBlock(m.Text))
			}
			for _, c := range m.ToolCalls {
				var input any = map[string]any{}
				if err := json.Unmarshal([]byte(c.Arguments), &input); err != nil {
					input = map[string]any{}
				}
				blocks = append(blocks, sdk.NewToolUseBlock(c.ID, input, c.Name))
			}
			msgs = append(msgs, sdk.NewAssistantMessage(blocks...))
		case llm.RoleTool:
			// Tool results travel in a user message; consecutive results
			// share one.
			block := sdk.NewToolResultBlock(m.ToolCallID, m.Text, m.IsError)
			if n := len(msgs); n > 0 && isToolResults(msgs[n-1]) {
				msgs[n-1].OfUser.Content = append(msgs[n-1].OfUser.Content, block)
				continue
			}
			msgs = append(msgs, sdk.NewUserMessage(block))
		default:
			msgs = append(msgs, sdk.NewUserMessage(userBlocks(m)...))
		}
	}
	maxTokens := int64(req.MaxTokens)
	if maxTokens <= 0 {
		maxTokens = defaultMaxTokens
	}
	p := sdk.MessageNewParams{Model: sdk.Model(req.Model), MaxTokens: maxTokens, Messages: msgs}
	if budget := int64(llm.ThinkingBudget(req.Thinking)); budget > 0 {
		// The budget is part of max_tokens, so the visible reply keeps its own.
		p.Thinking = sdk.ThinkingConfigParamOfEnabled(budget)
		p.MaxTokens += budget
	}
	if req.System != "" {
		p.System = []sdk.TextBlockParam{{Text: req.System}}
	}
	for _, t := range req.Tools {
		schema := sdk.ToolInputSchemaParam{Properties: t.Parameters["properties"], Required: required(t.Parameters["required"])}
		p.Tools = append(p.Tools, sdk.ToolUnionParam{OfTool: &sdk.ToolParam{Name: t.Name, Description: sdk.String(t.Description), InputSchema: schema}})
	}
	return p
}

// userBlocks is a user turn's content: its text, then its images, each
// inline in base64. A turn with images and no text has no text block (the
// API refuses empty ones); a turn with neither keeps its one.
func userBlocks(m llm.Message) []sdk.ContentBlockParamUnion {
	if len(m.Images) == 0 {
		return []sdk.ContentBlockParamUnion{sdk.NewTextBlock(m.Text)}
	}
	blocks := make([]sdk.ContentBlockParamUnion, 0, len(m.Images)+1)
	if m.Text != "" {
		blocks = append(blocks, sdk.NewTextBlock(m.Text))
	}
	for _, img := range m.Images {
		blocks = append(blocks, sdk.NewImageBlockBase64(img.MIME, base64.StdEncoding.EncodeToString(img.Data)))
	}
	return blocks
}

// isToolResults reports a user message made only of tool results.
func isToolResults(m sdk.MessageParam) bool {
	if m.OfUser == nil || len(m.OfUser.Content) == 0 {
		return false
	}
	for _, b := range m.OfUser.Content {
		if b.OfToolResult == nil {
			return false
		}
	}
	return true
}

func (p *Provider) classify(parent context.Context, model string, err error) *llm.Error {
	var apiErr *sdk.Error
	if errors.As(err, &apiErr) {
		var h http.Header
		if apiErr.Response != nil {
			h = apiErr.Response.Header
		}
		return llm.HTTPError(p.id, model, apiErr.StatusCode, h, errorType(apiErr.RawJSON()), err)
	}
	return llm.Transport(p.id, model, parent, err)
}

// errorType reads error.type from an Anthropic error body.
func errorType(raw string) string {
	var body struct {
		Type  string `json:"type"`
		Error struct {
			Type string `json:"type"`
		} `json:"error"`
	}
	if json.Unmarshal([]byte(raw), &body) != nil {
		return ""
	}
	if body.Error.Type != "" {
		return body.Error.Type
	}
	if body.Type != "error" {
		return body.Type
	}
	return ""
}

// required reads a JSON Schema "required" list, written in Go or decoded
// from JSON.
func required(v any) []string {
	switch r := v.(type) {
	case []string:
		return r
	case []any:
		out := make([]string, 0, len(r))
		for _, e := range r {
			if s, ok := e.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}
