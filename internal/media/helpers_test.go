package media

import (
	"bytes"
	"context"
	"image"
	"image/color"
	"image/png"
	"iter"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/pincerbot/pincer/internal/llm"
)

// pngBytes is a small PNG whose content depends on seed.
func pngBytes(t testing.TB, seed uint8) []byte {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, 2, 2))
	img.Set(0, 0, color.RGBA{R: seed, A: 255})
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// serve starts a loopback server of h, closed when the test ends.
func serve(t testing.TB, h http.HandlerFunc) *httptest.Server {
	t.Helper()
	s := httptest.NewServer(h)
	t.Cleanup(s.Close)
	return s
}

// fakeModel is an llm.Provider that answers every request with reply,
// after gate is closed when gate is set.
type fakeModel struct {
	reply string
	err   error
	gate  chan struct{}
	// cut ends the stream before EventDone.
	cut bool

	calls atomic.Int32
	mu    sync.Mutex
	reqs  []llm.Request
}

func (m *fakeModel) ID() string { return "fake" }

func (m *fakeModel) Stream(ctx context.Context, req llm.Request) iter.Seq2[llm.Event, error] {
	return func(yield func(llm.Event, error) bool) {
		m.calls.Add(1)
		m.mu.Lock()
		m.reqs = append(m.reqs, req)
		m.mu.Unlock()
		if m.gate != nil {
			select {
			case <-m.gate:
			case <-ctx.Done():
				yield(llm.Event{}, &llm.Error{Err: ctx.Err()})
				return
			}
		}
		if m.err != nil {
			yield(llm.Event{}, m.err)
			return
		}
		if !yield(llm.Event{Kind: llm.EventText, Text: m.reply}, nil) || m.cut {
			return
		}
		yield(llm.Event{Kind: llm.EventDone, StopReason: "stop"}, nil)
	}
}

func (m *fakeModel) requests() []llm.Request {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]llm.Request(nil), m.reqs...)
}
