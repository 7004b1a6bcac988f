package openai

import (
	"fmt"
	"strconv"

	"github.com/pincerbot/pincer/internal/jsonstr"
	"github.com/pincerbot/pincer/internal/llm"
)

// appendBody appends req as a streamed chat-completions request body:
// the bytes encoding/json's Encoder, without HTML escapes, writes for the
// request as structs (its newline included), which TestAppendBodyIsTheReference
// and FuzzAppendBody hold it to, written by hand as the other encoders
// on a turn's path are: the reflective encoder cost most of what making
// the request did.
//
// The fields are those of the chat-completions API: model, messages,
// stream, then stream_options, tools, reasoning_effort, max_tokens and
// max_completion_tokens when they are set. A message has its role, its
// content (left out only for an assistant turn that made tool calls and
// said nothing; a user turn that shows images has it as parts, its text
// first, then each image as a data URL), its tool calls and the id of
// the tool call it answers.
func (p *Provider) appendBody(b []byte, req llm.Request) ([]byte, error) {
	b = jsonstr.Append(append(b, `{"model":`...), req.Model, false)
	b = append(b, `,"messages":[`...)
	if req.System != "" {
		b = jsonstr.Append(append(b, `{"role":"system","content":`...), req.System, false)
		b = append(b, '}')
	}
	for i := range req.Messages {
		m := &req.Messages[i]
		if i > 0 || req.System != "" {
			b = append(b, ',')
		}
		switch m.Role {
		case llm.RoleAssistant:
			b = append(b, `{"role":"assistant"`...)
			if m.Text != "" || len(m.ToolCalls) == 0 {
				b = jsonstr.Append(append(b, `,"content":`...), m.Text, false)
			}
			if len(m.ToolCalls) > 0 {
				b = append(b, `,"tool_calls":[`...)
				for j, c := range m.ToolCalls {
					if j > 0 {
						b = append(b, ',')
					}
					b = jsonstr.Append(append(b, `{"id":`...), c.ID, false)
					b = jsonstr.Append(append(b, `,"type":"function","function":{"name":`...), c.Name, false)
					b = jsonstr.Append(append(b, `,"arguments":`...), c.Arguments, false)
					b = append(b, "}}"...)
				}
				b = append(b, ']')
			}
		case llm.RoleTool:
			b = jsonstr.Append(append(b, `{"role":"tool","content":`...), m.Text, false)
			if m.ToolCallID != "" {
				b = jsonstr.Append(append(b, `,"tool_call_id":`...), m.ToolCallID, false)
			}
		default:
			b = append(b, `{"role":"user","content":`...)
			if len(m.Images) == 0 {
				b = jsonstr.Append(b, m.Text, false)
				break
			}
			b = append(b, '[')
			if m.Text != "" {
				b = jsonstr.Append(append(b, `{"type":"text","text":`...), m.Text, false)
				b = append(b, "},"...)
			}
			for j := range m.Images {
				if j > 0 {
					b = append(b, ',')
				}
				url, err := (*imageURL)(&m.Images[j]).MarshalJSON()
				if err != nil {
					return b, fmt.Errorf("message %d: image %d: %w", i, j, err)
				}
				b = append(append(b, `{"type":"image_url","image_url":`...), url...)
				b = append(b, '}')
			}
			b = append(b, ']')
		}
		b = append(b, '}')
	}
	b = append(b, `],"stream":true`...)
	if p.askUsage {
		b = append(b, `,"stream_options":{"include_usage":true}`...)
	}
	if len(req.Tools) > 0 {
		b = append(b, `,"tools":[`...)
		for i, t := range req.Tools {
			params, err := p.schemas.encode(t.Parameters)
			if err != nil {
				return b, fmt.Errorf("tool %s: parameters: %w", t.Name, err)
			}
			if i > 0 {
				b = append(b, ',')
			}
			b = jsonstr.Append(append(b, `{"type":"function","function":{"name":`...), t.Name, false)
			b = jsonstr.Append(append(b, `,"description":`...), t.Description, false)
			if len(params) > 0 {
				b = append(append(b, `,"parameters":`...), params...)
			}
			b = append(b, "}}"...)
		}
		b = append(b, ']')
	}
	if llm.ThinkingBudget(req.Thinking) > 0 {
		b = jsonstr.Append(append(b, `,"reasoning_effort":`...), req.Thinking, false)
	}
	if req.MaxTokens > 0 {
		if p.legacyMaxTokens {
			b = strconv.AppendInt(append(b, `,"max_tokens":`...), int64(req.MaxTokens), 10)
		} else {
			b = strconv.AppendInt(append(b, `,"max_completion_tokens":`...), int64(req.MaxTokens), 10)
		}
	}
	return append(b, "}\n"...), nil
}
