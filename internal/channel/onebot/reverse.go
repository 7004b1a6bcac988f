package onebot

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"sync"

	"github.com/coder/websocket"

	"github.com/pincerbot/pincer/internal/channel"
)

// ServeReverse accepts the implementation's reverse WebSocket. Every
// X-Client-Role (Universal, API, Event) is served as Universal, since
// NapCat and LLOneBot send Universal whatever they do. The token may come
// as "Bearer <t>", go-cqhttp's "Token <t>" or ?access_token=, and is
// compared in constant time. A connection whose X-Self-ID is not the
// configured selfId is refused. A second connection replaces the first,
// so events are never delivered twice.
func (a *Account) ServeReverse(w http.ResponseWriter, r *http.Request) {
	if !a.opts.Reverse {
		http.NotFound(w, r)
		return
	}
	if status := authorize(r, a.opts.Token); status != 0 {
		a.log.Warn("reverse WebSocket refused: bad access token", "status", status, "remote", r.RemoteAddr)
		http.Error(w, http.StatusText(status), status)
		return
	}
	header := r.Header.Get("X-Self-ID")
	if n, err := strconv.ParseInt(header, 10, 64); err == nil && a.opts.SelfID > 0 && ID(n) != a.opts.SelfID {
		a.log.Warn("reverse WebSocket refused: another QQ number", "x_self_id", header, "self_id", a.opts.SelfID.String())
		http.Error(w, "this endpoint serves another QQ account", http.StatusForbidden)
		return
	}
	in := a.running(w)
	if in == nil {
		return
	}
	ws, err := websocket.Accept(w, r, nil)
	if err != nil {
		a.log.Warn("reverse WebSocket handshake", "err", err)
		return
	}
	select {
	case in.conns <- reverseConn{ws: ws, header: header}:
	case <-in.stopped:
		_ = ws.Close(websocket.StatusGoingAway, "shutting down")
	case <-r.Context().Done():
		_ = ws.CloseNow()
	}
}

// serveReverse runs one reverse connection; it replaces an older one.
func (a *Account) serveReverse(ctx context.Context, rc reverseConn, sink channel.Sink, wg *sync.WaitGroup) {
	c := NewConn(rc.ws, a.opts.RequestTimeout, a.log)
	a.mu.Lock()
	old := a.reverse
	a.reverse = c
	a.state = StateConnected
	a.mu.Unlock()
	if old != nil {
		a.log.Warn("a new reverse WebSocket replaced the old one", "x_self_id", rc.header)
		_ = old.Close()
	}
	a.log.Info("reverse WebSocket connected", "x_self_id", rc.header)
	err := a.serveConn(ctx, c, rc.header, sink, wg)
	a.mu.Lock()
	last := a.reverse == c
	if last {
		a.reverse = nil
		if a.opts.WSURL == "" {
			a.state = StateListening
		}
	}
	a.mu.Unlock()
	if err != nil && last {
		a.log.Warn("reverse WebSocket lost", "err", err)
	}
}

// ServePost receives an event the implementation POSTs. The X-Signature
// HMAC-SHA1 is checked over the raw body before anything is decoded; the
// answer is 204 at once and the event is handled afterwards, so a slow
// turn never makes go-cqhttp retry (and duplicate) it.
func (a *Account) ServePost(w http.ResponseWriter, r *http.Request) {
	if !a.opts.Post {
		http.NotFound(w, r)
		return
	}
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	body, err := readBody(w, r)
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			http.Error(w, "event too large", http.StatusRequestEntityTooLarge)
			return
		}
		http.Error(w, "bad body", http.StatusBadRequest)
		return
	}
	if status := checkSignature(r, body, a.opts.PostSecret); status != 0 {
		a.log.Warn("event POST refused: bad signature", "status", status, "remote", r.RemoteAddr)
		http.Error(w, http.StatusText(status), status)
		return
	}
	in := a.running(w)
	if in == nil {
		return
	}
	select {
	case in.posts <- post{body: body, header: r.Header.Get("X-Self-ID")}:
		w.WriteHeader(http.StatusNoContent)
	case <-in.stopped:
		http.Error(w, "shutting down", http.StatusServiceUnavailable)
	case <-r.Context().Done():
	}
}

// running returns Run's intake, or answers 503 and returns nil once the
// account has stopped. Before Run starts, callers wait on the intake.
func (a *Account) running(w http.ResponseWriter) *intake {
	select {
	case <-a.intake.stopped:
		http.Error(w, "not running", http.StatusServiceUnavailable)
		return nil
	default:
		return a.intake
	}
}
