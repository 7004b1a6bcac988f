package feishu

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	larkws "github.com/larksuite/oapi-sdk-go/v3/ws"
)

// State is how an account receives events.
type State string

// States. A webhook account is StateStarting, then StateListening; a
// long-connection account moves between StateConnecting,
// StateConnected, StateReconnecting and StateRefused. Either is
// StateStarting while it does not know who the bot is (events are
// refused then, for the platform to deliver again).
const (
	StateStarting     State = "starting"
	StateListening    State = "listening"
	StateConnecting   State = "connecting"
	StateConnected    State = "connected"
	StateReconnecting State = "reconnecting"
	// StateRefused: the platform refused the app's long connection
	// (wrong credentials, too many connections, forbidden); pincer
	// tries again now and then, but the fix is the operator's.
	StateRefused State = "refused"
)

// Health is an account's state, as /healthz and the dashboard show it.
type Health struct {
	State State
	// Err is what put the account in State: the refusal, the error of
	// the last attempt to connect or of the connection that dropped, or
	// why the bot's identity is not known yet; nil when none.
	Err error
	// Since is when the account entered State.
	Since time.Time
	// Hint says what to do about a refusal; empty otherwise.
	Hint string
	// LastPong is when the long connection last completed a ping: the
	// client sent it and the platform answered; zero before the first.
	LastPong time.Time
}

// Health reports how the account receives events.
func (a *Account) Health() Health {
	h := a.conn.health()
	if h.State != StateRefused && a.Self() == "" {
		h.State, h.Err = StateStarting, a.conn.identityError()
	}
	if h.State == StateRefused {
		h.Hint = refusalHint(h.Err, a.opts.AppID)
	}
	return h
}

// refusalHint says what to do about the long connection's refusal err.
func refusalHint(err error, appID string) string {
	var ce *larkws.ClientError
	switch {
	case errors.As(err, &ce) && ce.Code == larkws.AuthFailed:
		return "app " + appID + " has as many long connections as it may (50): stop the other clients of the app (another pincer serve?), or receive events by webhook"
	case errors.As(err, &ce) && ce.Code == larkws.Forbidden:
		return "the platform forbids app " + appID + " the long connection: only an enabled self-built app may use it; check the app in the developer console"
	case errors.As(err, &ce):
		return "the platform refused app " + appID + ": copy appId and appSecret again from the developer console (Credentials & Basic Info), check domain (feishu or lark), and run pincer doctor"
	}
	return "the long connection gave up reconnecting; pincer opens a new one shortly"
}

// connState is the state the long connection's client reports through
// its log lines (the SDK has no other way to tell), or the webhook's.
type connState struct {
	mu    sync.Mutex
	state State
	err   error
	since time.Time
	// idErr is why the bot's identity is not known yet.
	idErr error
	// changed is closed and replaced on every change of state.
	changed chan struct{}
	// pinged and ponged: the SDK logged its ping sent, and the pong
	// received, since the last completed ping at lastPong.
	pinged, ponged bool
	lastPong       time.Time
}

func (c *connState) health() Health {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.state
	if s == "" {
		s = StateStarting
	}
	return Health{State: s, Err: c.err, Since: c.since, LastPong: c.lastPong}
}

func (c *connState) set(s State, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.setLocked(s, err)
}

func (c *connState) setLocked(s State, err error) {
	if s != c.state {
		c.since = time.Now()
	}
	c.state, c.err = s, err
	c.changedLocked()
}

func (c *connState) changedLocked() {
	if c.changed != nil {
		close(c.changed)
	}
	c.changed = make(chan struct{})
}

// next is closed at the next change of state.
func (c *connState) next() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.changed == nil {
		c.changed = make(chan struct{})
	}
	return c.changed
}

func (c *connState) identity(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.idErr = err
	c.changedLocked()
}

func (c *connState) identityError() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.idErr
}

// The long connection's log lines (oapi-sdk-go v3.7.5, ws/client.go)
// that tell its state.
const (
	sdkConnected     = "connected to "
	sdkDisconnected  = "disconnected to "
	sdkReconnecting  = "trying to reconnect"
	sdkConnectFailed = "connect failed, err: "
	sdkReceiveFailed = "receive message failed, err: "
	sdkEndpointError = "get conn url failed, err: "
	sdkPingSent      = "ping success"
	sdkPongReceived  = "receive pong"
)

// sdkLine is a log call of the SDK: its first argument is the line
// (formatted already), the rest the connection id.
func sdkLine(args []any) string {
	if len(args) == 0 {
		return ""
	}
	s, _ := args[0].(string)
	return s
}

// observe updates the state from one of the SDK's log lines; it reports
// a line worth passing on to pincer's log, with the level and message to
// use (empty to drop the line). Every call takes c.mu: the SDK reads its
// connection id for a log line without synchronization, and the lock
// orders those reads before its writes in the next line it logs.
func (c *connState) observe(level string, args []any) (msg, keep string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	line := sdkLine(args)
	switch {
	case level == "info" && strings.HasPrefix(line, sdkConnected):
		c.setLocked(StateConnected, nil)
		return "Feishu long connection up", "info"
	case level == "info" && (strings.HasPrefix(line, sdkDisconnected) || strings.HasPrefix(line, sdkReconnecting)):
		if c.state != StateRefused {
			c.setLocked(StateReconnecting, c.err)
		}
		return "", ""
	case strings.HasPrefix(line, sdkReceiveFailed):
		c.setLocked(StateReconnecting, fmt.Errorf("connection dropped: %s", strings.TrimPrefix(line, sdkReceiveFailed)))
		return "Feishu long connection dropped; reconnecting", "warn"
	case strings.HasPrefix(line, sdkConnectFailed), strings.HasPrefix(line, sdkEndpointError):
		cause := strings.TrimPrefix(strings.TrimPrefix(line, sdkConnectFailed), sdkEndpointError)
		if c.state != StateRefused {
			c.setLocked(StateReconnecting, errors.New(cause))
		}
		return "Feishu long connection: connecting failed", "warn"
	case level == "debug" && (line == sdkPingSent || line == sdkPongReceived):
		if line == sdkPingSent {
			c.pinged = true
		} else {
			c.ponged = true
		}
		if c.pinged && c.ponged {
			c.pinged, c.ponged, c.lastPong = false, false, time.Now()
			c.changedLocked()
		}
		return "", ""
	case strings.HasPrefix(line, "handle message failed"):
		// An event refused (answered 500, to be delivered again): the
		// account logs why itself.
		return "", ""
	case level == "debug" || level == "info":
		return "", ""
	}
	return "Feishu long connection", level
}
