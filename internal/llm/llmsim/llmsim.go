// Package llmsim is a fake OpenAI-compatible model server: it answers
// POST /v1/chat/completions with a streamed (SSE) completion after a
// configurable latency, and tells its owner when each request arrived
// and when its answer was done. It also lists its models (GET /v1/models)
// and transcribes any audio to a fixed text (POST /v1/audio/transcriptions).
// pincer bench runs it as the model under load. It does not import
// testing, so the pincer binary can link it.
package llmsim

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
)

// Message is one message of a request, its content as plain text (the
// text parts joined when the client sent parts).
type Message struct {
	Role    string
	Content string
}

// Request is one chat-completions request as the server received it.
type Request struct {
	// At is when the handler started on it (its headers were read).
	At       time.Time
	Model    string
	Stream   bool
	Messages []Message
}

// LastUser returns the content of the last user message, "" when there
// is none.
func (r Request) LastUser() string {
	for i := len(r.Messages) - 1; i >= 0; i-- {
		if r.Messages[i].Role == "user" {
			return r.Messages[i].Content
		}
	}
	return ""
}

// Options configure a Server.
type Options struct {
	// Latency is how long the server waits, after the response headers,
	// before the first word of the answer (time to first token).
	Latency time.Duration
	// Reply chooses the text of the answer; "ok" when nil.
	Reply func(Request) string
	// Chunks is how many pieces the answer is streamed in (at least 1;
	// 3 when zero), all written at once after Latency.
	Chunks int
	// OnRequest, when set, is called as each request arrives.
	OnRequest func(Request)
	// OnDone, when set, is called once the last byte of an answer was
	// written and flushed, with the time it was.
	OnDone func(r Request, at time.Time)
	// Transcript is the text every audio transcription answers;
	// DefaultTranscript when empty.
	Transcript string
	// Models are the model ids GET /v1/models lists; DefaultModels when
	// empty.
	Models []string
}

// DefaultTranscript is what the server makes of any audio unless told
// otherwise.
const DefaultTranscript = "(simulated transcript)"

// DefaultModels are the models the server lists unless told otherwise.
var DefaultModels = []string{"sim"}

// Server is a fake OpenAI-compatible model server.
type Server struct {
	// URL is the server's root; the SDK's base URL is URL+"/v1".
	URL string

	opts Options
	srv  *http.Server
	wg   sync.WaitGroup
}

// New returns a server that answers with o but does not listen: serve
// its Handler yourself, or use Serve.
func New(o Options) *Server {
	if o.Chunks <= 0 {
		o.Chunks = 3
	}
	if o.Transcript == "" {
		o.Transcript = DefaultTranscript
	}
	if len(o.Models) == 0 {
		o.Models = DefaultModels
	}
	return &Server{opts: o}
}

// Serve starts a server on ln. Stop it with Close.
func Serve(ln net.Listener, o Options) *Server {
	s := New(o)
	s.srv = &http.Server{Handler: s.Handler(), ReadHeaderTimeout: 10 * time.Second}
	s.wg.Go(func() { _ = s.srv.Serve(ln) })
	s.URL = "http://" + ln.Addr().String()
	return s
}

// Close stops a server started with Serve, dropping open requests.
func (s *Server) Close() {
	if s.srv != nil {
		_ = s.srv.Close()
	}
	s.wg.Wait()
}

// Handler serves POST /v1/chat/completions, POST /v1/audio/transcriptions
// and GET /v1/models (each also without /v1).
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	for _, prefix := range []string{"/v1", ""} {
		mux.HandleFunc("POST "+prefix+"/chat/completions", s.complete)
		mux.HandleFunc("POST "+prefix+"/audio/transcriptions", s.transcribe)
		mux.HandleFunc("GET "+prefix+"/models", s.models)
	}
	return mux
}

// maxAudio bounds the audio a transcription request may carry.
const maxAudio = 25 << 20

// transcribe answers a transcription request (a multipart form with the
// audio in "file") with the fixed transcript, as {"text":…}, or as plain
// text when response_format is "text".
func (s *Server) transcribe(w http.ResponseWriter, req *http.Request) {
	req.Body = http.MaxBytesReader(w, req.Body, maxAudio+1<<20)
	if err := req.ParseMultipartForm(1 << 20); err != nil {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "llmsim: bad form: "+err.Error())
		return
	}
	defer req.MultipartForm.RemoveAll()
	f, _, err := req.FormFile("file")
	if err != nil {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "llmsim: no audio file: "+err.Error())
		return
	}
	f.Close()
	switch req.FormValue("response_format") {
	case "text":
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = io.WriteString(w, s.opts.Transcript+"\n")
	default:
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"text": s.opts.Transcript})
	}
}

// models lists the configured models as OpenAI's API does.
func (s *Server) models(w http.ResponseWriter, _ *http.Request) {
	data := make([]any, len(s.opts.Models))
	for i, id := range s.opts.Models {
		data[i] = map[string]any{"id": id, "object": "model", "created": 1700000000, "owned_by": "llmsim"}
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"object": "list", "data": data})
}

// wireRequest is the part of a chat-completions request the server reads.
type wireRequest struct {
	Model    string `json:"model"`
	Stream   bool   `json:"stream"`
	Messages []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	} `json:"messages"`
}

// text reads a message's content: a string, or an array of parts of
// which the text ones count.
func text(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if json.Unmarshal(raw, &parts) != nil {
		return ""
	}
	var b strings.Builder
	for _, p := range parts {
		if p.Type == "text" {
			b.WriteString(p.Text)
		}
	}
	return b.String()
}

func (s *Server) complete(w http.ResponseWriter, req *http.Request) {
	at := time.Now()
	body, err := io.ReadAll(req.Body)
	if err != nil {
		http.Error(w, fmt.Sprintf("llmsim: read request: %v", err), http.StatusBadRequest)
		return
	}
	var wr wireRequest
	if err := json.Unmarshal(body, &wr); err != nil {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "llmsim: bad JSON: "+err.Error())
		return
	}
	r := Request{At: at, Model: wr.Model, Stream: wr.Stream, Messages: make([]Message, len(wr.Messages))}
	for i, m := range wr.Messages {
		r.Messages[i] = Message{Role: m.Role, Content: text(m.Content)}
	}
	if s.opts.OnRequest != nil {
		s.opts.OnRequest(r)
	}
	answer := "ok"
	if s.opts.Reply != nil {
		answer = s.opts.Reply(r)
	}
	if !r.Stream {
		if !wait(req.Context(), s.opts.Latency) {
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{
			"id": "chatcmpl-sim", "object": "chat.completion", "created": at.Unix(), "model": r.Model,
			"choices": []any{map[string]any{"index": 0, "message": map[string]any{"role": "assistant", "content": answer}, "finish_reason": "stop"}},
			"usage":   usage(r, answer),
		})
		if s.opts.OnDone != nil {
			s.opts.OnDone(r, time.Now())
		}
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	f, _ := w.(http.Flusher)
	flush := func() {
		if f != nil {
			f.Flush()
		}
	}
	flush()
	if !wait(req.Context(), s.opts.Latency) {
		return
	}
	var b strings.Builder
	chunk := func(delta map[string]any, finish any, u any) {
		c := map[string]any{
			"id": "chatcmpl-sim", "object": "chat.completion.chunk", "created": at.Unix(), "model": r.Model,
			"choices": []any{},
		}
		if delta != nil {
			c["choices"] = []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}}
		}
		if u != nil {
			c["usage"] = u
		}
		data, _ := json.Marshal(c)
		b.WriteString("data: ")
		b.Write(data)
		b.WriteString("\n\n")
	}
	chunk(map[string]any{"role": "assistant", "content": ""}, nil, nil)
	for _, p := range pieces(answer, s.opts.Chunks) {
		chunk(map[string]any{"content": p}, nil, nil)
	}
	chunk(map[string]any{}, "stop", nil)
	chunk(nil, nil, usage(r, answer))
	b.WriteString("data: [DONE]\n\n")
	if _, err := io.WriteString(w, b.String()); err != nil {
		return
	}
	flush()
	if s.opts.OnDone != nil {
		s.opts.OnDone(r, time.Now())
	}
}

// wait sleeps for d unless the client goes away first.
func wait(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// usage is a rough token count: four bytes a token.
func usage(r Request, answer string) map[string]any {
	in := 0
	for _, m := range r.Messages {
		in += len(m.Content)/4 + 1
	}
	out := len(answer)/4 + 1
	return map[string]any{"prompt_tokens": in, "completion_tokens": out, "total_tokens": in + out}
}

// pieces cuts s into at most n pieces on rune boundaries.
func pieces(s string, n int) []string {
	if n <= 1 || len(s) < n {
		return []string{s}
	}
	var out []string
	size := len(s) / n
	for len(s) > 0 && len(out) < n-1 {
		cut := min(size, len(s))
		for cut < len(s) && !utf8.RuneStart(s[cut]) {
			cut++
		}
		out = append(out, s[:cut])
		s = s[cut:]
	}
	if len(s) > 0 {
		out = append(out, s)
	}
	return out
}

// writeError answers with an OpenAI-style error body.
func writeError(w http.ResponseWriter, status int, typ, message string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"message": message, "type": typ, "code": typ, "param": nil}})
}
