package gateway

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/pincerbot/pincer/internal/channel/feishu/feishusim"
	"github.com/pincerbot/pincer/internal/config"
	"github.com/pincerbot/pincer/internal/dashboard"
)

// larkWSRig is the gateway with one Feishu app on the long connection of
// a simulated open platform.
type larkWSRig struct {
	sim *feishusim.Sim
	gw  *started
	ctx context.Context
}

// newLarkWSRig starts the platform, refusing the app's long connection
// as refusal says, and the gateway. At cleanup the gateway stops, then
// the app goes off the long connection (ending the SDK's reconnecting),
// then the platform's server closes.
func newLarkWSRig(t *testing.T, refusal feishusim.Refusal) *larkWSRig {
	t.Helper()
	sim := feishusim.New(feishusim.Options{LongConn: feishusim.LongConn{
		// Reconnect at once, ping once at connect; the configuration is
		// handed out once (see feishusim.LongConn.ConfigOnce).
		Config:     &feishusim.ClientConfig{ReconnectCount: -1, ReconnectInterval: 1, PingInterval: 3600},
		ConfigOnce: true,
		AckTimeout: 10 * time.Second,
		Retry:      []time.Duration{50 * time.Millisecond, 100 * time.Millisecond, 200 * time.Millisecond},
	}})
	sim.SetRefusal(refusal)
	srv := httptest.NewServer(sim.Handler())
	t.Cleanup(srv.Close)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := sim.CloseLongConn(ctx); err != nil {
			t.Errorf("CloseLongConn: %v", err)
		}
	})
	for id, name := range map[string]string{larkUserA: "张三", larkUserB: "李四"} {
		if err := sim.AddUser(id, name); err != nil {
			t.Fatal(err)
		}
	}
	if err := sim.AddChat(larkGroup, feishusim.ChatGroup); err != nil {
		t.Fatal(err)
	}
	cfg := config.Default()
	f := &cfg.Channels.Feishu
	f.AppID, f.AppSecret = feishusim.DefaultAppID, feishusim.DefaultAppSecret
	f.Domain, f.Mode = srv.URL, config.FeishuWebSocket
	f.Receive.Realtime.WindowMs = 50
	f.Streaming = config.FeishuStreamingOff // replies are read as messages
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	r := &larkWSRig{sim: sim, gw: startGateway(t, cfg), ctx: ctx}
	// Before the gateway stops and the app goes off the long connection,
	// a client that connected has completed its first ping.
	t.Cleanup(func() { r.awaitPong(t) })
	return r
}

// awaitPong waits until the app is refused, or its long connection has
// completed a ping, as it does once connected: the v3.7.5 SDK reads its
// connection id for its ping's log lines without synchronization, so a
// connection dropped before them is a data race in the SDK.
func (r *larkWSRig) awaitPong(t *testing.T) {
	t.Helper()
	for {
		if a := r.account(t); a.State == dashboard.StateRefused || !a.LastPong.IsZero() {
			return
		}
		select {
		case <-r.ctx.Done():
			t.Fatalf("the app's long connection never completed a ping: %+v", r.account(t))
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// health is /healthz's status code, overall status and the Feishu app's
// component.
func (r *larkWSRig) health(t *testing.T) (code int, status string, app map[string]string) {
	t.Helper()
	res, err := http.Get(r.gw.url + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var body struct {
		Status     string              `json:"status"`
		Components []map[string]string `json:"components"`
	}
	if err := json.NewDecoder(res.Body).Decode(&body); err != nil {
		t.Fatal(err)
	}
	for _, c := range body.Components {
		if c["name"] == "feishu/default" {
			app = c
		}
	}
	return res.StatusCode, body.Status, app
}

// waitHealth polls /healthz until the app's component satisfies ok.
func (r *larkWSRig) waitHealth(t *testing.T, what string, ok func(map[string]string) bool) (int, string, map[string]string) {
	t.Helper()
	for {
		code, status, app := r.health(t)
		if ok(app) {
			return code, status, app
		}
		select {
		case <-r.ctx.Done():
			t.Fatalf("/healthz never showed the app %s: %v", what, app)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// account is the app as the dashboard (and pincer status) shows it.
func (r *larkWSRig) account(t *testing.T) dashboard.Account {
	t.Helper()
	res, err := http.Get(r.gw.url + "/api/dashboard/status")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var st dashboard.Status
	if err := json.NewDecoder(res.Body).Decode(&st); err != nil {
		t.Fatal(err)
	}
	for _, a := range st.Accounts {
		if a.Channel == "feishu" && a.ID == "default" {
			return a
		}
	}
	t.Fatalf("no feishu account on the dashboard: %+v", st.Accounts)
	return dashboard.Account{}
}

// push has the platform deliver ev and checks it was acknowledged 200.
func (r *larkWSRig) push(t *testing.T, ev any, opts feishusim.EventOptions) *feishusim.Delivery {
	t.Helper()
	d, err := r.sim.PushEvent(r.ctx, ev, opts)
	if err != nil {
		t.Fatal(err)
	}
	if d.Status != http.StatusOK {
		t.Fatalf("event %s acknowledged %d after %d deliveries", d.EventID, d.Status, d.Attempts)
	}
	return d
}

// mention is a message in the group that @s the bot.
func mention(id, text string) feishusim.Message {
	return feishusim.Message{
		ID: id, ChatID: larkGroup, SenderID: larkUserA, Content: `{"text":"@_user_1 ` + text + `"}`,
		Mentions: []feishusim.Mention{{Key: "@_user_1", ID: feishusim.DefaultBotOpenID, Name: feishusim.DefaultBotName}},
	}
}

// TestFeishuLongConnection: over the long connection, an @ in a group is
// answered through the open platform's API; the same event delivered
// again, and the same message under a new event id, are answered no
// more; a connection the platform drops shows on /healthz and the
// dashboard as reconnecting, with the drop's error, and once it is back
// events are answered again.
func TestFeishuLongConnection(t *testing.T) {
	r := newLarkWSRig(t, feishusim.RefuseNone)
	if code, status, app := r.waitHealth(t, "ok", func(c map[string]string) bool { return c["status"] == "ok" }); code != http.StatusOK || status != "ok" {
		t.Errorf("connected: %d %s %v", code, status, app)
	}
	if a := r.account(t); a.State != "connected" || a.Self != feishusim.DefaultBotOpenID || a.LastError != "" {
		t.Errorf("the dashboard shows %+v", a)
	}
	r.awaitPong(t)

	d := r.push(t, mention("om_ws_1", "第一条"), feishusim.EventOptions{})
	sent := r.waitSentCtx(t, 1)
	if sent[0].ReplyTo != "om_ws_1" || !strings.Contains(larkText(t, sent[0]), "第一条") {
		t.Errorf("the reply: %+v", sent[0])
	}
	r.push(t, "om_ws_1", feishusim.EventOptions{EventID: d.EventID})
	r.push(t, "om_ws_1", feishusim.EventOptions{})
	// A later message of the chat is answered after anything taken
	// before it: its reply is the second message the bot sends.
	r.push(t, mention("om_ws_2", "第二条"), feishusim.EventOptions{})
	sent = r.waitSentCtx(t, 2)
	if sent[1].ReplyTo != "om_ws_2" {
		t.Errorf("the second message the bot sent answers %s, want om_ws_2 (a duplicate was answered): %+v", sent[1].ReplyTo, sent)
	}

	r.sim.SetRefusal(feishusim.RefuseBusy)
	r.sim.DropConnections()
	code, status, app := r.waitHealth(t, "reconnecting", func(c map[string]string) bool {
		return c["status"] == "degraded" && strings.Contains(c["reason"], "system busy")
	})
	if code != http.StatusOK || status != "degraded" || !strings.HasPrefix(app["reason"], "reconnecting: ") {
		t.Errorf("reconnecting: %d %s %v", code, status, app)
	}
	if a := r.account(t); a.State != "reconnecting" || !strings.Contains(a.LastError, "system busy") {
		t.Errorf("the dashboard shows %+v while reconnecting", a)
	}
	r.sim.SetRefusal(feishusim.RefuseNone)
	r.waitHealth(t, "ok again", func(c map[string]string) bool { return c["status"] == "ok" })
	r.push(t, mention("om_ws_3", "第三条"), feishusim.EventOptions{})
	if sent := r.waitSentCtx(t, 3); sent[2].ReplyTo != "om_ws_3" {
		t.Errorf("after the reconnect: %+v", sent[2])
	}
}

// TestFeishuLongConnectionRefused: an app the platform refuses makes
// /healthz down (503) with a reason naming the account and the fix, and
// the dashboard shows it refused with the hint.
func TestFeishuLongConnectionRefused(t *testing.T) {
	for _, tc := range []struct {
		name    string
		refusal feishusim.Refusal
		fix     string
	}{
		{"credentials", feishusim.RefuseCredentials, "copy appId and appSecret again"},
		{"too many connections", feishusim.RefuseConnLimit, "stop the other clients of the app"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newLarkWSRig(t, tc.refusal)
			code, status, app := r.waitHealth(t, "down", func(c map[string]string) bool { return c["status"] == "down" })
			if code != http.StatusServiceUnavailable || status != "down" ||
				!strings.HasPrefix(app["reason"], "account default refused: ") || !strings.Contains(app["reason"], tc.fix) {
				t.Errorf("refused: %d %s %v", code, status, app)
			}
			if a := r.account(t); a.State != dashboard.StateRefused || !strings.Contains(a.Hint, tc.fix) || a.LastError == "" {
				t.Errorf("the dashboard shows %+v", a)
			}
		})
	}
}

// waitSentCtx waits until the platform has n messages from the bot.
func (r *larkWSRig) waitSentCtx(t *testing.T, n int) []feishusim.SentMessage {
	t.Helper()
	for {
		if s := r.sim.Sent(); len(s) >= n {
			return s
		}
		select {
		case <-r.ctx.Done():
			t.Fatalf("%d messages sent, want %d", len(r.sim.Sent()), n)
		case <-time.After(20 * time.Millisecond):
		}
	}
}
