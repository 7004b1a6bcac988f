package openai

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/pincerbot/pincer/internal/llm"
	"github.com/pincerbot/pincer/internal/llm/llmtest"
)

func TestProvider(t *testing.T) {
	llmtest.RunProviderSuite(t, llmtest.NewOpenAI, func(s *llmtest.Server) llm.Provider {
		return New("openai", llm.Endpoint{BaseURL: s.URL + "/v1", APIKey: "sk-test"})
	})
}

func TestCompatibleServerGetsMaxTokensAndKey(t *testing.T) {
	s := llmtest.NewOpenAI(t)
	p := New("ollama", llm.Endpoint{BaseURL: s.URL + "/v1", Headers: map[string]string{"X-Extra": "1"}})
	if _, _, _, err := llmtest.Collect(p.Stream(t.Context(), llm.Request{Model: "qwen", MaxTokens: 9, Messages: []llm.Message{{Role: llm.RoleUser, Text: "x"}}})); err != nil {
		t.Fatal(err)
	}
	r := s.Requests()[0]
	if r.Body["max_tokens"] != float64(9) {
		t.Errorf("compatible servers get max_tokens, body %v", r.Body)
	}
	if r.Header.Get("X-Extra") != "1" {
		t.Error("configured headers must be sent")
	}
	if got := r.Header.Get("Authorization"); got != "Bearer none" {
		t.Errorf("keyless provider sent Authorization %q", got)
	}
}

func TestThinkingLevelBecomesReasoningEffort(t *testing.T) {
	s := llmtest.NewOpenAI(t)
	p := New("openai", llm.Endpoint{BaseURL: s.URL + "/v1"})
	for _, level := range []string{"high", "off", ""} {
		if _, _, _, err := llmtest.Collect(p.Stream(t.Context(), llm.Request{Model: "o4", Thinking: level, Messages: []llm.Message{{Role: llm.RoleUser, Text: "x"}}})); err != nil {
			t.Fatal(err)
		}
	}
	reqs := s.Requests()
	if reqs[0].Body["reasoning_effort"] != "high" {
		t.Errorf("high: body %v", reqs[0].Body)
	}
	for _, r := range reqs[1:] {
		if _, sent := r.Body["reasoning_effort"]; sent {
			t.Errorf("off must send no reasoning effort: %v", r.Body)
		}
	}
}

// TestConcurrentCallsReuseTheirConnections: turns that ran side by side
// find their connections again for the next ones, instead of dialing (on
// HTTPS: shaking hands) anew past Go's default of two idle per host.
func TestConcurrentCallsReuseTheirConnections(t *testing.T) {
	const parallel = 6
	var dials atomic.Int32
	arrived := make(chan struct{}, parallel)
	release := make(chan struct{})
	s := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		arrived <- struct{}{}
		<-release
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"ok\"},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n")
		// Flushed as servers stream, so the body's end comes after.
		w.(http.Flusher).Flush()
	}))
	s.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			dials.Add(1)
		}
	}
	s.Start()
	defer s.Close()
	p := New("local", llm.Endpoint{BaseURL: s.URL + "/v1"})
	for round := range 3 {
		var wg sync.WaitGroup
		for range parallel {
			wg.Go(func() {
				if text, _, _, err := llmtest.Collect(p.Stream(t.Context(), llm.Request{Model: "m", Messages: []llm.Message{{Role: llm.RoleUser, Text: "x"}}})); err != nil || text != "ok" {
					t.Errorf("round %d: %q, %v", round, text, err)
				}
			})
		}
		for range parallel {
			<-arrived
		}
		for range parallel {
			release <- struct{}{}
		}
		wg.Wait()
	}
	if n := dials.Load(); n != parallel {
		t.Errorf("%d connections for 3 rounds of %d calls at once, want %d", n, parallel, parallel)
	}
}

// doneSignal passes responses through, telling done once a body read
// returned the stream's [DONE].
type doneSignal struct {
	base http.RoundTripper
	done chan struct{}
}

func (d doneSignal) RoundTrip(r *http.Request) (*http.Response, error) {
	res, err := d.base.RoundTrip(r)
	if err == nil {
		res.Body = &signalBody{ReadCloser: res.Body, done: d.done}
	}
	return res, err
}

type signalBody struct {
	io.ReadCloser
	done chan struct{}
}

func (b *signalBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if strings.Contains(string(p[:n]), "[DONE]") {
		b.done <- struct{}{}
	}
	return n, err
}

// TestStreamEndLeavesTheConnectionReusable: the server ends the body
// only after the client has read [DONE] (as a busy server may), and the
// next call still finds the connection, because the provider reads to
// the body's end before closing it.
func TestStreamEndLeavesTheConnectionReusable(t *testing.T) {
	var dials atomic.Int32
	readDone := make(chan struct{}, 1)
	s := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"ok\"},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n")
		w.(http.Flusher).Flush()
		<-readDone // the body ends after the client saw [DONE]
	}))
	s.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			dials.Add(1)
		}
	}
	s.Start()
	defer s.Close()
	client := &http.Client{Transport: doneSignal{base: &http.Transport{}, done: readDone}}
	p := New("local", llm.Endpoint{BaseURL: s.URL + "/v1", HTTPClient: client})
	for i := range 5 {
		if text, _, _, err := llmtest.Collect(p.Stream(t.Context(), llm.Request{Model: "m", Messages: []llm.Message{{Role: llm.RoleUser, Text: "x"}}})); err != nil || text != "ok" {
			t.Fatalf("call %d: %q, %v", i, text, err)
		}
	}
	if n := dials.Load(); n != 1 {
		t.Errorf("5 calls one after another took %d connections, want 1", n)
	}
}
