package onebot

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"sync"
	"time"

	"github.com/coder/websocket"

	"github.com/pincerbot/pincer/internal/channel"
)

// DialForward connects to an implementation's forward WebSocket at url
// (use its "/" universal endpoint), sending the access token as a Bearer
// token, which every implementation accepts.
func DialForward(ctx context.Context, url, token string, client *http.Client) (*websocket.Conn, error) {
	opts := websocket.DialOptions{HTTPClient: client}
	if token != "" {
		opts.HTTPHeader = http.Header{"Authorization": {"Bearer " + token}}
	}
	c, res, err := websocket.Dial(ctx, url, &opts)
	if err != nil {
		if res != nil && (res.StatusCode == http.StatusUnauthorized || res.StatusCode == http.StatusForbidden) {
			return nil, fmt.Errorf("onebot: dial %s: the access token was refused (HTTP %d)", url, res.StatusCode)
		}
		return nil, fmt.Errorf("onebot: dial %s: %w", url, err)
	}
	return c, nil
}

// runForward keeps the forward WebSocket up: dialed, served until it
// ends, and dialed again as the Reconnect policy says.
func (a *Account) runForward(ctx context.Context, sink channel.Sink, wg *sync.WaitGroup) {
	_ = a.opts.Reconnect.run(ctx, func(ctx context.Context, up func()) error {
		ws, err := DialForward(ctx, a.opts.WSURL, a.opts.Token, a.opts.httpClient)
		if err != nil {
			return err
		}
		c := NewConn(ws, a.opts.RequestTimeout, a.log)
		up()
		return a.serveConn(ctx, c, "", sink, wg)
	}, a.setState)
}

// Reconnect configures how a lost connection is re-established.
type Reconnect struct {
	Enabled bool
	// Retries bounds consecutive failed attempts; a negative value means
	// no bound, 0 means never retry.
	Retries  int
	MinDelay time.Duration
	MaxDelay time.Duration
}

// defaultReconnect retries forever between 1 s and 30 s.
var defaultReconnect = Reconnect{Enabled: true, Retries: -1, MinDelay: time.Second, MaxDelay: 30 * time.Second}

// errRetriesExhausted is returned when a finite number of retries ran out;
// the account reports it as its state rather than stopping silently.
var errRetriesExhausted = errors.New("onebot: reconnect retries exhausted")

// delay returns the wait before attempt n (1-based): MinDelay doubled per
// attempt up to MaxDelay, with full jitter over its upper half so accounts
// do not reconnect in step.
func (r Reconnect) delay(n int) time.Duration {
	d := r.MinDelay
	for i := 1; i < n && d < r.MaxDelay; i++ {
		d *= 2
	}
	d = min(d, r.MaxDelay)
	if d <= 1 {
		return d
	}
	half := d / 2
	return half + rand.N(d-half+1)
}

// run keeps a connection up: connect is called to connect and serve, and
// returns when the connection ends (nil after a connection that was up,
// when it ran; an error when it could not connect). Failed attempts back
// off per the policy; a connection that came up resets the count. run
// returns nil when ctx ends, and errRetriesExhausted when the retries run
// out. onState, when set, learns of every state change.
func (r Reconnect) run(ctx context.Context, connect func(ctx context.Context, up func()) error, onState func(State, error)) error {
	report := func(s State, err error) {
		if onState != nil {
			onState(s, err)
		}
	}
	failures := 0
	for {
		report(stateConnecting, nil)
		wasUp := false
		err := connect(ctx, func() {
			wasUp = true
			report(StateConnected, nil)
		})
		if ctx.Err() != nil {
			return nil
		}
		if wasUp {
			failures = 0
		} else {
			failures++
		}
		if !r.Enabled || (r.Retries >= 0 && failures > r.Retries) {
			report(StateFailed, err)
			if !r.Enabled {
				return fmt.Errorf("onebot: connection ended and reconnect is off: %w", err)
			}
			return fmt.Errorf("%w after %d attempts: %v", errRetriesExhausted, failures, err)
		}
		wait := r.delay(max(failures, 1))
		report(stateWaiting, err)
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C:
		}
	}
}
