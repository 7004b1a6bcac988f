package llmtest

import (
	"net/http"
	"testing"
)

// NewAnthropic starts a fake Anthropic messages server; use URL as the
// SDK's base URL. Besides messages it lists models.
func NewAnthropic(t testing.TB) *Server {
	s := &Server{}
	s.modelList = func(ids []string) any {
		data := make([]any, len(ids))
		for i, id := range ids {
			data[i] = map[string]any{"id": id, "type": "model", "display_name": id, "created_at": "2025-01-01T00:00:00Z"}
		}
		list := map[string]any{"data": data, "has_more": false, "first_id": nil, "last_id": nil}
		if len(ids) > 0 {
			list["first_id"], list["last_id"] = ids[0], ids[len(ids)-1]
		}
		return list
	}
	s.errBody = func(r Reply) any {
		typ := r.ErrorType
		if typ == "" {
			typ = "api_error"
		}
		return map[string]any{"type": "error", "error": map[string]any{"type": typ, "message": "scripted " + typ}}
	}
	s.write = func(w http.ResponseWriter, f http.Flusher, req *http.Request, r Reply) {
		event(w, f, "message_start", map[string]any{"type": "message_start", "message": map[string]any{
			"id": "msg_1", "type": "message", "role": "assistant", "content": []any{}, "model": "fake",
			"stop_reason": nil, "stop_sequence": nil, "usage": map[string]any{"input_tokens": 12, "output_tokens": 1},
		}})
		index := 0
		if len(r.Reasoning) > 0 {
			event(w, f, "content_block_start", map[string]any{"type": "content_block_start", "index": index, "content_block": map[string]any{"type": "thinking", "thinking": ""}})
			for _, p := range r.Reasoning {
				event(w, f, "content_block_delta", map[string]any{"type": "content_block_delta", "index": index, "delta": map[string]any{"type": "thinking_delta", "thinking": p}})
			}
			event(w, f, "content_block_stop", map[string]any{"type": "content_block_stop", "index": index})
			index++
		}
		event(w, f, "content_block_start", map[string]any{"type": "content_block_start", "index": index, "content_block": map[string]any{"type": "text", "text": ""}})
		event(w, f, "ping", map[string]any{"type": "ping"})
		for i, p := range r.Text {
			if r.CutAfter > 0 && i == r.CutAfter {
				cut(w)
				return
			}
			event(w, f, "content_block_delta", map[string]any{"type": "content_block_delta", "index": index, "delta": map[string]any{"type": "text_delta", "text": p}})
			hold(req, r, i)
		}
		if r.StreamError != "" {
			event(w, f, "error", map[string]any{"type": "error", "error": map[string]any{"type": r.StreamError, "message": "scripted"}})
			return
		}
		event(w, f, "content_block_stop", map[string]any{"type": "content_block_stop", "index": index})
		stop := "end_turn"
		for _, c := range r.ToolCalls {
			index++
			stop = "tool_use"
			event(w, f, "content_block_start", map[string]any{"type": "content_block_start", "index": index, "content_block": map[string]any{"type": "tool_use", "id": c.ID, "name": c.Name, "input": map[string]any{}}})
			for _, part := range halves(c.Arguments) {
				event(w, f, "content_block_delta", map[string]any{"type": "content_block_delta", "index": index, "delta": map[string]any{"type": "input_json_delta", "partial_json": part}})
			}
			event(w, f, "content_block_stop", map[string]any{"type": "content_block_stop", "index": index})
		}
		event(w, f, "message_delta", map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": stop, "stop_sequence": nil}, "usage": map[string]any{"output_tokens": 7}})
		event(w, f, "message_stop", map[string]any{"type": "message_stop"})
	}
	s.serve(t, "/v1/messages", nil)
	return s
}
