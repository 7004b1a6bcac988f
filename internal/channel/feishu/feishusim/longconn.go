package feishusim

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"math/big"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/coder/websocket"
	larkws "github.com/larksuite/oapi-sdk-go/v3/ws"
)

// The long connection's paths: endpoint discovery, which hands out the
// WebSocket URL, and the WebSocket itself.
const (
	PathWSEndpoint = "/callback/ws/endpoint"
	PathWSConnect  = "/ws/v2"
)

// Long connection refusals, as the SDK reads them: an endpoint answer
// with a code other than 0, 1 or 1000040343 is the app's fault (the SDK
// gives up), and so is a handshake answered with Handshake-Status 514
// and Handshake-Autherrcode 1000040350 (too many connections) or 403.
const (
	CodeWSSystemBusy    = 1          // endpoint: busy, try again
	CodeWSForbidden     = 403        // handshake: the app may not connect
	CodeWSAuthFailed    = 514        // handshake: authentication failed
	CodeWSExceedConnLim = 1000040350 // handshake auth error: too many connections
)

// DefaultMaxConnections is how many long connections one app may hold.
const DefaultMaxConnections = 50

// ClientConfig is what the platform tells a long-connection client, in
// seconds: how often to retry connecting (ReconnectCount -1 is for ever),
// the random delay before the first retry, and how often to ping.
type ClientConfig struct {
	ReconnectCount    int `json:"ReconnectCount"`
	ReconnectInterval int `json:"ReconnectInterval"`
	ReconnectNonce    int `json:"ReconnectNonce"`
	PingInterval      int `json:"PingInterval"`
}

// PlatformClientConfig is the platform's usual client configuration.
var PlatformClientConfig = ClientConfig{ReconnectCount: -1, ReconnectInterval: 120, ReconnectNonce: 30, PingInterval: 120}

// LongConn configures the simulated long connection. Zero fields take
// the platform's values.
type LongConn struct {
	// Config is handed to clients with the endpoint; nil means
	// PlatformClientConfig.
	Config *ClientConfig
	// ConfigOnce hands Config out only until a client has connected, so
	// a client that reconnects is not configured again. The v3.7.5 SDK
	// applies a configuration without synchronization while its ping
	// loop reads it, so a configuration received again on reconnect is a
	// data race the race detector reports; tests that reconnect under
	// -race set ConfigOnce (and have one client per Sim).
	ConfigOnce bool
	// PongConfig makes pongs carry Config, as the platform's do (the
	// same race applies: keep it off under -race).
	PongConfig bool
	// AckTimeout is how long a delivery waits for the client's
	// acknowledgement; zero means 3 s.
	AckTimeout time.Duration
	// Retry is how long after a delivery that was not acknowledged with
	// 200 the event is delivered again, one delay per retry; nil means
	// 15 s, 5 min, 1 h and 6 h. An event is delivered again also when no
	// client is connected.
	Retry []time.Duration
	// MaxConnections bounds the app's connections: one more is refused
	// at the handshake. Zero means DefaultMaxConnections.
	MaxConnections int
}

// Refusal is how the simulated platform refuses the app's long
// connection (SetRefusal).
type Refusal int

// Refusals.
const (
	// RefuseNone accepts the app.
	RefuseNone Refusal = iota
	// RefuseCredentials answers endpoint discovery with the code of a
	// wrong app secret, as for an app whose credentials are wrong.
	RefuseCredentials
	// RefuseConnLimit refuses the handshake as when the app already has
	// as many connections as it may.
	RefuseConnLimit
	// RefuseForbidden refuses the handshake with 403.
	RefuseForbidden
	// RefuseBusy answers endpoint discovery "system busy", which a client
	// retries.
	RefuseBusy
)

// longConns is the simulator's long-connection side.
type longConns struct {
	mu       sync.Mutex
	conns    map[*wsConn]bool
	tickets  map[string]bool
	granted  int // endpoints handed out
	accepted int // handshakes accepted
	refused  int // endpoint requests and handshakes refused
	refusal  Refusal
	pings    int
	frameSeq uint64
	changed  chan struct{} // closed and replaced on every change
}

// wsConn is one client's connection.
type wsConn struct {
	c         *websocket.Conn
	serviceID int32
	writeMu   sync.Mutex
	mu        sync.Mutex
	acks      map[string]chan ack
	closed    chan struct{} // closed when the connection ends
}

type ack struct {
	code    int
	payload []byte
}

func newLongConns() *longConns {
	return &longConns{conns: map[*wsConn]bool{}, tickets: map[string]bool{}, changed: make(chan struct{})}
}

// changedLocked wakes the waiters of the long connections.
func (l *longConns) changedLocked() {
	close(l.changed)
	l.changed = make(chan struct{})
}

func (s *Sim) longConnOptions() (ClientConfig, time.Duration, []time.Duration, int) {
	o := s.opts.LongConn
	cfg := PlatformClientConfig
	if o.Config != nil {
		cfg = *o.Config
	}
	ackTimeout := o.AckTimeout
	if ackTimeout <= 0 {
		ackTimeout = 3 * time.Second
	}
	retry := o.Retry
	if retry == nil {
		retry = []time.Duration{15 * time.Second, 5 * time.Minute, time.Hour, 6 * time.Hour}
	}
	maxConns := o.MaxConnections
	if maxConns <= 0 {
		maxConns = DefaultMaxConnections
	}
	return cfg, ackTimeout, retry, maxConns
}

// SetRefusal makes the platform refuse the app's long connections from
// now on (RefuseNone accepts them again); connections already open stay.
func (s *Sim) SetRefusal(r Refusal) {
	s.lc.mu.Lock()
	defer s.lc.mu.Unlock()
	s.lc.refusal = r
	s.lc.changedLocked()
}

// Connections is how many long connections are open.
func (s *Sim) Connections() int {
	s.lc.mu.Lock()
	defer s.lc.mu.Unlock()
	return len(s.lc.conns)
}

// Pings is how many pings the clients sent.
func (s *Sim) Pings() int {
	s.lc.mu.Lock()
	defer s.lc.mu.Unlock()
	return s.lc.pings
}

// Refused is how many endpoint requests and handshakes were refused.
func (s *Sim) Refused() int {
	s.lc.mu.Lock()
	defer s.lc.mu.Unlock()
	return s.lc.refused
}

// WaitLongConn waits until cond holds of the open connections, the pings
// received and the refusals made, or ctx ends.
func (s *Sim) WaitLongConn(ctx context.Context, cond func(conns, pings, refused int) bool) error {
	for {
		s.lc.mu.Lock()
		ok := cond(len(s.lc.conns), s.lc.pings, s.lc.refused)
		ch := s.lc.changed
		s.lc.mu.Unlock()
		if ok {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("feishusim: waiting on the long connection: %w", ctx.Err())
		case <-ch:
		}
	}
}

// DropConnections closes every open long connection at once, as when
// the platform's gateway restarts, and returns how many it closed; from
// its return Connections counts only the clients that connect again.
// Under the race detector, drop a v3.7.5 SDK client only once it has
// logged its first ping and pong: it reads its connection id for those
// log lines without synchronization.
func (s *Sim) DropConnections() int {
	s.lc.mu.Lock()
	conns := make([]*wsConn, 0, len(s.lc.conns))
	for c := range s.lc.conns {
		conns = append(conns, c)
	}
	// Gone at once: a connection counted after this is a new one.
	clear(s.lc.conns)
	s.lc.changedLocked()
	s.lc.mu.Unlock()
	for _, c := range conns {
		_ = c.c.CloseNow()
	}
	return len(conns)
}

// CloseLongConn takes the app off the long connection for good: its
// connections are closed and, once each client has come back and been
// refused (so the SDK's reconnect loop ends rather than dialing a closed
// server for ever), CloseLongConn returns. Call it before the HTTP
// server closes; it gives up when ctx ends.
func (s *Sim) CloseLongConn(ctx context.Context) error {
	s.lc.mu.Lock()
	s.lc.refusal = RefuseCredentials
	want := s.lc.refused + len(s.lc.conns)
	s.lc.changedLocked()
	s.lc.mu.Unlock()
	s.DropConnections()
	return s.WaitLongConn(ctx, func(conns, _, refused int) bool { return conns == 0 && refused >= want })
}

// wsEndpoint serves POST /callback/ws/endpoint: the app's credentials
// buy a ticket in a WebSocket URL, and the client configuration.
func (s *Sim) wsEndpoint(q *request) *answer {
	var req larkws.BootstrapRequest
	if a := decodeBody(q, &req); a != nil {
		return a
	}
	l := s.lc
	l.mu.Lock()
	defer l.mu.Unlock()
	refuse := func(code int, msg string) *answer {
		l.refused++
		l.changedLocked()
		return &answer{status: http.StatusOK, code: code, body: envelope{Code: code, Msg: msg}}
	}
	switch {
	case req.AppID != s.opts.AppID:
		return refuse(CodeAppIDInvalid, codeText(CodeAppIDInvalid))
	case req.AppSecret != s.opts.AppSecret || l.refusal == RefuseCredentials:
		return refuse(CodeAppSecretInvalid, codeText(CodeAppSecretInvalid))
	case l.refusal == RefuseBusy:
		return refuse(CodeWSSystemBusy, "system busy")
	}
	cfg, _, _, _ := s.longConnOptions()
	ticket := rand.Text()
	l.tickets[ticket] = true
	l.granted++
	scheme := "ws"
	if q.r.TLS != nil {
		scheme = "wss"
	}
	u := fmt.Sprintf("%s://%s%s?device_id=%s&service_id=%d&ticket=%s", scheme, q.r.Host, PathWSConnect, derivedID("device", ticket, 16), 33554678, ticket)
	ep := larkws.Endpoint{Url: u}
	if !s.opts.LongConn.ConfigOnce || l.accepted == 0 {
		ep.ClientConfig = &larkws.ClientConfig{ReconnectCount: cfg.ReconnectCount, ReconnectInterval: cfg.ReconnectInterval,
			ReconnectNonce: cfg.ReconnectNonce, PingInterval: cfg.PingInterval}
	}
	return ok(ep)
}

// serveLongConn serves the WebSocket of a ticket the endpoint handed out.
func (s *Sim) serveLongConn(w http.ResponseWriter, r *http.Request) {
	l := s.lc
	_, _, _, maxConns := s.longConnOptions()
	ticket := r.URL.Query().Get("ticket")
	serviceID, _ := strconv.ParseInt(r.URL.Query().Get("service_id"), 10, 32)
	l.mu.Lock()
	status, authCode, text := 0, 0, ""
	switch {
	case !l.tickets[ticket]:
		status, text = CodeWSAuthFailed, "invalid ticket"
	case l.refusal == RefuseForbidden:
		status, text = CodeWSForbidden, "forbidden"
	case l.refusal == RefuseConnLimit || len(l.conns) >= maxConns:
		status, authCode, text = CodeWSAuthFailed, CodeWSExceedConnLim, "exceed conn limit"
	}
	delete(l.tickets, ticket)
	if status != 0 {
		l.refused++
		l.changedLocked()
		l.mu.Unlock()
		h := w.Header()
		h.Set(larkws.HeaderHandshakeStatus, strconv.Itoa(status))
		h.Set(larkws.HeaderHandshakeMsg, text)
		if authCode != 0 {
			h.Set(larkws.HeaderHandshakeAuthErrCode, strconv.Itoa(authCode))
		}
		w.WriteHeader(http.StatusForbidden)
		return
	}
	l.mu.Unlock()
	c, err := websocket.Accept(w, r, nil)
	if err != nil {
		return
	}
	c.SetReadLimit(1 << 22)
	conn := &wsConn{c: c, serviceID: int32(serviceID), acks: map[string]chan ack{}, closed: make(chan struct{})}
	l.mu.Lock()
	l.conns[conn] = true
	l.accepted++
	l.changedLocked()
	l.mu.Unlock()
	defer func() {
		_ = c.CloseNow()
		close(conn.closed)
		l.mu.Lock()
		delete(l.conns, conn)
		l.changedLocked()
		l.mu.Unlock()
	}()
	for {
		typ, data, err := c.Read(context.Background())
		if err != nil {
			return
		}
		var f larkws.Frame
		if typ != websocket.MessageBinary || f.Unmarshal(data) != nil {
			continue // the platform ignores what it cannot read
		}
		hs := larkws.Headers(f.Headers)
		switch {
		case larkws.FrameType(f.Method) == larkws.FrameTypeControl && hs.GetString(larkws.HeaderType) == string(larkws.MessageTypePing):
			l.mu.Lock()
			l.pings++
			l.changedLocked()
			l.mu.Unlock()
			s.pong(conn)
		case larkws.FrameType(f.Method) == larkws.FrameTypeData:
			// An acknowledgement: the frame sent back with the client's
			// {code, headers, data} as its payload.
			var resp struct {
				Code int `json:"code"`
			}
			_ = json.Unmarshal(f.Payload, &resp)
			conn.mu.Lock()
			ch := conn.acks[hs.GetString(larkws.HeaderMessageID)]
			delete(conn.acks, hs.GetString(larkws.HeaderMessageID))
			conn.mu.Unlock()
			if ch != nil {
				ch <- ack{code: resp.Code, payload: f.Payload}
			}
		}
	}
}

// pong answers a ping, with the client configuration when PongConfig is
// set.
func (s *Sim) pong(c *wsConn) {
	var hs larkws.Headers
	hs.Add(larkws.HeaderType, string(larkws.MessageTypePong))
	f := larkws.Frame{Method: int32(larkws.FrameTypeControl), Service: c.serviceID, Headers: hs}
	if s.opts.LongConn.PongConfig {
		cfg, _, _, _ := s.longConnOptions()
		f.Payload, _ = json.Marshal(cfg)
	}
	_ = s.writeFrame(c, &f)
}

func (s *Sim) writeFrame(c *wsConn, f *larkws.Frame) error {
	b, err := f.Marshal()
	if err != nil {
		return fmt.Errorf("feishusim: frame: %w", err)
	}
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return c.c.Write(ctx, websocket.MessageBinary, b)
}

// PushEvent delivers one event over the long connection, as the
// platform does: to one connected client picked at random (cluster
// mode), in a data frame of type event (split into opts.Chunks frames
// when that is above 1), and waits for the client's acknowledgement.
// An event not acknowledged with code 200 in time, or that found no
// client connected, is delivered again after each of LongConn.Retry's
// delays, until a client acknowledges it with 200 or the retries run
// out. The event is what PostEvent takes; Delivery.Status is the last
// acknowledgement's code (0 for none) and Attempts the deliveries made.
// PushEvent fails only when the event cannot be built or ctx ends.
func (s *Sim) PushEvent(ctx context.Context, event any, opts EventOptions) (*Delivery, error) {
	payload, eventID, err := s.eventPayload(event, opts)
	if err != nil {
		return nil, err
	}
	_, ackTimeout, retry, _ := s.longConnOptions()
	d := &Delivery{EventID: eventID, Payload: payload, Body: payload}
	for attempt := 0; ; attempt++ {
		d.Attempts++
		a, err := s.pushOnce(ctx, payload, opts.Chunks, ackTimeout)
		if err != nil {
			return d, err
		}
		d.Status, d.Response = a.code, a.payload
		if a.code == http.StatusOK || attempt >= len(retry) {
			return d, nil
		}
		t := time.NewTimer(retry[attempt])
		select {
		case <-ctx.Done():
			t.Stop()
			return d, fmt.Errorf("feishusim: push event: %w", ctx.Err())
		case <-t.C:
		}
	}
}

// pushOnce delivers payload once; a zero ack when no client took it.
func (s *Sim) pushOnce(ctx context.Context, payload []byte, chunks int, ackTimeout time.Duration) (ack, error) {
	l := s.lc
	l.mu.Lock()
	var conns []*wsConn
	for c := range l.conns {
		conns = append(conns, c)
	}
	l.frameSeq++
	seq := l.frameSeq
	l.mu.Unlock()
	if len(conns) == 0 {
		return ack{}, nil
	}
	n, _ := rand.Int(rand.Reader, big.NewInt(int64(len(conns))))
	c := conns[n.Int64()]
	msgID := fmt.Sprintf("sim_msg_%d_%s", seq, rand.Text()[:8])
	ch := make(chan ack, 1)
	c.mu.Lock()
	c.acks[msgID] = ch
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		delete(c.acks, msgID)
		c.mu.Unlock()
	}()
	chunks = max(1, min(chunks, len(payload)))
	size := (len(payload) + chunks - 1) / chunks
	for i := range chunks {
		part := payload[i*size : min(len(payload), (i+1)*size)]
		var hs larkws.Headers
		hs.Add(larkws.HeaderType, string(larkws.MessageTypeEvent))
		hs.Add(larkws.HeaderMessageID, msgID)
		hs.Add(larkws.HeaderSum, strconv.Itoa(chunks))
		hs.Add(larkws.HeaderSeq, strconv.Itoa(i))
		hs.Add(larkws.HeaderTraceID, derivedID("trace", msgID, 16))
		hs.Add(larkws.HeaderTimestamp, ms(s.now()))
		f := larkws.Frame{SeqID: seq, LogID: seq, Service: c.serviceID, Method: int32(larkws.FrameTypeData), Headers: hs, Payload: part}
		if err := s.writeFrame(c, &f); err != nil {
			return ack{}, nil // the connection broke: not delivered
		}
	}
	t := time.NewTimer(ackTimeout)
	defer t.Stop()
	select {
	case a := <-ch:
		return a, nil
	case <-t.C:
		return ack{}, nil
	case <-c.closed:
		return ack{}, nil
	case <-ctx.Done():
		return ack{}, fmt.Errorf("feishusim: push event: %w", ctx.Err())
	}
}
