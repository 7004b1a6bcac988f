package feishu

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	larkws "github.com/larksuite/oapi-sdk-go/v3/ws"

	"github.com/pincerbot/pincer/internal/channel/feishu/feishusim"
	"github.com/pincerbot/pincer/internal/msg"
)

// fastLongConn has the SDK reconnect at once and ping once, at connect;
// see feishusim.LongConn.ConfigOnce for why the configuration is handed
// out once.
var fastLongConn = feishusim.LongConn{
	Config:     &feishusim.ClientConfig{ReconnectCount: -1, ReconnectInterval: 1, ReconnectNonce: 0, PingInterval: 3600},
	ConfigOnce: true,
	AckTimeout: 5 * time.Second,
	Retry:      []time.Duration{20 * time.Millisecond, 20 * time.Millisecond, 20 * time.Millisecond},
}

// wsRig is an account in long-connection mode against a simulated open
// platform.
type wsRig struct {
	t     *testing.T
	sim   *feishusim.Sim
	a     *Account
	taker *taker
	logs  *logRecorder
	ctx   context.Context
}

// newWSRig serves the platform and makes the account; refusal is set
// before the account runs. At cleanup the account stops, then the app
// goes off the long connection (which ends the SDK's reconnecting), then
// the server closes.
func newWSRig(t *testing.T, refusal feishusim.Refusal) *wsRig {
	t.Helper()
	sim := feishusim.New(feishusim.Options{LongConn: fastLongConn})
	sim.SetRefusal(refusal)
	must(t, sim.AddUser(userA, "张三"))
	must(t, sim.AddChat(groupChat, feishusim.ChatGroup))
	api := httptest.NewServer(sim.Handler())
	t.Cleanup(api.Close)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := sim.CloseLongConn(ctx); err != nil {
			t.Errorf("CloseLongConn: %v", err)
		}
	})
	r := &wsRig{t: t, sim: sim, taker: newTaker(), logs: &logRecorder{}}
	r.a = New(Options{
		ID: msg.DefaultAccount, AppID: feishusim.DefaultAppID, AppSecret: feishusim.DefaultAppSecret,
		BaseURL: api.URL, Mode: ModeWebSocket, Logger: slog.New(r.logs),
	})
	r.a.refusedRetry = 20 * time.Millisecond
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	r.ctx = ctx
	return r
}

func (r *wsRig) run() {
	r.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.a.Run(ctx, r.taker) }()
	r.t.Cleanup(func() {
		// The app goes off the long connection next: a client that
		// connected completes its first ping before, or the SDK races
		// (see awaitPong).
		r.waitState("pinged or refused", func(h Health) bool { return h.State == StateRefused || !h.LastPong.IsZero() })
		cancel()
		if err := <-done; err != nil {
			r.t.Errorf("Run: %v", err)
		}
	})
}

// awaitPong waits until the client completed a ping, which it does once
// connected. A connection dropped before that is a data race in the SDK
// (it reads its connection id, for a log line, without synchronization);
// after it, the SDK's log calls, which take pincer's lock, order its
// reads before its writes.
func (r *wsRig) awaitPong() {
	r.t.Helper()
	r.waitState("pinged", func(h Health) bool { return !h.LastPong.IsZero() })
}

// waitState waits until the account's health satisfies ok.
func (r *wsRig) waitState(what string, ok func(Health) bool) Health {
	r.t.Helper()
	for {
		next := r.a.conn.next()
		if h := r.a.Health(); ok(h) {
			return h
		}
		select {
		case <-next:
		case <-r.ctx.Done():
			r.t.Fatalf("the account never became %s; it is %+v", what, r.a.Health())
		}
	}
}

func isState(s State) func(Health) bool { return func(h Health) bool { return h.State == s } }

// push delivers a message event over the long connection and returns
// the delivery (acknowledged or not).
func (r *wsRig) push(id, text string, opts feishusim.EventOptions) *feishusim.Delivery {
	r.t.Helper()
	content, _ := json.Marshal(map[string]string{"text": text})
	var ev any = feishusim.Message{ID: id, ChatID: groupChat, SenderID: userA, Content: string(content)}
	if _, known := r.sim.Message(id); known {
		ev = id
	}
	d, err := r.sim.PushEvent(r.ctx, ev, opts)
	must(r.t, err)
	return d
}

// TestLongConnReceives: over the long connection the account connects,
// pings, takes events in and acknowledges them with 200, and takes a
// redelivered event (same event id, or the same message anew) once.
func TestLongConnReceives(t *testing.T) {
	r := newWSRig(t, feishusim.RefuseNone)
	r.run()
	h := r.waitState("connected with its identity", isState(StateConnected))
	if h.Err != nil || h.Hint != "" {
		t.Errorf("connected: %+v", h)
	}
	must(t, r.sim.WaitLongConn(r.ctx, func(conns, pings, _ int) bool { return conns == 1 && pings >= 1 }))
	d := r.push("om_ws1", "你好", feishusim.EventOptions{})
	if d.Status != http.StatusOK || d.Attempts != 1 {
		t.Fatalf("first delivery: status %d after %d attempts", d.Status, d.Attempts)
	}
	if again := r.push("om_ws1", "你好", feishusim.EventOptions{EventID: d.EventID}); again.Status != http.StatusOK {
		t.Errorf("the redelivery was answered %d, want 200 (taken, and dropped as a duplicate)", again.Status)
	}
	if again := r.push("om_ws1", "你好", feishusim.EventOptions{}); again.Status != http.StatusOK {
		t.Errorf("the message under a new event id was answered %d", again.Status)
	}
	got := r.taker.all()
	if len(got) != 1 || got[0].m.ID != "om_ws1" || got[0].m.Text != "你好" {
		t.Fatalf("taken %+v, want om_ws1 once", got)
	}
}

// TestLongConnRefused: a refused app is StateRefused with the
// platform's error and a hint naming the fix, and connects once the
// platform accepts it again.
func TestLongConnRefused(t *testing.T) {
	for _, tc := range []struct {
		name    string
		refusal feishusim.Refusal
		code    int
		hint    string
	}{
		{"credentials", feishusim.RefuseCredentials, feishusim.CodeAppSecretInvalid, "copy appId and appSecret again"},
		{"too many connections", feishusim.RefuseConnLimit, feishusim.CodeWSAuthFailed, "as many long connections as it may"},
		{"forbidden", feishusim.RefuseForbidden, feishusim.CodeWSForbidden, "forbids app " + feishusim.DefaultAppID},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newWSRig(t, tc.refusal)
			r.run()
			h := r.waitState("refused", isState(StateRefused))
			var ce *larkws.ClientError
			if !errors.As(h.Err, &ce) || ce.Code != tc.code || !strings.Contains(h.Hint, tc.hint) {
				t.Errorf("refused: %+v (err %v), want code %d and a hint with %q", h, h.Err, tc.code, tc.hint)
			}
			if len(r.logs.matching(slog.LevelError, "Feishu long connection refused", "hint=")) == 0 {
				t.Errorf("the refusal was not logged as an error with its hint: %v", r.logs.matching(slog.LevelError))
			}
			r.sim.SetRefusal(feishusim.RefuseNone)
			r.waitState("connected after the refusal", isState(StateConnected))
		})
	}
}

// TestLongConnDropped: a connection the platform drops makes the
// account StateReconnecting with the drop as its error while the
// platform is busy, then StateConnected again, and events after it are
// taken.
func TestLongConnDropped(t *testing.T) {
	r := newWSRig(t, feishusim.RefuseNone)
	r.run()
	r.waitState("connected", isState(StateConnected))
	r.awaitPong()
	r.sim.SetRefusal(feishusim.RefuseBusy)
	r.sim.DropConnections()
	h := r.waitState("reconnecting after the drop", func(h Health) bool {
		return h.State == StateReconnecting && h.Err != nil && strings.Contains(h.Err.Error(), "system busy")
	})
	if h.Hint != "" {
		t.Errorf("reconnecting has a hint: %q", h.Hint)
	}
	if n := len(r.logs.matching(slog.LevelWarn, "Feishu long connection dropped; reconnecting")); n != 1 {
		t.Errorf("the drop was logged %d times as a warning, want once", n)
	}
	r.sim.SetRefusal(feishusim.RefuseNone)
	r.waitState("connected again", isState(StateConnected))
	if d := r.push("om_after", "还在吗", feishusim.EventOptions{}); d.Status != http.StatusOK {
		t.Fatalf("after the reconnect: status %d after %d attempts", d.Status, d.Attempts)
	}
	if got := r.taker.all(); len(got) != 1 || got[0].m.ID != "om_after" {
		t.Errorf("taken %+v", got)
	}
}

// TestLongConnBeforeIdentity: while the account does not know who the
// bot is it is starting, with the bot info's error, and it answers
// events with an error, for the platform to deliver them again.
func TestLongConnBeforeIdentity(t *testing.T) {
	r := newWSRig(t, feishusim.RefuseNone)
	for range 5 {
		r.sim.QueueFault(feishusim.PathBotInfo, feishusim.Fault{Code: feishusim.CodeInternalError, Status: http.StatusInternalServerError})
	}
	r.run()
	h := r.waitState("starting, with the bot info's error", func(h Health) bool { return h.State == StateStarting && h.Err != nil })
	if !strings.Contains(h.Err.Error(), "bot info") {
		t.Errorf("starting: %v", h.Err)
	}
	must(t, r.sim.WaitLongConn(r.ctx, func(conns, _, _ int) bool { return conns == 1 }))
	d := r.push("om_early", "早", feishusim.EventOptions{})
	if d.Status != http.StatusInternalServerError || d.Attempts != len(fastLongConn.Retry)+1 {
		t.Errorf("before the identity: status %d after %d attempts, want 500 after %d", d.Status, d.Attempts, len(fastLongConn.Retry)+1)
	}
	if n := r.taker.count(); n != 0 {
		t.Errorf("%d messages taken before the identity was known", n)
	}
}

// TestWebhookHealth: a webhook account is starting until it knows the
// bot, then listening.
func TestWebhookHealth(t *testing.T) {
	r := newRig(t, nil)
	if h := r.a.Health(); h.State != StateStarting {
		t.Errorf("before Run: %+v", h)
	}
	r.run()
	if h := r.a.Health(); h.State != StateListening || h.Err != nil {
		t.Errorf("running: %+v", h)
	}
}
