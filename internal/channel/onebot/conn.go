package onebot

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"

	"github.com/pincerbot/pincer/internal/channel/onebot/wire"
)

// Errors of calls on a connection.
var (
	// errDisconnected: the connection closed before the answer came.
	errDisconnected = errors.New("onebot: connection lost")
	// errTimeout: no answer within the call's timeout.
	errTimeout = errors.New("onebot: action timed out")
	// errHeartbeatMissed: the implementation announced heartbeats and then
	// went quiet for longer than two of them; the connection is presumed
	// dead and closed.
	errHeartbeatMissed = errors.New("onebot: heartbeats stopped")
)

// maxFrame bounds one incoming frame; history and forward answers are big.
const maxFrame = 32 << 20

// generation tells connections apart in echoes, so a late answer meant for
// an old connection never matches a call on a new one.
var generation atomic.Uint64

// caller is Caller, by its name inside the package.
type caller = Caller

var _ caller = (*Conn)(nil)

// Conn is one live OneBot WebSocket connection, forward or reverse. Calls
// may be made from any goroutine while Run reads.
type Conn struct {
	ws      *websocket.Conn
	timeout time.Duration
	log     *slog.Logger
	prefix  string
	seq     atomic.Uint64

	// heartbeat is the announced heartbeat interval in ns, 0 if unknown.
	heartbeat atomic.Int64
	missed    atomic.Bool

	mu      sync.Mutex
	pending map[string]answerFunc
	closed  bool
	// queued are asynchronous calls' requests waiting to be written;
	// writing: a goroutine writes them (see writeQueued).
	queued  []queuedFrame
	writing bool
}

// answerFunc receives the response to an action, or ok false when the
// connection closed first. It is called at most once, by whoever takes its
// entry out of the pending map, and must not block: it may run on the
// reading goroutine.
type answerFunc func(resp wire.Response, ok bool)

// Announced heartbeat intervals are clamped to this range: an
// implementation that claims heartbeats every millisecond, or every few
// million years, is held to something a connection can live with.
const (
	minHeartbeat = time.Second
	maxHeartbeat = 10 * time.Minute
)

// expectHeartbeat tells the connection that the implementation sends a
// heartbeat every interval; from then on, a silence of two intervals plus
// five seconds closes it with errHeartbeatMissed. The interval is clamped
// to [minHeartbeat, maxHeartbeat]; one that is not positive is ignored.
// Run calls it for every heartbeat event it reads.
func (c *Conn) expectHeartbeat(interval time.Duration) {
	if interval > 0 {
		c.heartbeat.Store(int64(min(max(interval, minHeartbeat), maxHeartbeat)))
	}
}

// liveness is how long a connection with heartbeats may stay silent. It
// saturates instead of overflowing, whatever the interval.
func liveness(interval time.Duration) time.Duration {
	const grace = 5 * time.Second
	if interval > (math.MaxInt64-grace)/2 {
		return math.MaxInt64
	}
	return 2*interval + grace
}

// heartbeatInterval is the interval a heartbeat event announces, converted
// without overflow (at most maxHeartbeat); false when ev is not a
// heartbeat or announces no positive interval.
func heartbeatInterval(ev *wire.Event) (time.Duration, bool) {
	if ev.PostType != "meta_event" || ev.MetaEventType != "heartbeat" || ev.Interval <= 0 {
		return 0, false
	}
	if ev.Interval > maxHeartbeat.Milliseconds() {
		return maxHeartbeat, true
	}
	return time.Duration(ev.Interval) * time.Millisecond, true
}

// NewConn wraps a WebSocket. timeout is the default per-call timeout.
func NewConn(ws *websocket.Conn, timeout time.Duration, log *slog.Logger) *Conn {
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	ws.SetReadLimit(maxFrame)
	return &Conn{
		ws: ws, timeout: timeout, log: log,
		prefix:  strconv.FormatUint(generation.Add(1), 10) + ":",
		pending: map[string]answerFunc{},
	}
}

// Call runs an action and returns its data. It fails at once when the
// connection is lost, with errTimeout after the timeout (the call's own if
// positive, else the connection's), and with a *wire.ActionError when the
// implementation reports a failure.
func (c *Conn) Call(ctx context.Context, action string, params any, timeout time.Duration) (json.RawMessage, error) {
	if timeout <= 0 {
		timeout = c.timeout
	}
	echo, frame, err := c.request(action, params)
	if err != nil {
		return nil, err
	}
	ch := make(chan wire.Response, 1)
	if !c.await(echo, func(resp wire.Response, ok bool) {
		if ok {
			ch <- resp
		} else {
			close(ch)
		}
	}) {
		return nil, fmt.Errorf("%s: %w", action, errDisconnected)
	}
	defer c.forget(echo) // never leak an entry, whatever happened

	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if err := c.ws.Write(ctx, websocket.MessageText, frame); err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("%s: %w", action, errTimeout)
		}
		return nil, fmt.Errorf("%s: %w: %v", action, errDisconnected, err)
	}
	select {
	case resp, ok := <-ch:
		if !ok {
			return nil, fmt.Errorf("%s: %w", action, errDisconnected)
		}
		return resp.Result(action)
	case <-ctx.Done():
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return nil, fmt.Errorf("%s: %w after %s", action, errTimeout, timeout)
		}
		return nil, ctx.Err()
	}
}

// Go runs an action without waiting for it: done learns its data or its
// error once, when the answer is read, the timeout (the call's own if
// positive, else the connection's) passes, or the connection closes. The
// request is written by a goroutine that writes the queued ones in turn,
// so the caller never waits for the socket either, and no goroutine waits
// for the answer. done must
// not block: it runs on the reading goroutine, a timer's or the writer's.
func (c *Conn) Go(action string, params any, timeout time.Duration, done func(json.RawMessage, error)) {
	if timeout <= 0 {
		timeout = c.timeout
	}
	echo, frame, err := c.request(action, params)
	if err != nil {
		done(nil, err)
		return
	}
	// Whoever takes the entry out of the pending map answers: the reader,
	// the timer, a failed write or the connection's end.
	var timer *time.Timer
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		done(nil, fmt.Errorf("%s: %w", action, errDisconnected))
		return
	}
	c.pending[echo] = func(resp wire.Response, ok bool) {
		timer.Stop()
		if !ok {
			done(nil, fmt.Errorf("%s: %w", action, errDisconnected))
			return
		}
		done(resp.Result(action))
	}
	timer = time.AfterFunc(timeout, func() {
		if c.take(echo) != nil {
			done(nil, fmt.Errorf("%s: %w after %s", action, errTimeout, timeout))
		}
	})
	c.queued = append(c.queued, queuedFrame{echo: echo, frame: frame, failed: func(err error) {
		timer.Stop()
		done(nil, fmt.Errorf("%s: %w: %v", action, errDisconnected, err))
	}})
	start := !c.writing
	c.writing = true
	c.mu.Unlock()
	if start {
		go c.writeQueued()
	}
}

// queuedFrame is the request of an asynchronous call waiting to be
// written; failed answers the call when the write fails.
type queuedFrame struct {
	echo   string
	frame  []byte
	failed func(error)
}

// writeQueued writes the queued requests, in order, until none is left:
// one goroutine for a run of them, however many, and none while there is
// nothing to write. The writes are not bound by the calls' timeouts: a
// write the WebSocket gives up on closes the connection, and an
// implementation slow to read should cost its calls, not the connection.
// A write ends when the frame is out or the connection is.
func (c *Conn) writeQueued() {
	for {
		c.mu.Lock()
		if len(c.queued) == 0 {
			c.writing = false
			c.mu.Unlock()
			return
		}
		q := c.queued[0]
		c.queued[0] = queuedFrame{}
		c.queued = c.queued[1:]
		c.mu.Unlock()
		if err := c.ws.Write(context.Background(), websocket.MessageText, q.frame); err != nil {
			if c.take(q.echo) != nil {
				q.failed(err)
			}
		}
	}
}

// request encodes an action with an echo of its own.
func (c *Conn) request(action string, params any) (echo string, frame []byte, err error) {
	echo = c.prefix + strconv.FormatUint(c.seq.Add(1), 10)
	if p, ok := params.(messageParams); ok {
		if frame, ok := appendRequest(make([]byte, 0, 128+p.size()), action, echo, p); ok {
			return echo, frame, nil
		}
	}
	if params == nil {
		params = struct{}{}
	}
	frame, err = json.Marshal(wire.Request{Action: action, Echo: echo, Params: params})
	if err != nil {
		return "", nil, fmt.Errorf("onebot: %s: %w", action, err)
	}
	return echo, frame, nil
}

// await registers answer for echo; false when the connection is closed.
func (c *Conn) await(echo string, answer answerFunc) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return false
	}
	c.pending[echo] = answer
	return true
}

// take removes and returns echo's answer, nil when someone took it first.
func (c *Conn) take(echo string) answerFunc {
	c.mu.Lock()
	defer c.mu.Unlock()
	answer := c.pending[echo]
	delete(c.pending, echo)
	return answer
}

// forget removes echo's entry, if it is still there.
func (c *Conn) forget(echo string) { c.take(echo) }

// Run reads frames until the connection ends or ctx is done, routing
// answers to their calls and handing every other frame to onEvent, with
// the event decoded from it (nil when it is not a valid event object). When it
// returns, pending calls fail with errDisconnected and the socket is closed.
func (c *Conn) Run(ctx context.Context, onEvent func(frame []byte, ev *wire.Event)) error {
	defer c.shutdown()
	watchdog := time.AfterFunc(time.Hour, func() {
		c.missed.Store(true)
		_ = c.ws.CloseNow()
	})
	watchdog.Stop()
	defer watchdog.Stop()
	// Reads do not watch ctx themselves (the WebSocket library would arm
	// a watcher for every frame): the socket is closed once ctx ends.
	stop := context.AfterFunc(ctx, func() { _ = c.ws.CloseNow() })
	defer stop()
	// Frames are read into one buffer, reused while it stays small: the
	// decoding copies what it keeps from a frame below wire.CopiedBelow,
	// and a larger one keeps its own buffer for the event that points
	// into it.
	var buf bytes.Buffer
	for {
		if buf.Cap() >= wire.CopiedBelow {
			buf = bytes.Buffer{}
		}
		data, err := c.read(&buf)
		if err != nil {
			switch {
			case ctx.Err() != nil:
				return nil
			case c.missed.Load():
				return fmt.Errorf("%w (every %s announced)", errHeartbeatMissed, time.Duration(c.heartbeat.Load()))
			}
			return fmt.Errorf("onebot: read: %w", err)
		}
		ev, resp := wire.Decode(data)
		if resp == nil {
			// Handing an event on waits while the inbound queue is full:
			// that silence is pincer's own, not the implementation's, so
			// the watchdog does not count it.
			watchdog.Stop()
			onEvent(data, ev)
			if ev != nil {
				if interval, ok := heartbeatInterval(ev); ok {
					c.expectHeartbeat(interval)
				}
			}
			if hb := c.heartbeat.Load(); hb > 0 {
				watchdog.Reset(liveness(time.Duration(hb)))
			}
			continue
		}
		if hb := c.heartbeat.Load(); hb > 0 {
			watchdog.Reset(liveness(time.Duration(hb)))
		}
		echo := echoString(resp.Echo)
		answer := c.take(echo)
		if answer == nil {
			c.log.Debug("dropping a response with an unknown echo", "echo", echo)
			continue
		}
		answer(*resp, true)
	}
}

// read reads the next frame into buf.
func (c *Conn) read(buf *bytes.Buffer) ([]byte, error) {
	_, r, err := c.ws.Reader(context.Background())
	if err != nil {
		return nil, err
	}
	buf.Reset()
	if _, err := buf.ReadFrom(r); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// echoString reads an echo back as the string it was sent as, even if the
// implementation turned it into a number.
func echoString(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	return string(raw)
}

func (c *Conn) shutdown() {
	c.mu.Lock()
	c.closed = true
	pending := c.pending
	c.pending = map[string]answerFunc{}
	c.mu.Unlock()
	for _, answer := range pending {
		answer(wire.Response{}, false)
	}
	_ = c.ws.CloseNow()
}

// close closes the connection normally.
func (c *Conn) close() error { return c.ws.Close(websocket.StatusNormalClosure, "") }
