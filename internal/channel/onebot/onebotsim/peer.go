// Package onebotsim is an in-process OneBot v11 implementation: a
// simulated QQ client for trying pincer without an account (pincer dev
// onebot-sim) and the peer the tests talk to (onebottest). It speaks the
// real protocol: it serves a forward WebSocket and an HTTP API, dials a
// reverse WebSocket, POSTs signed events, pushes events and answers
// actions. It does not import testing, so the pincer binary can link it.
package onebotsim

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/coder/websocket"
)

// Handler answers one action: data on success, or a non-zero retcode and
// a message on failure.
type Handler func(action string, params json.RawMessage) (data any, retcode int, message string)

// Call is one action the peer received.
type Call struct {
	Action string
	Params json.RawMessage
}

// Peer is a OneBot v11 implementation, as a QQ client such as NapCat
// would run it, answering actions with its Handler.
type Peer struct {
	// URL is the forward WebSocket ("ws://…"); HTTPURL the HTTP API.
	URL     string
	HTTPURL string
	// Token, when set, is required as a Bearer token or access_token.
	Token string

	mu      sync.Mutex
	handler Handler
	silent  map[string]bool
	refused map[string]refusal
	calls   []Call
	sent    []Message
	uploads []Upload
	files   map[string]File
	rkey    int
	conns   []*websocket.Conn
	connCh  chan struct{}
	called  chan string
	srv     *http.Server
	wg      sync.WaitGroup
	closing bool
}

// New returns a peer that answers with h but does not listen yet: serve
// its Handler with a server of your own, set URL and HTTPURL, and call
// DropAll (or Close) when done. Serve does all of that on a listener.
func New(h Handler) *Peer {
	return &Peer{
		handler: h, silent: map[string]bool{}, refused: map[string]refusal{}, files: map[string]File{},
		connCh: make(chan struct{}, 16), called: make(chan string, 256),
	}
}

// Serve starts a peer on ln, answering with h: a development simulator,
// or a test that picks its own listener. Stop it with Close.
func Serve(ln net.Listener, h Handler) *Peer {
	p := New(h)
	p.srv = &http.Server{Handler: p.Handler(), ReadHeaderTimeout: 10 * time.Second}
	p.wg.Go(func() { _ = p.srv.Serve(ln) })
	p.URL = "ws://" + ln.Addr().String()
	p.HTTPURL = "http://" + ln.Addr().String()
	return p
}

// Close stops a peer started with Serve, drops its connections and waits
// for the connections it dialed (DialReverse) to end.
func (p *Peer) Close() {
	p.mu.Lock()
	p.closing = true
	p.mu.Unlock()
	p.DropAll()
	if p.srv != nil {
		_ = p.srv.Close()
	}
	p.wg.Wait()
}

// Handler serves the forward WebSocket on any path, the HTTP API as
// POST /<action>, and the files of SetFile at their URLs (GET /download,
// without a token, as QQ's media servers serve them).
func (p *Peer) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet && r.URL.Path == downloadPath && !strings.EqualFold(r.Header.Get("Upgrade"), "websocket") {
			p.serveFile(w, r)
			return
		}
		if !p.authorized(r) {
			status := http.StatusUnauthorized
			if r.Header.Get("Authorization") != "" || r.URL.Query().Has("access_token") {
				status = http.StatusForbidden
			}
			http.Error(w, "unauthorized", status)
			return
		}
		if strings.EqualFold(r.Header.Get("Upgrade"), "websocket") {
			p.serveWS(w, r)
			return
		}
		p.serveHTTP(w, r)
	})
}

func (p *Peer) authorized(r *http.Request) bool {
	if p.Token == "" {
		return true
	}
	got := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
	return got == p.Token || r.URL.Query().Get("access_token") == p.Token
}

// Silence makes the peer never answer action.
func (p *Peer) Silence(action string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.silent[action] = true
}

// Speak lifts a Silence of action: the peer answers it again.
func (p *Peer) Speak(action string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.silent, action)
}

// Refuse makes the peer fail action with retcode and message, whatever
// its handler says; retcode 0 lifts the refusal.
func (p *Peer) Refuse(action string, retcode int, message string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if retcode == 0 {
		delete(p.refused, action)
		return
	}
	p.refused[action] = refusal{retcode, message}
}

type refusal struct {
	retcode int
	message string
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

// Connected waits for the next WebSocket connection, forward or reverse.
func (p *Peer) Connected(ctx context.Context) error {
	select {
	case <-p.connCh:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Conns reports how many WebSocket connections are open.
func (p *Peer) Conns() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.conns)
}

// Push sends an event frame to every connected WebSocket.
func (p *Peer) Push(ctx context.Context, event any) error {
	b, err := json.Marshal(event)
	if err != nil {
		return fmt.Errorf("onebotsim: encode event: %w", err)
	}
	return p.PushRaw(ctx, b)
}

// PushRaw sends an encoded frame to every connected WebSocket.
func (p *Peer) PushRaw(ctx context.Context, b []byte) error {
	p.mu.Lock()
	conns := append([]*websocket.Conn(nil), p.conns...)
	p.mu.Unlock()
	for _, c := range conns {
		if err := c.Write(ctx, websocket.MessageText, b); err != nil {
			return fmt.Errorf("onebotsim: push: %w", err)
		}
	}
	return nil
}

// DropAll closes every WebSocket connection abruptly.
func (p *Peer) DropAll() {
	p.mu.Lock()
	conns := p.conns
	p.conns = nil
	p.mu.Unlock()
	for _, c := range conns {
		_ = c.CloseNow()
	}
}

func (p *Peer) serveWS(w http.ResponseWriter, r *http.Request) {
	c, err := websocket.Accept(w, r, nil)
	if err != nil {
		return
	}
	p.serveConn(r.Context(), c)
}

// serveConn answers actions on c until it closes.
func (p *Peer) serveConn(ctx context.Context, c *websocket.Conn) {
	c.SetReadLimit(32 << 20)
	p.mu.Lock()
	if p.closing {
		p.mu.Unlock()
		_ = c.CloseNow()
		return
	}
	p.conns = append(p.conns, c)
	p.mu.Unlock()
	defer p.forget(c)
	select {
	case p.connCh <- struct{}{}:
	default:
	}
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
		resp, ok := p.answer(req.Action, req.Params)
		if !ok {
			continue
		}
		resp.Echo = req.Echo
		b, _ := json.Marshal(resp)
		if err := c.Write(ctx, websocket.MessageText, b); err != nil {
			return
		}
	}
}

func (p *Peer) forget(c *websocket.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i, x := range p.conns {
		if x == c {
			p.conns = append(p.conns[:i], p.conns[i+1:]...)
			break
		}
	}
	_ = c.CloseNow()
}

// answer records a call and builds its response; ok is false for a
// silenced action. A refused action fails; the peer's own actions
// (uploads, and the files of SetFile) are answered by the peer; the rest
// by the handler.
func (p *Peer) answer(action string, params json.RawMessage) (*response, bool) {
	p.mu.Lock()
	p.calls = append(p.calls, Call{Action: action, Params: params})
	p.record(action, params)
	silent, refused, h := p.silent[action], p.refused[action], p.handler
	p.mu.Unlock()
	select {
	case p.called <- action:
	default:
	}
	if silent {
		return nil, false
	}
	var (
		data    any
		retcode int
		message string
	)
	if refused.retcode != 0 {
		retcode, message = refused.retcode, refused.message
	} else if d, ok := p.builtin(action, params); ok {
		data = d
	} else {
		data, retcode, message = h(action, params)
	}
	resp := &response{Status: "ok", Retcode: retcode, Data: data, Message: message}
	if retcode != 0 {
		resp.Status, resp.Data = "failed", nil
	}
	return resp, true
}

// response is an action's answer, its fields in the order NapCat writes
// them; the echo only over a WebSocket.
type response struct {
	Status  string          `json:"status"`
	Retcode int             `json:"retcode"`
	Data    any             `json:"data"`
	Message string          `json:"message"`
	Echo    json.RawMessage `json:"echo,omitempty"`
}

// serveHTTP is the HTTP API: POST /<action> with the params as a JSON
// body, answered with status 200 even when the action failed.
func (p *Peer) serveHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		http.Error(w, "content type", http.StatusNotAcceptable)
		return
	}
	var params json.RawMessage
	if err := json.NewDecoder(r.Body).Decode(&params); err != nil {
		http.Error(w, "bad body", http.StatusBadRequest)
		return
	}
	action := strings.Trim(r.URL.Path, "/")
	resp, ok := p.answer(action, params)
	if !ok {
		<-r.Context().Done()
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(resp)
}
