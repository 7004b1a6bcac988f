package llm

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
)

// countingConn counts the writes made on a connection.
type countingConn struct {
	net.Conn
	writes *atomic.Int64
}

func (c countingConn) Write(b []byte) (int, error) {
	c.writes.Add(1)
	return c.Conn.Write(b)
}

// TestModelRequestIsOneWrite: a chat request of a usual size (a 12 KiB
// body: a system prompt, tools and some history) goes out in one write,
// headers and body together, not the headers and then the body.
func TestModelRequestIsOneWrite(t *testing.T) {
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
	}))
	defer s.Close()
	var writes atomic.Int64
	tr := sharedTransport()
	var d net.Dialer
	tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := d.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return countingConn{c, &writes}, nil
	}
	defer tr.CloseIdleConnections()
	body := bytes.Repeat([]byte(`{"role":"user","content":"群里的消息"},`), 12<<10/44)
	for range 3 {
		before := writes.Load()
		req, err := http.NewRequest(http.MethodPost, s.URL+"/v1/chat/completions", bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		resp, err := (&http.Client{Transport: tr}).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if n := writes.Load() - before; n != 1 {
			t.Errorf("a request of %d bytes took %d writes, want 1", len(body), n)
		}
	}
}
