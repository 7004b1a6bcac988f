package llmsim

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pincerbot/pincer/internal/llm"
	"github.com/pincerbot/pincer/internal/llm/llmtest"
	"github.com/pincerbot/pincer/internal/llm/openai"
)

// TestServerStreamsToTheOpenAIProvider talks to the server through
// pincer's own OpenAI provider: the answer arrives whole after the
// latency, and the hooks see the request and the end of the answer.
func TestServerStreamsToTheOpenAIProvider(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var seen []Request
	doneAt := make(chan time.Time, 1)
	const latency = 50 * time.Millisecond
	s := Serve(ln, Options{
		Latency: latency,
		Chunks:  4,
		Reply:   func(r Request) string { return "回答：" + r.LastUser() },
		OnRequest: func(r Request) {
			mu.Lock()
			defer mu.Unlock()
			seen = append(seen, r)
		},
		OnDone: func(_ Request, at time.Time) { doneAt <- at },
	})
	defer s.Close()
	p := openai.New("sim", llm.Endpoint{BaseURL: s.URL + "/v1", APIKey: "k"})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	start := time.Now()
	var text strings.Builder
	var stop string
	for ev, err := range p.Stream(ctx, llm.Request{Model: "bench", System: "sys", Messages: []llm.Message{
		{Role: llm.RoleUser, Text: "早上好"}, {Role: llm.RoleAssistant, Text: "你好"}, {Role: llm.RoleUser, Text: "明天几点集合？"},
	}}) {
		if err != nil {
			t.Fatal(err)
		}
		switch ev.Kind {
		case llm.EventText:
			text.WriteString(ev.Text)
		case llm.EventDone:
			stop = ev.StopReason
		}
	}
	if elapsed := time.Since(start); elapsed < latency {
		t.Errorf("answered after %s, before the latency of %s", elapsed, latency)
	}
	if text.String() != "回答：明天几点集合？" || stop != "stop" {
		t.Errorf("streamed %q, stop %q", text.String(), stop)
	}
	// OnDone runs after the last byte is flushed, so the client may
	// have read it first: wait for the hook rather than racing it.
	var done time.Time
	select {
	case done = <-doneAt:
	case <-ctx.Done():
		t.Fatal("OnDone was never called")
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != 1 || seen[0].Model != "bench" || !seen[0].Stream || len(seen[0].Messages) != 4 || seen[0].Messages[0].Role != "system" {
		t.Fatalf("requests seen: %+v", seen)
	}
	if done.Sub(seen[0].At) < latency {
		t.Errorf("done %s after the request, before the latency", done.Sub(seen[0].At))
	}
}

func TestPiecesKeepRunesWhole(t *testing.T) {
	for _, tc := range []struct {
		s string
		n int
	}{{"收到，这就回答你 (#123)", 3}, {"ok", 3}, {"", 2}, {"abcdefg", 7}, {"一二三", 5}} {
		got := pieces(tc.s, tc.n)
		if strings.Join(got, "") != tc.s || len(got) > max(tc.n, 1) {
			t.Errorf("pieces(%q, %d) = %q", tc.s, tc.n, got)
		}
		for _, p := range got {
			if !strings.ContainsRune(p, '\uFFFD') && strings.ToValidUTF8(p, "\uFFFD") != p {
				t.Errorf("pieces(%q, %d) cut a rune: %q", tc.s, tc.n, got)
			}
		}
	}
}

// TestContentPartsAreRead: a message whose content is an array of parts
// (text and images, as a user turn with pictures is sent) counts by its
// text parts, joined; the images do not upset the decoding.
func TestContentPartsAreRead(t *testing.T) {
	var mu sync.Mutex
	var last Request
	seen := func() Request {
		mu.Lock()
		defer mu.Unlock()
		return last
	}
	s := httptest.NewServer(New(Options{
		Reply: func(r Request) string { return "saw: " + r.LastUser() },
		OnRequest: func(r Request) {
			mu.Lock()
			defer mu.Unlock()
			last = r
		},
	}).Handler())
	defer s.Close()
	p := openai.New("sim", llm.Endpoint{BaseURL: s.URL + "/v1"})
	text, _, _, err := llmtest.Collect(p.Stream(t.Context(), llm.Request{Model: "vision", Messages: []llm.Message{
		{Role: llm.RoleUser, Text: "看这个", Images: []llm.Image{{MIME: "image/png", Data: []byte("\x89PNG\r\n")}}},
		{Role: llm.RoleAssistant, Text: "嗯"},
		{Role: llm.RoleUser, Images: []llm.Image{{MIME: "image/jpeg", Data: []byte{0xff, 0xd8}}}},
	}}))
	if err != nil {
		t.Fatal(err)
	}
	got := seen()
	if text != "saw: " || got.Messages[0].Content != "看这个" || got.Messages[2].Content != "" {
		t.Errorf("answered %q to %+v", text, got.Messages)
	}

	body := `{"model":"m","stream":false,"messages":[{"role":"user","content":[` +
		`{"type":"text","text":"one "},{"type":"image_url","image_url":{"url":"data:image/png;base64,iVBORw0K"}},{"type":"text","text":"two"}]}]}`
	res, err := http.Post(s.URL+"/v1/chat/completions", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var answer struct {
		Choices []struct {
			Message struct{ Content string } `json:"message"`
		} `json:"choices"`
	}
	if err := json.NewDecoder(res.Body).Decode(&answer); err != nil || res.StatusCode != http.StatusOK || len(answer.Choices) != 1 {
		t.Fatalf("HTTP %d, %+v, %v", res.StatusCode, answer, err)
	}
	if c := answer.Choices[0].Message.Content; c != "saw: one two" || seen().LastUser() != "one two" {
		t.Errorf("answered %q, last user %q", c, seen().LastUser())
	}
}

func TestTranscribesAndListsModels(t *testing.T) {
	s := httptest.NewServer(New(Options{Models: []string{"sim-chat", "sim-whisper"}}).Handler())
	defer s.Close()
	text, err := openai.NewTranscriber(openai.TranscriberOptions{BaseURL: s.URL + "/v1"}).Transcribe(t.Context(), []byte("OggS"), "voice.ogg", "audio/ogg")
	if err != nil || text != DefaultTranscript {
		t.Errorf("transcript %q, %v", text, err)
	}
	for _, path := range []string{"/v1/models", "/models"} {
		res, err := http.Get(s.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		var list struct {
			Object string
			Data   []struct{ ID, Object string }
		}
		err = json.NewDecoder(res.Body).Decode(&list)
		res.Body.Close()
		if err != nil || list.Object != "list" || len(list.Data) != 2 || list.Data[1].ID != "sim-whisper" || list.Data[1].Object != "model" {
			t.Errorf("GET %s: %+v, %v", path, list, err)
		}
	}
}
