package onebot

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/pincerbot/pincer/internal/channel/onebot/wire"
)

// Caller runs OneBot actions: a live connection, the HTTP API, or another
// process that holds the account's connection (RemoteCaller).
type Caller interface {
	Call(ctx context.Context, action string, params any, timeout time.Duration) (json.RawMessage, error)
}

// RemoteCaller runs actions through another process that holds the
// account's connection: request carries an encoded call there (the
// process answers with Account.ServeRemote) and returns its answer. The
// errors come back as the holder met them: a *wire.ActionError with its
// retcode, a timeout, a lost or missing connection.
func RemoteCaller(request func(ctx context.Context, call []byte) ([]byte, error)) Caller {
	return remoteCaller(request)
}

type remoteCaller func(ctx context.Context, call []byte) ([]byte, error)

// ErrHolderGone is what a RemoteCaller's request returns (wrapped) when
// the process holding the connection went away with the call under way:
// whether the action was carried out is not known, as when a connection
// drops while an action waits for its answer.
var ErrHolderGone = errors.New("onebot: the connection's holder went away before it answered")

// remoteCall is an action asked of the holder of the connection.
type remoteCall struct {
	Action    string          `json:"action"`
	Params    json.RawMessage `json:"params,omitempty"`
	TimeoutMs int64           `json:"timeoutMs,omitempty"`
}

// remoteAnswer is the holder's answer: the action's data or its error.
type remoteAnswer struct {
	Data  json.RawMessage `json:"data,omitempty"`
	Error *remoteError    `json:"error,omitempty"`
}

// remoteError carries an error's kind across, so the caller's retry and
// give-up rules work as over its own connection.
type remoteError struct {
	Kind    string `json:"kind"` // action | timeout | disconnected | not_connected | other
	Action  string `json:"action,omitempty"`
	Retcode int    `json:"retcode,omitempty"`
	Status  string `json:"status,omitempty"`
	Message string `json:"message"`
}

// remoteMargin is how much longer than the action's own timeout the caller
// waits for the holder's answer.
const remoteMargin = 2 * time.Second

func (r remoteCaller) Call(ctx context.Context, action string, params any, timeout time.Duration) (json.RawMessage, error) {
	call := remoteCall{Action: action, TimeoutMs: timeout.Milliseconds()}
	if params != nil {
		b, err := json.Marshal(params)
		if err != nil {
			return nil, fmt.Errorf("onebot: %s: %w", action, err)
		}
		call.Params = b
	}
	req, err := json.Marshal(call)
	if err != nil {
		return nil, fmt.Errorf("onebot: %s: %w", action, err)
	}
	if timeout <= 0 {
		timeout = 30 * time.Second // the holder's connection waits as long (NewConn)
	}
	ctx, cancel := context.WithTimeout(ctx, timeout+remoteMargin)
	defer cancel()
	resp, err := r(ctx, req)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			return nil, fmt.Errorf("%s: %w through the connection's holder", action, errTimeout)
		}
		if errors.Is(err, ErrHolderGone) {
			return nil, fmt.Errorf("%s: %w: %v", action, errDisconnected, err)
		}
		return nil, fmt.Errorf("%s: %w: %v", action, errNotConnected, err)
	}
	var ans remoteAnswer
	if err := json.Unmarshal(resp, &ans); err != nil {
		return nil, fmt.Errorf("onebot: %s: the holder's answer: %w", action, err)
	}
	if e := ans.Error; e != nil {
		return nil, e.restore(action)
	}
	return ans.Data, nil
}

// restore turns an error that came across back into the one it was.
func (e *remoteError) restore(action string) error {
	switch e.Kind {
	case "action":
		return &wire.ActionError{Action: e.Action, Retcode: e.Retcode, Status: e.Status, Message: e.Message}
	case "timeout":
		return fmt.Errorf("%s: %w (at the connection's holder: %s)", action, errTimeout, e.Message)
	case "disconnected":
		return fmt.Errorf("%s: %w (at the connection's holder: %s)", action, errDisconnected, e.Message)
	case "not_connected":
		return fmt.Errorf("%s: %w (at the connection's holder)", action, errNotConnected)
	}
	return fmt.Errorf("onebot: %s at the connection's holder: %s", action, e.Message)
}

// ServeRemote runs a call that another process sent through RemoteCaller,
// over this process's own connection (or the HTTP API), never on to a
// third process, and encodes the answer.
func (a *Account) ServeRemote(ctx context.Context, req []byte) ([]byte, error) {
	var call remoteCall
	if err := json.Unmarshal(req, &call); err != nil {
		return nil, fmt.Errorf("onebot: a remote call: %w", err)
	}
	var ans remoteAnswer
	c, err := a.localCaller()
	if err == nil {
		var params any
		if len(call.Params) > 0 {
			params = call.Params
		}
		ans.Data, err = c.Call(ctx, call.Action, params, time.Duration(call.TimeoutMs)*time.Millisecond)
	}
	if err != nil {
		ans.Error = encodeRemoteError(err)
	}
	return json.Marshal(ans)
}

func encodeRemoteError(err error) *remoteError {
	var ae *wire.ActionError
	switch {
	case errors.As(err, &ae):
		return &remoteError{Kind: "action", Action: ae.Action, Retcode: ae.Retcode, Status: ae.Status, Message: ae.Message}
	case errors.Is(err, errTimeout):
		return &remoteError{Kind: "timeout", Message: err.Error()}
	case errors.Is(err, errDisconnected):
		return &remoteError{Kind: "disconnected", Message: err.Error()}
	case errors.Is(err, errNotConnected):
		return &remoteError{Kind: "not_connected", Message: err.Error()}
	}
	return &remoteError{Kind: "other", Message: err.Error()}
}

// LearnSelf records the bot's QQ number as the process holding the
// connection learned it (a process without the connection cannot ask).
func (a *Account) LearnSelf(self wire.ID) {
	if self <= 0 {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.self = self
}
