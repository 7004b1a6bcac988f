package onebot

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/coder/websocket"

	"github.com/pincerbot/pincer/internal/channel/onebot/onebottest"
	"github.com/pincerbot/pincer/internal/channel/onebot/wire"
)

func echoHandler(action string, params json.RawMessage) (any, int, string) {
	switch action {
	case "get_login_info":
		return map[string]any{"user_id": 3300000001, "nickname": "助手"}, 0, ""
	case "send_group_msg":
		return map[string]any{"message_id": -42}, 0, ""
	case "get_msg":
		return nil, 100, "message not found"
	case "send_private_msg":
		return nil, 1200, "Timeout: NTEvent sendMsg onMsgInfoListUpdate"
	case "echo":
		return json.RawMessage(params), 0, ""
	}
	return nil, 1404, "unknown action"
}

// pendingCalls is how many of c's calls await an answer.
func pendingCalls(c *Conn) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.pending)
}

// dial connects to the peer and runs the connection until the test ends.
func dial(t *testing.T, p *onebottest.Peer, events chan<- []byte) (*Conn, func() error) {
	t.Helper()
	ctx := context.Background()
	ws, _, err := websocket.Dial(ctx, p.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	c := NewConn(ws, 5*time.Second, nil)
	finished := make(chan struct{})
	var runErr error
	runCtx, cancel := context.WithCancel(ctx)
	go func() {
		defer close(finished)
		runErr = c.Run(runCtx, func(frame []byte, _ *wire.Event) {
			if events != nil {
				events <- frame
			}
		})
	}()
	t.Cleanup(func() { cancel(); <-finished })
	return c, func() error { <-finished; return runErr }
}

func TestCallAnswers(t *testing.T) {
	p := onebottest.New(t, echoHandler)
	c, _ := dial(t, p, nil)
	data, err := c.Call(context.Background(), "get_login_info", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var info struct {
		UserID   wire.ID `json:"user_id"`
		Nickname string  `json:"nickname"`
	}
	if err := json.Unmarshal(data, &info); err != nil || info.UserID != 3300000001 {
		t.Errorf("%s %v", data, err)
	}
	var ae *wire.ActionError
	if _, err := c.Call(context.Background(), "get_msg", map[string]any{"message_id": 1}, 0); !errors.As(err, &ae) || ae.Retcode != 100 || errors.Is(err, wire.ErrRiskControl) {
		t.Errorf("retcode 100: %v", err)
	}
	if _, err := c.Call(context.Background(), "send_private_msg", nil, 0); !errors.Is(err, wire.ErrRiskControl) {
		t.Errorf("retcode 1200 must read as risk control: %v", err)
	}
	if pendingCalls(c) != 0 {
		t.Errorf("%d pending entries leaked", pendingCalls(c))
	}
}

func TestConcurrentCallsAreMatched(t *testing.T) {
	p := onebottest.New(t, echoHandler)
	c, _ := dial(t, p, nil)
	var wg sync.WaitGroup
	for i := range 50 {
		wg.Go(func() {
			data, err := c.Call(context.Background(), "echo", map[string]int{"n": i}, 0)
			if err != nil {
				t.Error(err)
				return
			}
			if want := fmt.Sprintf(`{"n":%d}`, i); string(data) != want {
				t.Errorf("call %d got %s", i, data)
			}
		})
	}
	wg.Wait()
}

func TestCallTimeoutLeaksNothing(t *testing.T) {
	p := onebottest.New(t, echoHandler)
	p.Silence("get_forward_msg")
	c, _ := dial(t, p, nil)
	_, err := c.Call(context.Background(), "get_forward_msg", map[string]string{"id": "x"}, 50*time.Millisecond)
	if !errors.Is(err, errTimeout) {
		t.Fatalf("want ErrTimeout, got %v", err)
	}
	if pendingCalls(c) != 0 {
		t.Errorf("a timed-out call left %d pending entries", pendingCalls(c))
	}
	// The connection still works.
	if _, err := c.Call(context.Background(), "get_login_info", nil, 0); err != nil {
		t.Error(err)
	}
}

func TestDisconnectFailsPendingCalls(t *testing.T) {
	p := onebottest.New(t, echoHandler)
	p.Silence("get_forward_msg")
	c, done := dial(t, p, nil)
	result := make(chan error, 1)
	go func() {
		_, err := c.Call(context.Background(), "get_forward_msg", nil, time.Minute)
		result <- err
	}()
	<-p.Called() // the call reached the peer
	p.DropAll()
	if err := <-result; !errors.Is(err, errDisconnected) {
		t.Errorf("pending call: %v", err)
	}
	if err := done(); err == nil {
		t.Error("Run must report the lost connection")
	}
	if _, err := c.Call(context.Background(), "get_login_info", nil, 0); !errors.Is(err, errDisconnected) {
		t.Errorf("a call after the loss must fail at once: %v", err)
	}
}

func TestEventsAndStrayResponses(t *testing.T) {
	p := onebottest.New(t, echoHandler)
	events := make(chan []byte, 4)
	c, _ := dial(t, p, events)
	ctx := context.Background()
	if err := p.Connected(ctx); err != nil {
		t.Fatal(err)
	}
	if err := p.Push(ctx, map[string]any{"status": "ok", "retcode": 0, "echo": "stale:1", "data": nil}); err != nil {
		t.Fatal(err)
	}
	if err := p.Push(ctx, map[string]any{"post_type": "meta_event", "meta_event_type": "lifecycle", "sub_type": "connect", "self_id": 1}); err != nil {
		t.Fatal(err)
	}
	ev, err := wire.DecodeEvent(<-events)
	if err != nil || ev.MetaEventType != "lifecycle" {
		t.Errorf("event %+v %v", ev, err)
	}
	if _, err := c.Call(ctx, "get_login_info", nil, 0); err != nil {
		t.Errorf("after a stray response: %v", err)
	}
	select {
	case extra := <-events:
		t.Errorf("a response leaked to the event handler: %s", extra)
	default:
	}
}

// goResult is what Conn.Go told its done.
type goResult struct {
	data json.RawMessage
	err  error
}

func goCall(c *Conn, action string, params any, timeout time.Duration) <-chan goResult {
	ch := make(chan goResult, 1)
	c.Go(action, params, timeout, func(data json.RawMessage, err error) { ch <- goResult{data, err} })
	return ch
}

// TestGoAnswersEachCallOnce: an asynchronous call learns its data, the
// implementation's failure, its timeout or the connection's loss, once,
// and leaves no pending entry behind.
func TestGoAnswersEachCallOnce(t *testing.T) {
	p := onebottest.New(t, echoHandler)
	p.Silence("get_forward_msg")
	c, done := dial(t, p, nil)
	if r := <-goCall(c, "echo", map[string]int{"n": 7}, 0); r.err != nil || string(r.data) != `{"n":7}` {
		t.Errorf("echo: %s %v", r.data, r.err)
	}
	var ae *wire.ActionError
	if r := <-goCall(c, "get_msg", map[string]int{"message_id": 1}, 0); !errors.As(r.err, &ae) || ae.Retcode != 100 {
		t.Errorf("get_msg: %v", r.err)
	}
	if r := <-goCall(c, "get_forward_msg", nil, 50*time.Millisecond); !errors.Is(r.err, errTimeout) {
		t.Errorf("silent action: %v", r.err)
	}
	if n := pendingCalls(c); n != 0 {
		t.Errorf("%d pending entries left", n)
	}
	waiting := goCall(c, "get_forward_msg", nil, time.Minute)
	<-p.Called()
	p.DropAll()
	if r := <-waiting; !errors.Is(r.err, errDisconnected) {
		t.Errorf("pending at the loss: %v", r.err)
	}
	_ = done()
	if r := <-goCall(c, "echo", nil, 0); !errors.Is(r.err, errDisconnected) {
		t.Errorf("after the loss: %v", r.err)
	}
}

// TestGoNeverWaitsForTheSocket: an implementation that stops reading
// (its own writes are stuck behind the events pincer does not read yet)
// holds an asynchronous call's writer, never its caller; the call ends by
// its timeout, and the connection closing ends the writer.
func TestGoNeverWaitsForTheSocket(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := onebottest.NewPipeNet()
		accepted := make(chan *websocket.Conn, 1)
		release := make(chan struct{})
		srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			ws, err := websocket.Accept(w, r, nil)
			if err != nil {
				return
			}
			accepted <- ws
			<-release // never reads
		})}
		ln := n.Listen("stuck.test")
		go func() { _ = srv.Serve(ln) }()
		defer srv.Close()
		ws, _, err := websocket.Dial(context.Background(), "ws://stuck.test/", &websocket.DialOptions{HTTPClient: n.Client()})
		if err != nil {
			t.Fatal(err)
		}
		peer := <-accepted
		c := NewConn(ws, time.Minute, nil)
		ctx, cancel := context.WithCancel(context.Background())
		ran := make(chan error, 1)
		go func() { ran <- c.Run(ctx, func([]byte, *wire.Event) {}) }()
		start := time.Now()
		var results []<-chan goResult
		for range 3 {
			results = append(results, goCall(c, "get_msg", map[string]int{"message_id": 5}, 3*time.Second))
		}
		if d := time.Since(start); d != 0 {
			t.Errorf("three calls took %v of their caller's time", d)
		}
		for _, r := range results {
			if got := <-r; !errors.Is(got.err, errTimeout) {
				t.Errorf("unanswered: %v", got.err)
			}
		}
		if d := time.Since(start); d != 3*time.Second {
			t.Errorf("answered after %v, want the timeout", d)
		}
		cancel()
		<-ran
		_ = peer.CloseNow()
		close(release)
	})
}

// TestGoWritesRequestsInOrder: asynchronous calls reach the implementation
// in the order they were made (one writer writes them in turn), and each
// is answered.
func TestGoWritesRequestsInOrder(t *testing.T) {
	p := onebottest.New(t, echoHandler)
	c, _ := dial(t, p, nil)
	var results []<-chan goResult
	for i := range 200 {
		results = append(results, goCall(c, "echo", map[string]int{"n": i}, 0))
	}
	for i, r := range results {
		if got := <-r; got.err != nil || string(got.data) != fmt.Sprintf(`{"n":%d}`, i) {
			t.Fatalf("call %d: %s %v", i, got.data, got.err)
		}
	}
	n := 0
	for _, call := range p.Calls() {
		if call.Action != "echo" {
			continue
		}
		if want := fmt.Sprintf(`{"n":%d}`, n); string(call.Params) != want {
			t.Fatalf("request %d reached the implementation as %s, want %s", n, call.Params, want)
		}
		n++
	}
	if n != 200 {
		t.Errorf("%d requests arrived", n)
	}
}
