package feishusim

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	larkevent "github.com/larksuite/oapi-sdk-go/v3/event"
	"github.com/larksuite/oapi-sdk-go/v3/event/dispatcher"
	larkws "github.com/larksuite/oapi-sdk-go/v3/ws"
)

// fastLongConn makes the SDK reconnect at once and ping once (at
// connect), so tests are quick and stay clear of the SDK's unsynchronized
// configuration (see LongConn.ConfigOnce).
var fastLongConn = LongConn{
	Config:     &ClientConfig{ReconnectCount: -1, ReconnectInterval: 1, ReconnectNonce: 0, PingInterval: 3600},
	ConfigOnce: true,
	AckTimeout: 5 * time.Second,
	Retry:      []time.Duration{10 * time.Millisecond, 10 * time.Millisecond},
}

// lockedLogger is the SDK's logger in tests: every call takes one lock,
// as pincer's does, which orders the SDK's unsynchronized log reads of
// its connection id before its writes.
type lockedLogger struct {
	mu      sync.Mutex
	lines   []string
	changed chan struct{}
}

func (l *lockedLogger) log(args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, fmt.Sprint(args...))
	if l.changed != nil {
		close(l.changed)
	}
	l.changed = make(chan struct{})
}

// has reports whether a line starts with each of prefixes.
func (l *lockedLogger) has(prefixes ...string) (bool, <-chan struct{}) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.changed == nil {
		l.changed = make(chan struct{})
	}
	for _, p := range prefixes {
		found := false
		for _, line := range l.lines {
			found = found || strings.HasPrefix(line, p)
		}
		if !found {
			return false, l.changed
		}
	}
	return true, l.changed
}

// awaitPong waits until the client logged its first ping and pong: a
// connection dropped before is a data race in the v3.7.5 SDK, which
// reads its connection id for those lines without synchronization.
func (l *lockedLogger) awaitPong(t *testing.T) {
	t.Helper()
	ctx := waitCtx(t)
	for {
		ok, more := l.has("ping success", "receive pong")
		if ok {
			return
		}
		select {
		case <-more:
		case <-ctx.Done():
			t.Fatal("the client never pinged")
		}
	}
}
func (l *lockedLogger) Debug(_ context.Context, args ...any) { l.log(args...) }
func (l *lockedLogger) Info(_ context.Context, args ...any)  { l.log(args...) }
func (l *lockedLogger) Warn(_ context.Context, args ...any)  { l.log(args...) }
func (l *lockedLogger) Error(_ context.Context, args ...any) { l.log(args...) }

// longConnServer serves s; at cleanup the app goes off the long
// connection first, so the SDK's reconnect loop ends.
func longConnServer(t *testing.T, s *Sim) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := s.CloseLongConn(ctx); err != nil {
			t.Errorf("CloseLongConn: %v", err)
		}
		srv.Close()
	})
	return srv
}

// startSDK starts the SDK's long-connection client against srv; the
// returned channel has Start's error, should it return.
// At cleanup, before the app goes off the long connection, the client
// was refused or has pinged (lockedLogger.awaitPong).
func startSDK(t *testing.T, srv *httptest.Server, appID, secret string, d *dispatcher.EventDispatcher) (<-chan error, *lockedLogger) {
	t.Helper()
	l := &lockedLogger{}
	cli := larkws.NewClient(appID, secret, larkws.WithEventHandler(d), larkws.WithDomain(srv.URL), larkws.WithLogger(l))
	done, returned := make(chan error, 1), make(chan struct{})
	go func() {
		err := cli.Start(context.Background())
		close(returned)
		done <- err
	}()
	t.Cleanup(func() {
		// Refused (Start returned), or connected and pinged.
		ctx := waitCtx(t)
		for {
			ok, more := l.has("ping success", "receive pong")
			if ok {
				return
			}
			select {
			case <-returned:
				return
			case <-more:
			case <-ctx.Done():
				t.Error("the client neither pinged nor was refused")
				return
			}
		}
	})
	return done, l
}

func waitCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// TestLongConnSDK drives the official SDK's client through the simulated
// long connection: endpoint discovery, ping and pong, events in frames
// acknowledged with the handler's outcome, redelivery of an event
// answered with an error, chunked payloads, and reconnection after the
// platform drops the connection.
func TestLongConnSDK(t *testing.T) {
	s := New(Options{LongConn: fastLongConn})
	if err := s.AddChat("oc_g", ChatGroup); err != nil {
		t.Fatal(err)
	}
	srv := longConnServer(t, s)
	var mu sync.Mutex
	got := map[string]int{} // message id → deliveries seen by the handler
	failFirst := map[string]bool{"om_fail": true}
	d := dispatcher.NewEventDispatcher("", "").OnCustomizedEvent(EventMessageReceive, func(_ context.Context, ev *larkevent.EventReq) error {
		var body struct {
			Event struct {
				Message struct {
					MessageID string `json:"message_id"`
				} `json:"message"`
			} `json:"event"`
		}
		if err := json.Unmarshal(ev.Body, &body); err != nil {
			return err
		}
		id := body.Event.Message.MessageID
		mu.Lock()
		defer mu.Unlock()
		got[id]++
		if failFirst[id] {
			delete(failFirst, id)
			return errors.New("not now")
		}
		return nil
	})
	done, log := startSDK(t, srv, DefaultAppID, DefaultAppSecret, d)
	ctx := waitCtx(t)
	if err := s.WaitLongConn(ctx, func(conns, pings, _ int) bool { return conns == 1 && pings >= 1 }); err != nil {
		t.Fatal(err)
	}
	push := func(id string, opts EventOptions) *Delivery {
		t.Helper()
		dl, err := s.PushEvent(ctx, Message{ID: id, ChatID: "oc_g", SenderID: "ou_u", Content: `{"text":"` + strings.Repeat("字", 300) + `"}`}, opts)
		if err != nil {
			t.Fatal(err)
		}
		return dl
	}
	if dl := push("om_1", EventOptions{}); dl.Status != http.StatusOK || dl.Attempts != 1 {
		t.Errorf("om_1: status %d after %d attempts, want 200 after 1", dl.Status, dl.Attempts)
	}
	if dl := push("om_fail", EventOptions{}); dl.Status != http.StatusOK || dl.Attempts != 2 {
		t.Errorf("om_fail: status %d after %d attempts, want 200 after 2 (the first answered 500)", dl.Status, dl.Attempts)
	}
	if dl := push("om_split", EventOptions{Chunks: 2}); dl.Status != http.StatusOK {
		t.Errorf("om_split (two frames): status %d after %d attempts", dl.Status, dl.Attempts)
	}
	var resp struct {
		Code int `json:"code"`
	}
	if dl := push("om_2", EventOptions{}); json.Unmarshal(dl.Response, &resp) != nil || resp.Code != http.StatusOK {
		t.Errorf("the acknowledgement's payload is %s, want the SDK's response with code 200", dl.Response)
	}

	log.awaitPong(t)
	if n := s.DropConnections(); n != 1 {
		t.Fatalf("dropped %d connections, want 1", n)
	}
	if err := s.WaitLongConn(ctx, func(conns, _, _ int) bool { return conns == 1 }); err != nil {
		t.Fatal("the SDK did not reconnect: ", err)
	}
	if dl := push("om_after", EventOptions{}); dl.Status != http.StatusOK {
		t.Errorf("after the reconnect: status %d after %d attempts", dl.Status, dl.Attempts)
	}
	mu.Lock()
	if got["om_1"] != 1 || got["om_fail"] != 2 || got["om_after"] != 1 || got["om_split"] == 0 {
		t.Errorf("handler saw %v", got)
	}
	mu.Unlock()
	if n := len(s.Calls(PathWSEndpoint)); n != 2 {
		t.Errorf("%d endpoint discoveries, want 2 (connect, reconnect)", n)
	}
	select {
	case err := <-done:
		t.Errorf("Start returned %v", err)
	default:
	}
}

// TestLongConnRefusals: the refusals the SDK gives up on end its Start
// with a client error carrying the platform's code.
func TestLongConnRefusals(t *testing.T) {
	for _, tc := range []struct {
		name    string
		refusal Refusal
		secret  string
		code    int
	}{
		{"wrong secret", RefuseNone, "wrong", CodeAppSecretInvalid},
		{"credentials", RefuseCredentials, DefaultAppSecret, CodeAppSecretInvalid},
		{"too many connections", RefuseConnLimit, DefaultAppSecret, CodeWSAuthFailed},
		{"forbidden", RefuseForbidden, DefaultAppSecret, CodeWSForbidden},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := New(Options{LongConn: fastLongConn})
			s.SetRefusal(tc.refusal)
			srv := longConnServer(t, s)
			done, _ := startSDK(t, srv, DefaultAppID, tc.secret, dispatcher.NewEventDispatcher("", ""))
			select {
			case err := <-done:
				var ce *larkws.ClientError
				if !errors.As(err, &ce) || ce.Code != tc.code {
					t.Errorf("Start: %v, want a client error with code %d", err, tc.code)
				}
			case <-waitCtx(t).Done():
				t.Fatal("Start did not return")
			}
			if s.Refused() != 1 || s.Connections() != 0 {
				t.Errorf("refused %d, connections %d", s.Refused(), s.Connections())
			}
		})
	}
}

// TestLongConnLimit: an app holds at most MaxConnections connections.
func TestLongConnLimit(t *testing.T) {
	lc := fastLongConn
	lc.MaxConnections = 1
	s := New(Options{LongConn: lc})
	srv := longConnServer(t, s)
	startSDK(t, srv, DefaultAppID, DefaultAppSecret, dispatcher.NewEventDispatcher("", ""))
	ctx := waitCtx(t)
	if err := s.WaitLongConn(ctx, func(conns, _, _ int) bool { return conns == 1 }); err != nil {
		t.Fatal(err)
	}
	second, _ := startSDK(t, srv, DefaultAppID, DefaultAppSecret, dispatcher.NewEventDispatcher("", ""))
	select {
	case err := <-second:
		var ce *larkws.ClientError
		if !errors.As(err, &ce) || ce.Code != CodeWSAuthFailed {
			t.Errorf("second client: %v, want the connection limit's 514", err)
		}
	case <-ctx.Done():
		t.Fatal("the second client was not refused")
	}
}

// TestLongConnNoClient: an event that finds no client connected is
// delivered again after each retry delay, then given up.
func TestLongConnNoClient(t *testing.T) {
	s := New(Options{LongConn: fastLongConn})
	dl, err := s.PushEvent(waitCtx(t), CustomEvent{Type: "im.chat.updated_v1", Event: map[string]string{}}, EventOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if dl.Status != 0 || dl.Attempts != 3 {
		t.Errorf("status %d after %d attempts, want 0 after 3", dl.Status, dl.Attempts)
	}
}

// TestLongConnEndpointBusy: "system busy" is code 1, which the SDK
// retries; the endpoint needs no tenant token.
func TestLongConnEndpointBusy(t *testing.T) {
	s := New(Options{})
	s.SetRefusal(RefuseBusy)
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()
	resp, err := http.Post(srv.URL+PathWSEndpoint, "application/json", strings.NewReader(`{"AppID":"`+DefaultAppID+`","AppSecret":"`+DefaultAppSecret+`"}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var ep larkws.EndpointResp
	if err := json.NewDecoder(resp.Body).Decode(&ep); err != nil || ep.Code != CodeWSSystemBusy {
		t.Errorf("busy endpoint: %+v %v", ep, err)
	}
	s.SetRefusal(RefuseNone)
	resp2, err := http.Post(srv.URL+PathWSEndpoint, "application/json", strings.NewReader(`{"AppID":"`+DefaultAppID+`","AppSecret":"`+DefaultAppSecret+`"}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp2.Body.Close()
	if err := json.NewDecoder(resp2.Body).Decode(&ep); err != nil || ep.Code != 0 || ep.Data == nil ||
		!strings.HasPrefix(ep.Data.Url, "ws://"+srv.Listener.Addr().String()+PathWSConnect+"?") || ep.Data.ClientConfig == nil ||
		ep.Data.ClientConfig.PingInterval != PlatformClientConfig.PingInterval {
		t.Errorf("endpoint: %+v %v", ep.Data, err)
	}
}
