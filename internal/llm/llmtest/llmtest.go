// Package llmtest provides in-process model servers that speak the OpenAI
// chat-completions and Anthropic messages streaming formats (SSE), so the
// real SDK clients can be tested end to end.
package llmtest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
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
	// Hold, when set, pauses the stream after the first text delta until it
	// is closed or the client goes away.
	Hold chan struct{}
	// Stall accepts the request and sends nothing more than the response
	// headers until the client goes away (or Hold closes).
	Stall bool
}

// Request is one request the server received.
type Request struct {
	Header http.Header
	Body   map[string]any
}

// Server is a fake model server. Replies are served in order; the last one
// repeats.
type Server struct {
	URL string

	mu       sync.Mutex
	replies  []Reply
	requests []Request
	write    func(w http.ResponseWriter, f http.Flusher, req *http.Request, r Reply)
	errBody  func(r Reply) any
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

func (s *Server) next() Reply {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.replies) == 0 {
		return Reply{Text: []string{"ok"}}
	}
	r := s.replies[0]
	if len(s.replies) > 1 {
		s.replies = s.replies[1:]
	}
	return r
}

func (s *Server) serve(t testing.TB, path string) {
	mux := http.NewServeMux()
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
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(r.Status)
			_ = json.NewEncoder(w).Encode(s.errBody(r))
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

// hold waits for r.Hold to close or the client to leave.
func hold(req *http.Request, r Reply) {
	if r.Hold == nil {
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
