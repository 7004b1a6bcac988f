package gateway

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/pincerbot/pincer/internal/browsertest"
	"github.com/pincerbot/pincer/internal/channel/onebot/onebottest"
	"github.com/pincerbot/pincer/internal/channel/webchat"
	"github.com/pincerbot/pincer/internal/channel/webchat/webchattest"
	"github.com/pincerbot/pincer/internal/config"
)

// TestBrowserDashboardTracesLive opens the dashboard of a running gateway
// in a real browser, sends a web chat message and watches its decision
// arrive, answered; then a QQ group message without an @ arrives over a
// OneBot WebSocket, and its row, opened, names the rules that did not
// match. Screenshots are kept as test artifacts (go test -artifacts).
func TestBrowserDashboardTracesLive(t *testing.T) {
	ctx := browsertest.New(t)
	p := onebottest.New(t, func(action string, _ json.RawMessage) (any, int, string) {
		if action == "get_login_info" {
			return map[string]any{"user_id": botQQ, "nickname": "bot"}, 0, ""
		}
		return nil, 0, ""
	})
	cfg := config.Default()
	cfg.Channels.OneBot.WSURL = p.URL
	g := startGateway(t, cfg)
	wait, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := p.Connected(wait); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(ctx,
		chromedp.EmulateViewport(1280, 900),
		chromedp.Navigate(g.url+"/dashboard"),
		chromedp.Poll[chromedp.Void](`document.getElementById('live').textContent === '实时'`), // the default locale's
		chromedp.Poll[chromedp.Void](`document.querySelector('.account[data-account="onebot:default"]') !== null &&
			document.querySelector('.account[data-account="onebot:default"]').textContent.includes('connected')`),
	); err != nil {
		t.Fatalf("open the dashboard: %v", err)
	}

	res, _, err := webchattest.New(g.url).Post("hello from the web chat", "")
	if err != nil {
		t.Fatal(err)
	}
	if events, err := webchattest.Events(res); err != nil || webchattest.Text(events, webchat.EventReply) == "" {
		t.Fatalf("no web chat reply: %v", err)
	}
	if err := chromedp.Do(ctx, chromedp.Poll[chromedp.Void](`[...document.querySelectorAll('#stream .decision')].some(d =>
		d.textContent.includes('hello from the web chat') && d.querySelector('.outcome').textContent === 'sent')`)); err != nil {
		t.Fatalf("the web chat message's decision never showed as sent: %v", err)
	}

	if err := p.Push(wait, qqGroupEvent(77, seg("text", map[string]any{"text": "nobody asked the bot"}))); err != nil {
		t.Fatal(err)
	}
	const row = `[...document.querySelectorAll('#stream .decision')].find(d => d.textContent.includes('nobody asked the bot'))`
	if err := chromedp.Do(ctx,
		chromedp.Poll[chromedp.Void](row+` !== undefined && `+row+`.querySelector('.outcome').textContent === 'not triggered'`),
		chromedp.Poll[chromedp.Void](`(`+row+`.querySelector('.row .preview').click(), true)`),
		chromedp.Poll[chromedp.Void](row+`.querySelector('.steps') !== null`),
	); err != nil {
		t.Fatalf("the QQ message's decision: %v", err)
	}
	steps := browsertest.Run(t, ctx, chromedp.Evaluate[string](row+`.querySelector('.steps').textContent`))
	for _, want := range []string{"no @ of the bot", "no keywords are set", "requireMentionInGroup is on", "the history buffer"} {
		if !strings.Contains(steps, want) {
			t.Errorf("the opened row %q lacks %q", steps, want)
		}
	}
	browsertest.Screenshot(t, ctx, "gateway-dashboard.png")
}
