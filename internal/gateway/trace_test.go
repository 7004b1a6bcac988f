package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pincerbot/pincer/internal/channel/onebot/onebottest"
	"github.com/pincerbot/pincer/internal/channel/webchat/webchattest"
	"github.com/pincerbot/pincer/internal/config"
	"github.com/pincerbot/pincer/internal/trace"
)

// traceOf asks the running gateway for a message's trace, as `pincer
// trace` and the dashboard do, until want shows in its JSON without its
// times (whose digits could spell want by chance).
func traceOf(t *testing.T, ctx context.Context, base, chat, id, want string) trace.Record {
	t.Helper()
	for {
		res, err := http.Get(base + "/api/trace?chat=" + url.QueryEscape(chat) + "&id=" + url.QueryEscape(id))
		if err != nil {
			t.Fatal(err)
		}
		var got struct {
			Records []trace.Record `json:"records"`
		}
		err = json.NewDecoder(res.Body).Decode(&got)
		res.Body.Close()
		if err != nil || res.StatusCode != http.StatusOK {
			t.Fatalf("GET /api/trace: %d %v", res.StatusCode, err)
		}
		if len(got.Records) == 1 {
			rec := got.Records[0]
			timeless := rec
			timeless.At = time.Time{}
			timeless.Steps = slices.Clone(rec.Steps)
			for i := range timeless.Steps {
				timeless.Steps[i].At = time.Time{}
			}
			b, _ := json.Marshal(timeless)
			if strings.Contains(string(b), want) {
				return rec
			}
		}
		select {
		case <-ctx.Done():
			t.Fatalf("no trace of %s %s showing %q; last: %+v", chat, id, want, got.Records)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// TestWhyItDidNotReplyEndToEnd: through the real gateway and a OneBot
// implementation over a WebSocket, a group message without an @ leaves a
// trace naming the rules that did not match, one with an @ a trace from
// the trigger to the sent message's id, and a message the implementation
// delivers twice a trace saying the second was a duplicate.
func TestWhyItDidNotReplyEndToEnd(t *testing.T) {
	p := onebottest.New(t, func(action string, _ json.RawMessage) (any, int, string) {
		switch action {
		case "get_login_info":
			return map[string]any{"user_id": botQQ, "nickname": "bot"}, 0, ""
		case "send_group_msg":
			return map[string]any{"message_id": 9001}, 0, ""
		}
		return nil, 0, ""
	})
	cfg := config.Default()
	cfg.Channels.OneBot.WSURL = p.URL
	cfg.Channels.OneBot.Receive.Mention.Keywords = []string{"天气"}
	g := startGateway(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := p.Connected(ctx); err != nil {
		t.Fatal(err)
	}
	if err := p.Push(ctx, qqGroupEvent(1, seg("text", map[string]any{"text": "just chatting"}))); err != nil {
		t.Fatal(err)
	}
	chat := fmt.Sprintf("onebot:default:group:%d", 700000001)
	quiet := traceOf(t, ctx, g.url, chat, "1", "not triggered")
	why := ""
	for _, s := range quiet.Steps {
		if s.Stage == trace.StageTrigger {
			why = s.Detail
		}
	}
	for _, want := range []string{"no @ of the bot", `no keyword matched (contains match of "天气")`, "requireMentionInGroup is on"} {
		if !strings.Contains(why, want) {
			t.Errorf("the trigger step %q does not say %q", why, want)
		}
	}
	if quiet.Sender != "张三 (10001)" || quiet.Preview != "just chatting" {
		t.Errorf("record header %+v", quiet)
	}

	asked := qqGroupEvent(2, seg("at", map[string]any{"qq": botQQ}), seg("text", map[string]any{"text": " 你好"}))
	if err := p.Push(ctx, asked); err != nil {
		t.Fatal(err)
	}
	if err := p.Push(ctx, asked); err != nil { // delivered twice
		t.Fatal(err)
	}
	answered := traceOf(t, ctx, g.url, chat, "2", "9001")
	stages := map[string]trace.Step{}
	for _, s := range answered.Steps {
		stages[s.Stage] = s
	}
	if s := stages[trace.StageTrigger]; s.Outcome != "triggered" || s.Detail != "an @ of the bot" {
		t.Errorf("trigger step %+v", s)
	}
	if s := stages[trace.StageAgent]; !strings.Contains(s.Detail, "answered in") {
		t.Errorf("agent step %+v", s)
	}
	if s := stages[trace.StageDeliver]; s.Outcome != "sent" || !strings.Contains(s.Detail, "1 message(s) sent (9001)") {
		t.Errorf("deliver step %+v", s)
	}
	traceOf(t, ctx, g.url, chat, "2", "a duplicate")
}

// TestDashboardAndTracesNeedTheGatewayToken: off loopback the dashboard,
// the traces and their event stream answer only with the gateway token,
// like the web chat.
func TestDashboardAndTracesNeedTheGatewayToken(t *testing.T) {
	cfg := config.Default()
	cfg.Gateway.Token = "gateway-secret"
	g := startExposed(t, cfg)
	for _, path := range []string{"/dashboard", "/api/trace", "/api/trace?chat=onebot:default:group:1", "/api/dashboard/status", "/api/dashboard/chat?chat=webchat:default:direct:x", "/api/session"} {
		res, err := http.Get(g.url + path)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusUnauthorized {
			t.Errorf("GET %s without the token: %d", path, res.StatusCode)
		}
	}
	for _, path := range []string{"/dashboard", "/api/trace", "/api/dashboard/status"} {
		req, _ := http.NewRequest(http.MethodGet, g.url+path, nil)
		req.Header.Set("Authorization", "Bearer gateway-secret")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusOK {
			t.Errorf("GET %s with the token: %d", path, res.StatusCode)
		}
	}
	// The event stream opens with the token and ends with the request.
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, g.url+"/api/trace/stream", nil)
	req.Header.Set("Authorization", "Bearer gateway-secret")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if res.StatusCode != http.StatusOK || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/event-stream") {
		t.Errorf("stream: %d %q", res.StatusCode, res.Header.Get("Content-Type"))
	}
	cancel()
	res.Body.Close()
}

// TestWebChatNamesTheModel: the web chat's session names the model that
// answers the browser, the configured primary.
func TestWebChatNamesTheModel(t *testing.T) {
	g := startGateway(t, withOpenAI("http://127.0.0.1:1"))
	s, err := webchattest.New(g.url).Session()
	if err != nil {
		t.Fatal(err)
	}
	if s["model"] != "openai/gpt-4o-mini" {
		t.Errorf("session %v: want model openai/gpt-4o-mini", s)
	}
}

// TestWebChatLinksToTheDashboard: the web chat's page links to the
// dashboard, which the gateway serves there.
func TestWebChatLinksToTheDashboard(t *testing.T) {
	g := startGateway(t, config.Default())
	res, err := http.Get(g.url + "/")
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if !strings.Contains(string(page), `href="dashboard"`) {
		t.Fatal("the web chat page has no link to the dashboard")
	}
	res, err = http.Get(g.url + "/dashboard")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusOK || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/html") {
		t.Errorf("GET /dashboard: %d %s", res.StatusCode, res.Header.Get("Content-Type"))
	}
}

// TestDashboardShowsTheConfigCheck: what `pincer config check` warns of
// (here a keyword that is not a valid regular expression) shows on the
// dashboard's status.
func TestDashboardShowsTheConfigCheck(t *testing.T) {
	cfg := config.Default()
	cfg.Channels.Webchat.Receive.Mention.KeywordMatch = "regex"
	cfg.Channels.Webchat.Receive.Mention.Keywords = []string{"(unclosed"}
	g := startGateway(t, cfg)
	res, err := http.Get(g.url + "/api/dashboard/status")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var st struct {
		Config struct {
			OK       bool     `json:"ok"`
			Warnings []string `json:"warnings"`
		} `json:"config"`
	}
	if err := json.NewDecoder(res.Body).Decode(&st); err != nil {
		t.Fatal(err)
	}
	if !st.Config.OK || len(st.Config.Warnings) != 1 || !strings.Contains(st.Config.Warnings[0], `"(unclosed" is not a valid regular expression`) {
		t.Errorf("config check on the dashboard: %+v", st.Config)
	}
}

// TestDashboardShowsWhatAChatHolds: a chat's view shows its history
// buffer (chatter kept as context) and the realtime window an @ opened.
func TestDashboardShowsWhatAChatHolds(t *testing.T) {
	p := onebottest.New(t, func(action string, _ json.RawMessage) (any, int, string) {
		if action == "get_login_info" {
			return map[string]any{"user_id": botQQ, "nickname": "bot"}, 0, ""
		}
		return nil, 0, ""
	})
	cfg := config.Default()
	cfg.Channels.OneBot.WSURL = p.URL
	rt := &cfg.Channels.OneBot.Receive.Realtime
	rt.Enabled, rt.WindowMs, rt.MaxWindowMs = true, 60000, 120000
	g := startGateway(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := p.Connected(ctx); err != nil {
		t.Fatal(err)
	}
	if err := p.Push(ctx, qqGroupEvent(1, seg("text", map[string]any{"text": "context for later"}))); err != nil {
		t.Fatal(err)
	}
	if err := p.Push(ctx, qqGroupEvent(2, seg("at", map[string]any{"qq": botQQ}), seg("text", map[string]any{"text": " 等等再答"}))); err != nil {
		t.Fatal(err)
	}
	traceOf(t, ctx, g.url, "onebot:default:group:700000001", "2", "a realtime window")
	res, err := http.Get(g.url + "/api/dashboard/chat?chat=" + url.QueryEscape("onebot:default:group:700000001"))
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var view struct {
		History []struct{ Sender, Text string } `json:"history"`
		Window  *struct{ Messages int }         `json:"window"`
	}
	if err := json.NewDecoder(res.Body).Decode(&view); err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("chat view: %d %v", res.StatusCode, err)
	}
	if len(view.History) == 0 || view.History[0].Text != "context for later" || !strings.Contains(view.History[0].Sender, "10001") {
		t.Errorf("history %+v", view.History)
	}
	if view.Window == nil || view.Window.Messages != 1 {
		t.Errorf("window %+v: the @ opened one holding it", view.Window)
	}
}
