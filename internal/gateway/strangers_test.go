package gateway

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"log/slog"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pincerbot/pincer/internal/channel/onebot/onebottest"
	"github.com/pincerbot/pincer/internal/config"
)

// exposed is a gateway listening on every interface, as gateway.listen
// '0.0.0.0:<port>' would, reached through 127.0.0.1.
type exposed struct {
	url  string // http://127.0.0.1:<port>
	ws   string // ws://127.0.0.1:<port>
	logs *lines
}

// listenEverywhere binds a port on every interface and returns it with
// the gateway.listen that names it.
func listenEverywhere(t *testing.T) (net.Listener, string) {
	t.Helper()
	ln, err := net.Listen("tcp", "0.0.0.0:0")
	if err != nil {
		t.Fatal(err)
	}
	_, port, err := net.SplitHostPort(ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	return ln, "0.0.0.0:" + port
}

// startExposed runs the gateway on a listener on every interface; cfg
// must have what a non-loopback listener requires (gateway.token).
func startExposed(t *testing.T, cfg config.Config) *exposed {
	t.Helper()
	cfg.Store.Path = filepath.Join(t.TempDir(), "pincer.db")
	cfg.Agents.Defaults.Workspace = t.TempDir()
	ln, listen := listenEverywhere(t)
	cfg.Gateway.Listen = listen
	_, port, _ := net.SplitHostPort(listen)
	e := &exposed{url: "http://127.0.0.1:" + port, ws: "ws://127.0.0.1:" + port, logs: &lines{}}
	runGateway(t, cfg, Options{Listener: ln, Logger: slog.New(slog.NewTextHandler(e.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	return e
}

// lines collects log lines.
type lines struct {
	mu  sync.Mutex
	all []string
}

func (l *lines) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.all = append(l.all, strings.TrimSpace(string(p)))
	return len(p), nil
}

func (l *lines) matching(sub string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, s := range l.all {
		if strings.Contains(s, sub) {
			out = append(out, s)
		}
	}
	return out
}

// exposedQQ is the configuration of a gateway on every interface with a
// QQ account that takes reverse connections and event POSTs.
func exposedQQ() config.Config {
	cfg := config.Default()
	cfg.Gateway.Token = "gateway-secret"
	cfg.Channels.OneBot.AccessToken = "qq-token"
	cfg.Channels.OneBot.SelfID = "3300000001"
	cfg.Channels.OneBot.ReverseWS.Enabled = true
	return cfg
}

// TestExposedGatewayRefusesOneBotWithoutAccessToken: off loopback, an
// inbound OneBot endpoint without its token stops the start with one line
// naming the key.
func TestExposedGatewayRefusesOneBotWithoutAccessToken(t *testing.T) {
	for _, tc := range []struct {
		name string
		set  func(*config.OneBot)
		want string
	}{
		{"reverse WebSocket", func(o *config.OneBot) { o.ReverseWS.Enabled = true },
			"channels.onebot.accessToken: required when reverseWs is enabled and gateway.listen (%s) is not loopback"},
		{"event POST", func(o *config.OneBot) { o.HTTPPost.Enabled = true },
			"channels.onebot.accessToken: required (or httpPost.secret) when httpPost is enabled and gateway.listen (%s) is not loopback"},
		{"a named account", func(o *config.OneBot) {
			doc := `{"accessToken": "qq-token", "reverseWs": {"enabled": true}, "accounts": {"second": {"reverseWs": {"enabled": true}}}}`
			if err := json.Unmarshal([]byte(doc), o); err != nil {
				t.Fatal(err)
			}
		}, "channels.onebot.accounts.second.accessToken: required when reverseWs is enabled and gateway.listen (%s) is not loopback"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := config.Default()
			cfg.Store.Path = filepath.Join(t.TempDir(), "pincer.db")
			cfg.Gateway.Token = "gateway-secret"
			tc.set(&cfg.Channels.OneBot)
			ln, listen := listenEverywhere(t)
			defer ln.Close()
			cfg.Gateway.Listen = listen
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			result := make(chan error, 1)
			ready := make(chan struct{})
			go func() { result <- Run(ctx, cfg, Options{Listener: ln, Ready: readyWriter(ready)}) }()
			var err error
			select {
			case err = <-result:
			case <-ready:
				cancel()
				t.Fatalf("the gateway started: %v", <-result)
			}
			want := strings.Replace(tc.want, "%s", listen, 1)
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Fatalf("got %v\nwant %s", err, want)
			}
			if n := strings.Count(err.Error(), "\n"); n != 0 {
				t.Errorf("one line: %q", err)
			}
		})
	}
}

// dm is a direct message from 10001 to the bot.
func dm(id int64, text string) map[string]any {
	return map[string]any{
		"time": time.Now().Unix(), "self_id": botQQ, "post_type": "message", "message_type": "private",
		"message_id": id, "user_id": 10001, "sender": map[string]any{"user_id": 10001, "nickname": "张三"},
		"message": text,
	}
}

func answerSends(action string, _ json.RawMessage) (any, int, string) {
	if strings.HasPrefix(action, "send_") {
		return map[string]any{"message_id": 9100}, 0, ""
	}
	return nil, 0, ""
}

func sendCount(p *onebottest.Peer) int {
	n := 0
	for _, c := range p.Calls() {
		if strings.HasPrefix(c.Action, "send_") {
			n++
		}
	}
	return n
}

// TestStrangerReverseConnectionIsRefused: on a listener on every
// interface, a reverse connection without the access token (missing,
// wrong, or in a scheme other than Bearer and Token) is refused, and the
// implementation already connected stays the one that is answered.
func TestStrangerReverseConnectionIsRefused(t *testing.T) {
	g := startExposed(t, exposedQQ())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	url := g.ws + "/onebot/v11/ws"
	real := onebottest.New(t, answerSends)
	if err := real.DialReverse(ctx, url, onebottest.ReverseOptions{SelfID: botQQ, Authorization: "Bearer qq-token"}); err != nil {
		t.Fatal(err)
	}
	if err := real.Connected(ctx); err != nil {
		t.Fatal(err)
	}
	stranger := onebottest.New(t, answerSends)
	for _, tc := range []struct{ auth, status string }{
		{"", "HTTP 401"},
		{"Bearer", "HTTP 401"},
		{"Bearer guess", "HTTP 403"},
		{"Token guess", "HTTP 403"},
		{"guess", "HTTP 403"},
		{"Basic qq-token", "HTTP 401"},
		{"Basic " + base64.StdEncoding.EncodeToString([]byte("onebot:qq-token")), "HTTP 401"},
		{"Custom qq-token", "HTTP 401"},
	} {
		err := stranger.DialReverse(ctx, url, onebottest.ReverseOptions{SelfID: botQQ, Authorization: tc.auth})
		if err == nil || !strings.Contains(err.Error(), tc.status) {
			t.Errorf("Authorization %q: want %s, got %v", tc.auth, tc.status, err)
		}
	}
	if n := stranger.Conns(); n != 0 {
		t.Fatalf("the stranger holds %d connections", n)
	}
	if err := real.Push(ctx, dm(5, "还在吗")); err != nil {
		t.Fatal(err)
	}
	if s := waitSend(t, real, ctx); s.action != "send_private_msg" {
		t.Fatalf("sent %+v", s)
	}
	if n := sendCount(stranger); n != 0 {
		t.Errorf("the stranger was sent %d messages", n)
	}
	if got := g.logs.matching("replaced the live one"); len(got) != 0 {
		t.Errorf("no handover: %q", got)
	}
	if got := g.logs.matching("reverse WebSocket refused"); len(got) != 1 {
		t.Errorf("refusals are logged once a minute: %q", got)
	}
}

// TestValidSecondReverseConnectionTakesOver: a second connection that
// carries the token replaces the live one (an implementation that
// restarted), and the handover is logged with both remote addresses.
func TestValidSecondReverseConnectionTakesOver(t *testing.T) {
	g := startExposed(t, exposedQQ())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	url := g.ws + "/onebot/v11/ws?access_token=qq-token"
	first := onebottest.New(t, answerSends)
	if err := first.DialReverse(ctx, url, onebottest.ReverseOptions{SelfID: botQQ}); err != nil {
		t.Fatal(err)
	}
	if err := first.Connected(ctx); err != nil {
		t.Fatal(err)
	}
	second := onebottest.New(t, answerSends)
	if err := second.DialReverse(ctx, g.ws+"/onebot/v11/ws", onebottest.ReverseOptions{SelfID: botQQ, Authorization: "Token qq-token"}); err != nil {
		t.Fatal(err)
	}
	if err := second.Connected(ctx); err != nil {
		t.Fatal(err)
	}
	if err := second.Push(ctx, dm(6, "我换了个连接")); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if t.Failed() {
			g.logs.mu.Lock()
			t.Logf("log:\n%s", strings.Join(g.logs.all, "\n"))
			g.logs.mu.Unlock()
			t.Logf("first got %+v", first.Calls())
			t.Logf("second got %+v", second.Calls())
		}
	}()
	if s := waitSend(t, second, ctx); s.action != "send_private_msg" {
		t.Fatalf("sent %+v", s)
	}
	if n := sendCount(first); n != 0 {
		t.Errorf("the replaced connection was sent %d messages", n)
	}
	// The two connections reach the account in either order: the newer
	// one replaces the older, or the older, arriving late, is closed.
	got := append(g.logs.matching("replaced the live one"), g.logs.matching("older than the live one was closed")...)
	if len(got) != 1 || !strings.Contains(got[0], "level=INFO") {
		t.Fatalf("handover: %q", got)
	}
	remote, other := attr(got[0], "remote"), attr(got[0], "replaced_remote")
	if other == "" {
		other = attr(got[0], "live_remote")
	}
	if !strings.HasPrefix(remote, "127.0.0.1:") || !strings.HasPrefix(other, "127.0.0.1:") || remote == other {
		t.Errorf("both remote addresses: %q", got[0])
	}
}

// attr returns the value of key in a text log line.
func attr(line, key string) string {
	for f := range strings.FieldsSeq(line) {
		if v, ok := strings.CutPrefix(f, key+"="); ok {
			return v
		}
	}
	return ""
}

// TestExposedPostMustBeSignedForThisAccount: event POSTs on a listener
// on every interface need the signature (the access token is the key) and
// the account's QQ number; refused ones are never answered.
func TestExposedPostMustBeSignedForThisAccount(t *testing.T) {
	p := onebottest.New(t, answerSends)
	p.Token = "qq-token"
	cfg := exposedQQ()
	cfg.Channels.OneBot.ReverseWS.Enabled = false
	cfg.Channels.OneBot.HTTPPost.Enabled = true
	cfg.Channels.OneBot.HTTPURL = p.HTTPURL
	g := startExposed(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	url := g.url + "/onebot/v11/post"
	post := func(id int64, text string, o onebottest.PostOptions) int {
		t.Helper()
		raw, _ := json.Marshal(dm(id, text))
		status, err := onebottest.Post(ctx, url, raw, o)
		if err != nil {
			t.Fatal(err)
		}
		return status
	}
	for _, tc := range []struct {
		name   string
		o      onebottest.PostOptions
		status int
	}{
		{"unsigned", onebottest.PostOptions{SelfID: botQQ}, 401},
		{"signed with another key", onebottest.PostOptions{SelfID: botQQ, Secret: "guess"}, 403},
		{"a malformed signature", onebottest.PostOptions{SelfID: botQQ, Signature: "sha1=not-hex"}, 403},
		{"the token as a bearer instead of a signature", onebottest.PostOptions{SelfID: botQQ, Signature: "Bearer qq-token"}, 401},
		{"another QQ number", onebottest.PostOptions{SelfID: 3300000002, Secret: "qq-token"}, 403},
	} {
		if status := post(10, "refused: "+tc.name, tc.o); status != tc.status {
			t.Errorf("%s: status %d, want %d", tc.name, status, tc.status)
		}
	}
	if status := post(11, "signed", onebottest.PostOptions{SelfID: botQQ, Secret: "qq-token"}); status != 204 {
		t.Fatalf("a signed POST: %d", status)
	}
	s := waitSend(t, p, ctx)
	var text strings.Builder
	for _, m := range s.params.Message {
		if m.Type == "text" {
			text.WriteString(m.Data["text"].(string))
		}
	}
	if s.action != "send_private_msg" || !strings.Contains(text.String(), "signed") || strings.Contains(text.String(), "refused") {
		t.Errorf("sent %s %q", s.action, text.String())
	}
	if n := sendCount(p); n != 1 {
		t.Errorf("%d sends; only the signed POST is answered", n)
	}
	for _, msg := range []string{"event POST refused: bad signature", "event POST refused: another QQ number"} {
		if got := g.logs.matching(msg); len(got) != 1 {
			t.Errorf("%q logged %d times: %q", msg, len(got), got)
		}
	}
}
