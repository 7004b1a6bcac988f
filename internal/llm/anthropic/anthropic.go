// Package anthropic is an llm.Provider for Anthropic's messages API, built
// on the official anthropic-sdk-go SDK.
package anthropic

import (
	"context"
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
	if o.HTTPClient != nil {
		opts = append(opts, option.WithHTTPClient(o.HTTPClient))
	}
	return &Provider{id: id, client: sdk.NewClient(opts...), endpoint: o}
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
		)
		for stream.Next() {
			ev := stream.Current()
			switch ev.Type {
			case "message_start":
				usage.InputTokens = ev.Message.Usage.InputTokens
			case "content_block_delta":
				switch ev.Delta.Type {
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
		yield(llm.Event{Kind: llm.EventDone, StopReason: stop, Usage: usage}, nil)
	}
}

func params(req llm.Request) sdk.MessageNewParams {
	msgs := make([]sdk.MessageParam, 0, len(req.Messages))
	for _, m := range req.Messages {
		block := sdk.NewTextBlock(m.Text)
		if m.Role == llm.RoleAssistant {
			msgs = append(msgs, sdk.NewAssistantMessage(block))
		} else {
			msgs = append(msgs, sdk.NewUserMessage(block))
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
	return p
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
