package llmtest

import (
	"net/http"
	"testing"
)

// NewOpenAI starts a fake OpenAI-compatible server; use URL+"/v1" as the
// SDK's base URL. Besides chat completions it lists models and
// transcribes audio (see SetTranscript and Transcriptions).
func NewOpenAI(t testing.TB) *Server {
	s := &Server{}
	s.modelList = func(ids []string) any {
		data := make([]any, len(ids))
		for i, id := range ids {
			data[i] = map[string]any{"id": id, "object": "model", "created": 1700000000, "owned_by": "llmtest"}
		}
		return map[string]any{"object": "list", "data": data}
	}
	s.errBody = func(r Reply) any {
		typ := r.ErrorType
		if typ == "" {
			typ = "server_error"
		}
		return map[string]any{"error": map[string]any{"message": "scripted " + typ, "type": typ, "code": typ, "param": nil}}
	}
	s.write = func(w http.ResponseWriter, f http.Flusher, req *http.Request, r Reply) {
		chunk := func(delta map[string]any, finish any) map[string]any {
			return map[string]any{
				"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "fake",
				"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}},
			}
		}
		event(w, f, "", chunk(map[string]any{"role": "assistant", "content": ""}, nil))
		for _, p := range r.Reasoning {
			event(w, f, "", chunk(map[string]any{"reasoning_content": p}, nil))
		}
		for i, p := range r.Text {
			if r.CutAfter > 0 && i == r.CutAfter {
				cut(w)
				return
			}
			event(w, f, "", chunk(map[string]any{"content": p}, nil))
			hold(req, r, i)
		}
		if r.StreamError != "" {
			event(w, f, "", map[string]any{"error": map[string]any{"message": "scripted", "type": r.StreamError}})
			return
		}
		finish := "stop"
		for i, c := range r.ToolCalls {
			finish = "tool_calls"
			parts := halves(c.Arguments)
			event(w, f, "", chunk(map[string]any{"tool_calls": []any{map[string]any{
				"index": i, "id": c.ID, "type": "function", "function": map[string]any{"name": c.Name, "arguments": parts[0]},
			}}}, nil))
			event(w, f, "", chunk(map[string]any{"tool_calls": []any{map[string]any{
				"index": i, "function": map[string]any{"arguments": parts[1]},
			}}}, nil))
		}
		event(w, f, "", chunk(map[string]any{}, finish))
		if u := r.Usage; u != nil {
			event(w, f, "", map[string]any{
				"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "fake", "choices": []any{},
				"usage": map[string]any{"prompt_tokens": u.InputTokens, "completion_tokens": u.OutputTokens, "total_tokens": u.InputTokens + u.OutputTokens},
			})
		}
		_, _ = w.Write([]byte("data: [DONE]\n\n"))
	}
	s.serve(t, "/v1/chat/completions", map[string]http.HandlerFunc{"POST /v1/audio/transcriptions": s.transcribe})
	return s
}
