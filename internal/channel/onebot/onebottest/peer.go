// Package onebottest is an in-process OneBot v11 implementation for tests:
// a WebSocket server that answers actions with real framing and pushes
// events, so the QQ channel is tested against the protocol it speaks.
package onebottest

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/coder/websocket"
)

// Handler answers one action: data on success, or a retcode and message
// on failure. ok false with retcode 0 means "never answer".
type Handler func(action string, params json.RawMessage) (data any, retcode int, message string)

// Call is one action the peer received.
type Call struct {
	Action string
	Params json.RawMessage
}

// Peer is a fake OneBot implementation serving forward WebSocket
// connections at URL.
type Peer struct {
	URL string
	// Token, when set, is required as a Bearer token or access_token.
	Token string

	mu      sync.Mutex
	handler Handler
	silent  map[string]bool
	calls   []Call
	conns   []*websocket.Conn
	connCh  chan struct{}
	called  chan string
}

// New starts a peer answering with h.
func New(t testing.TB, h Handler) *Peer {
	p := &Peer{handler: h, silent: map[string]bool{}, connCh: make(chan struct{}, 16), called: make(chan string, 256)}
	srv := httptest.NewServer(http.HandlerFunc(p.serve))
	t.Cleanup(func() {
		p.DropAll()
		srv.Close()
	})
	p.URL = "ws" + strings.TrimPrefix(srv.URL, "http")
	return p
}

// Silence makes the peer never answer action.
func (p *Peer) Silence(action string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.silent[action] = true
}

// Calls returns the actions received so far.
func (p *Peer) Calls() []Call {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]Call(nil), p.calls...)
}

// Called delivers the name of each action as the peer receives it (the
// newest 256 are kept).
func (p *Peer) Called() <-chan string { return p.called }

// Connected waits for the next client connection.
func (p *Peer) Connected(ctx context.Context) error {
	select {
	case <-p.connCh:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Push sends an event frame to every connected client.
func (p *Peer) Push(ctx context.Context, event any) error {
	b, err := json.Marshal(event)
	if err != nil {
		return err
	}
	p.mu.Lock()
	conns := append([]*websocket.Conn(nil), p.conns...)
	p.mu.Unlock()
	for _, c := range conns {
		if err := c.Write(ctx, websocket.MessageText, b); err != nil {
			return err
		}
	}
	return nil
}

// DropAll closes every client connection abruptly.
func (p *Peer) DropAll() {
	p.mu.Lock()
	conns := p.conns
	p.conns = nil
	p.mu.Unlock()
	for _, c := range conns {
		_ = c.CloseNow()
	}
}

func (p *Peer) serve(w http.ResponseWriter, r *http.Request) {
	if p.Token != "" {
		got := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
		if got != p.Token && r.URL.Query().Get("access_token") != p.Token {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
	}
	c, err := websocket.Accept(w, r, nil)
	if err != nil {
		return
	}
	p.mu.Lock()
	p.conns = append(p.conns, c)
	p.mu.Unlock()
	p.connCh <- struct{}{}
	ctx := r.Context()
	for {
		_, data, err := c.Read(ctx)
		if err != nil {
			return
		}
		var req struct {
			Action string          `json:"action"`
			Params json.RawMessage `json:"params"`
			Echo   json.RawMessage `json:"echo"`
		}
		if json.Unmarshal(data, &req) != nil {
			continue
		}
		p.mu.Lock()
		p.calls = append(p.calls, Call{Action: req.Action, Params: req.Params})
		silent, h := p.silent[req.Action], p.handler
		p.mu.Unlock()
		select {
		case p.called <- req.Action:
		default:
		}
		if silent {
			continue
		}
		data2, retcode, message := h(req.Action, req.Params)
		resp := map[string]any{"status": "ok", "retcode": retcode, "data": data2, "echo": req.Echo, "message": message}
		if retcode != 0 {
			resp["status"] = "failed"
			resp["data"] = nil
		}
		b, _ := json.Marshal(resp)
		if err := c.Write(ctx, websocket.MessageText, b); err != nil {
			return
		}
	}
}
