// Package llmtest provides in-process model servers that speak the OpenAI
// chat-completions and Anthropic messages streaming formats (SSE), so the
// real SDK clients can be tested end to end. Both also list their models
// (GET /v1/models), and the OpenAI one transcribes audio
// (POST /v1/audio/transcriptions).
package llmtest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/pincerbot/pincer/internal/llm"
)

// Reply scripts one answer of a fake server.
type Reply struct {
	// Status, when not 0 or 200, answers with this HTTP error and an error
	// body of type ErrorType.
	Status    int
	Header    http.Header
	ErrorType string
	// Reasoning and Text are streamed as deltas, reasoning first.
	Reasoning []string
	Text      []string
	// ToolCalls are streamed after the text, each call's arguments in two
	// pieces.
	ToolCalls []llm.ToolCall
	// CutAfter, when > 0, drops the connection after that many text
	// deltas, without finishing the stream.
	CutAfter int
	// StreamError, when set, ends the stream with an in-stream error event
	// of this type after the text deltas.
	StreamError string
	// Hold, when set, pauses the stream after the first text delta (after
	// HoldAfter of them when that is more than 1) until it is closed or the
	// client goes away.
	Hold      chan struct{}
	HoldAfter int
	// Stall accepts the request and sends nothing more than the response
	// headers until the client goes away (or Hold closes).
	Stall bool
	// Usage, when set, is reported in a last chunk with no choices, as
	// OpenAI does when asked for it (stream_options.include_usage).
	Usage *llm.Usage
}

// Request is one request the server received.
type Request struct {
	Header http.Header
	Body   map[string]any
}

// Transcription is one audio transcription request the server received.
type Transcription struct {
	Header http.Header
	// Model and ResponseFormat are the form's fields of those names.
	Model          string
	ResponseFormat string
	// FileName and ContentType are the file part's; Audio its bytes.
	FileName    string
	ContentType string
	Audio       []byte
	// Fields are all the form's text fields.
	Fields map[string]string
}

// DefaultTranscript is what the fake OpenAI server makes of any audio
// until told otherwise.
const DefaultTranscript = "transcribed audio"

// DefaultModels are the models the fake servers list until told
// otherwise.
var DefaultModels = []string{"fake-large", "fake-small"}

// Server is a fake model server. Replies are served in order; the last one
// repeats.
type Server struct {
	URL string

	mu             sync.Mutex
	replies        []Reply
	requests       []Request
	transcripts    []Reply
	transcriptions []Transcription
	models         []string
	write          func(w http.ResponseWriter, f http.Flusher, req *http.Request, r Reply)
	errBody        func(r Reply) any
	modelList      func(ids []string) any
}

// Script sets the replies to serve, replacing earlier ones.
func (s *Server) Script(replies ...Reply) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.replies = replies
}

// Requests returns the requests received so far.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// SetTranscript makes every later transcription answer text.
func (s *Server) SetTranscript(text string) {
	s.ScriptTranscripts(Reply{Text: []string{text}})
}

// ScriptTranscripts sets the answers to transcription requests, served
// in order, the last one repeating: a reply's Text joined, or its
// Status, ErrorType and Header as for a chat reply.
func (s *Server) ScriptTranscripts(replies ...Reply) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.transcripts = replies
}

// Transcriptions returns the transcription requests received so far.
func (s *Server) Transcriptions() []Transcription {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Transcription(nil), s.transcriptions...)
}

// SetModels sets the model ids GET /v1/models lists, replacing
// DefaultModels.
func (s *Server) SetModels(ids ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.models = append([]string{}, ids...)
}

func (s *Server) next() Reply {
	s.mu.Lock()
	defer s.mu.Unlock()
	return pop(&s.replies, Reply{Text: []string{"ok"}})
}

// pop returns the first of *replies, keeping the last one, or def when
// there are none.
func pop(replies *[]Reply, def Reply) Reply {
	if len(*replies) == 0 {
		return def
	}
	r := (*replies)[0]
	if len(*replies) > 1 {
		*replies = (*replies)[1:]
	}
	return r
}

// formMemory is how much of a transcription form is held in memory; the
// rest waits in temporary files.
const formMemory = 32 << 20

// transcribe serves POST /v1/audio/transcriptions: a multipart form with
// the audio in "file", answered as {"text":…}.
func (s *Server) transcribe(w http.ResponseWriter, req *http.Request) {
	if err := req.ParseMultipartForm(formMemory); err != nil {
		s.writeError(w, Reply{Status: http.StatusBadRequest, ErrorType: "invalid_request_error"})
		return
	}
	defer req.MultipartForm.RemoveAll()
	tr := Transcription{Header: req.Header.Clone(), Fields: map[string]string{}}
	for k, vs := range req.MultipartForm.Value {
		if len(vs) > 0 {
			tr.Fields[k] = vs[0]
		}
	}
	tr.Model, tr.ResponseFormat = tr.Fields["model"], tr.Fields["response_format"]
	f, fh, err := req.FormFile("file")
	if err == nil {
		tr.FileName, tr.ContentType = fh.Filename, fh.Header.Get("Content-Type")
		tr.Audio, err = io.ReadAll(f)
		f.Close()
	}
	if err != nil {
		s.writeError(w, Reply{Status: http.StatusBadRequest, ErrorType: "invalid_request_error"})
		return
	}
	s.mu.Lock()
	s.transcriptions = append(s.transcriptions, tr)
	r := pop(&s.transcripts, Reply{Text: []string{DefaultTranscript}})
	s.mu.Unlock()
	for k, vs := range r.Header {
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	if r.Status != 0 && r.Status != http.StatusOK {
		s.writeError(w, r)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"text": strings.Join(r.Text, "")})
}

// listModels serves GET /v1/models.
func (s *Server) listModels(w http.ResponseWriter, _ *http.Request) {
	s.mu.Lock()
	ids := s.models
	s.mu.Unlock()
	if ids == nil {
		ids = DefaultModels
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(s.modelList(ids))
}

// writeError answers with r's status and an error body of its type.
func (s *Server) writeError(w http.ResponseWriter, r Reply) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(r.Status)
	_ = json.NewEncoder(w).Encode(s.errBody(r))
}

// serve starts the server: chat at POST path, the model list at
// GET /v1/models, and whatever more routes adds.
func (s *Server) serve(t testing.TB, path string, routes map[string]http.HandlerFunc) {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/models", s.listModels)
	for pattern, h := range routes {
		mux.HandleFunc(pattern, h)
	}
	mux.HandleFunc("POST "+path, func(w http.ResponseWriter, req *http.Request) {
		body, err := io.ReadAll(req.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		var decoded map[string]any
		if err := json.Unmarshal(body, &decoded); err != nil {
			http.Error(w, "bad json: "+err.Error(), http.StatusBadRequest)
			return
		}
		s.mu.Lock()
		s.requests = append(s.requests, Request{Header: req.Header.Clone(), Body: decoded})
		s.mu.Unlock()
		r := s.next()
		for k, vs := range r.Header {
			for _, v := range vs {
				w.Header().Add(k, v)
			}
		}
		if r.Status != 0 && r.Status != http.StatusOK {
			s.writeError(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		w.Header().Set("Cache-Control", "no-cache")
		w.WriteHeader(http.StatusOK)
		f, _ := w.(http.Flusher)
		if r.Stall {
			if f != nil {
				f.Flush()
			}
			select {
			case <-r.Hold:
			case <-req.Context().Done():
			}
			return
		}
		s.write(w, f, req, r)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	s.URL = srv.URL
}

// event writes one SSE event; name may be empty.
func event(w io.Writer, f http.Flusher, name string, data any) {
	if name != "" {
		fmt.Fprintf(w, "event: %s\n", name)
	}
	b, _ := json.Marshal(data)
	fmt.Fprintf(w, "data: %s\n\n", b)
	if f != nil {
		f.Flush()
	}
}

// cut drops the client connection mid-stream.
func cut(w http.ResponseWriter) {
	if hj, ok := w.(http.Hijacker); ok {
		if conn, _, err := hj.Hijack(); err == nil {
			_ = conn.Close()
			return
		}
	}
	panic(http.ErrAbortHandler)
}

// hold waits, after text delta i, for r.Hold to close or the client to
// leave.
func hold(req *http.Request, r Reply, i int) {
	if r.Hold == nil || i != max(r.HoldAfter, 1)-1 {
		return
	}
	select {
	case <-r.Hold:
	case <-req.Context().Done():
	}
}

// halves splits s in two, for streaming arguments in pieces.
func halves(s string) [2]string {
	mid := len(s) / 2
	for mid > 0 && !utf8.RuneStart(s[mid]) {
		mid--
	}
	return [2]string{s[:mid], s[mid:]}
}
