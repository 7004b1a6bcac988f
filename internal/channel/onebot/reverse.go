package onebot

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/coder/websocket"

	"github.com/pincerbot/pincer/internal/channel"
	"github.com/pincerbot/pincer/internal/channel/onebot/wire"
)

// ServeReverse accepts the implementation's reverse WebSocket. Every
// X-Client-Role (Universal, API, Event) is served as Universal, since
// NapCat and LLOneBot send Universal whatever they do. The token may come
// as "Bearer <t>", go-cqhttp's "Token <t>", the bare "<t>" or
// ?access_token=, and is compared in constant time; any other
// Authorization scheme is refused. A connection whose X-Self-ID is not the
// configured selfId is refused.
//
// A connection that passes replaces the account's live one, so events are
// never delivered twice, and the handover is logged with both remote
// addresses. With a token configured only a connection that carries it
// gets this far; without one (which the configuration allows only on a
// loopback listener) any local process does. Refusals are logged at most
// once a minute.
func (a *Account) ServeReverse(w http.ResponseWriter, r *http.Request) {
	if !a.opts.Reverse {
		http.NotFound(w, r)
		return
	}
	if status, reason := authorize(r, a.opts.Token); status != 0 {
		a.refused.warn(a.log, "reverse WebSocket refused", "reason", reason, "status", status, "remote", r.RemoteAddr)
		if status == http.StatusUnauthorized {
			w.Header().Set("WWW-Authenticate", `Bearer realm="onebot"`)
		}
		http.Error(w, http.StatusText(status), status)
		return
	}
	header := r.Header.Get("X-Self-ID")
	if n, err := strconv.ParseInt(header, 10, 64); err == nil && a.opts.SelfID > 0 && wire.ID(n) != a.opts.SelfID {
		a.refused.warn(a.log, "reverse WebSocket refused: another QQ number", "x_self_id", header, "self_id", a.opts.SelfID.String(), "remote", r.RemoteAddr)
		http.Error(w, "this endpoint serves another QQ account", http.StatusForbidden)
		return
	}
	in := a.running(w)
	if in == nil {
		return
	}
	// Numbered before the handshake is answered: an implementation that
	// reconnects only after its earlier handshake was answered always gets
	// the higher number, however the two hand-offs to Run interleave.
	seq := a.handshakes.Add(1)
	ws, err := websocket.Accept(w, r, nil)
	if err != nil {
		a.log.Warn("reverse WebSocket handshake", "err", err, "remote", r.RemoteAddr)
		return
	}
	rc := reverseConn{ws: ws, header: header, remote: r.RemoteAddr, seq: seq}
	select {
	case in.conns <- rc:
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
	if a.reverse != nil && a.reverseSeq > rc.seq {
		// A connection whose handshake finished later is live already:
		// this one is stale.
		a.mu.Unlock()
		a.log.Info("a reverse WebSocket older than the live one was closed", "remote", rc.remote, "live_remote", a.reverseFrom)
		_ = rc.ws.Close(websocket.StatusPolicyViolation, "a newer connection is live")
		return
	}
	old, oldFrom := a.reverse, a.reverseFrom
	a.reverse, a.reverseFrom, a.reverseSeq = c, rc.remote, rc.seq
	a.state = StateConnected
	a.mu.Unlock()
	if old != nil {
		a.log.Info("a new reverse WebSocket replaced the live one", "remote", rc.remote, "replaced_remote", oldFrom, "x_self_id", rc.header)
		_ = old.close()
	}
	a.log.Info("reverse WebSocket connected", "x_self_id", rc.header, "remote", rc.remote)
	err := a.serveConn(ctx, c, rc.header, sink, wg)
	a.mu.Lock()
	last := a.reverse == c
	if last {
		a.reverse, a.reverseFrom = nil, ""
		if a.opts.WSURL == "" {
			a.state = StateListening
		}
	}
	a.mu.Unlock()
	if err != nil && last {
		a.log.Warn("reverse WebSocket lost", "err", err, "remote", rc.remote)
	}
}

// ServePost receives an event the implementation POSTs. The X-Signature
// HMAC-SHA1 is checked over the raw body before anything is decoded; an
// event for another QQ number than the account's (its X-Self-ID, else the
// self_id in the event) is refused with 403 once the number is known. The
// answer is 204 at once and the event is handled afterwards, so a slow
// turn never makes go-cqhttp retry (and duplicate) it. Refusals are
// logged at most once a minute.
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
		a.refused.warn(a.log, "event POST refused: bad signature", "status", status, "remote", r.RemoteAddr)
		http.Error(w, http.StatusText(status), status)
		return
	}
	header := r.Header.Get("X-Self-ID")
	if self, named := a.foreignSelf(header, body); named != "" {
		a.refused.warn(a.log, "event POST refused: another QQ number", "x_self_id", named, "self_id", self.String(), "remote", r.RemoteAddr)
		http.Error(w, "this endpoint serves another QQ account", http.StatusForbidden)
		return
	}
	in := a.running(w)
	if in == nil {
		return
	}
	// While pincer is saturated the event waits a moment for room, then
	// the implementation is asked to try again later: nothing is dropped.
	full := time.NewTimer(postWait)
	defer full.Stop()
	select {
	case in.posts <- post{body: body, header: header}:
		w.WriteHeader(http.StatusNoContent)
	case <-full.C:
		a.refused.warn(a.log, "event POST refused: pincer is saturated; the implementation should retry", "remote", r.RemoteAddr)
		w.Header().Set("Retry-After", "1")
		http.Error(w, "busy: retry later", http.StatusServiceUnavailable)
	case <-in.stopped:
		http.Error(w, "shutting down", http.StatusServiceUnavailable)
	case <-r.Context().Done():
	}
}

// postWait is how long a POSTed event waits for room in a saturated
// pincer before it is answered 503.
const postWait = 2 * time.Second

// foreignSelf returns the QQ number a POSTed event is for when it is not
// the account's (configured, or learnt from a connection): its X-Self-ID
// header, which must be a number, else the self_id in the event. named is
// "" when the event is the account's, names no number, or the account's
// number is not known yet.
func (a *Account) foreignSelf(header string, body []byte) (self wire.ID, named string) {
	self = a.Self()
	if self == 0 {
		return 0, ""
	}
	if header != "" {
		if n, err := strconv.ParseInt(strings.TrimSpace(header), 10, 64); err != nil || wire.ID(n) != self {
			return self, header
		}
	}
	var ev struct {
		SelfID wire.ID `json:"self_id"`
	}
	if json.Unmarshal(body, &ev) == nil && ev.SelfID != 0 && ev.SelfID != self {
		return self, ev.SelfID.String()
	}
	return self, ""
}

// running returns Run's intake, or answers 503 and returns nil once the
// account has stopped. Before Run starts, callers wait on the intake.
func (a *Account) running(w http.ResponseWriter) *intake {
	a.mu.Lock()
	in := a.intake
	a.mu.Unlock()
	select {
	case <-in.stopped:
		http.Error(w, "not running", http.StatusServiceUnavailable)
		return nil
	default:
		return in
	}
}

// readBody reads a POSTed event, bounded.
func readBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	return io.ReadAll(http.MaxBytesReader(w, r.Body, maxFrame))
}

// refusalLogEvery is how often one kind of refused request is logged.
const refusalLogEvery = time.Minute

// refusals logs refused inbound requests, each kind (its message) at most
// once per refusalLogEvery with the count of those held back since, so a
// stranger knocking cannot flood the log. The zero value is ready.
type refusals struct {
	mu   sync.Mutex
	last map[string]time.Time
	held map[string]int
}

func (f *refusals) warn(log *slog.Logger, msg string, args ...any) {
	now := time.Now()
	f.mu.Lock()
	if last, ok := f.last[msg]; ok && now.Sub(last) < refusalLogEvery {
		f.held[msg]++
		f.mu.Unlock()
		return
	}
	if f.last == nil {
		f.last, f.held = map[string]time.Time{}, map[string]int{}
	}
	f.last[msg] = now
	held := f.held[msg]
	delete(f.held, msg)
	f.mu.Unlock()
	if held > 0 {
		args = append(args, "not_logged_since", held)
	}
	log.Warn(msg, args...)
}
