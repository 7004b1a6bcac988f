package gateway

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/pincerbot/pincer/internal/channel/onebot/onebottest"
	"github.com/pincerbot/pincer/internal/channel/webchat"
	"github.com/pincerbot/pincer/internal/channel/webchat/webchattest"
	"github.com/pincerbot/pincer/internal/config"
)

// headless starts a headless Chromium for t. Without one the test skips,
// unless PINCER_REQUIRE_BROWSER is set (as CI does), where it fails.
func headless(t *testing.T) context.Context {
	t.Helper()
	var path string
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			path = p
			break
		}
	}
	if path == "" {
		if os.Getenv("PINCER_REQUIRE_BROWSER") != "" {
			t.Fatal("no Chromium found, and PINCER_REQUIRE_BROWSER is set")
		}
		t.Skip("no Chromium on this machine")
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(),
		chromedp.ExecPath(path), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.NoFirstRun, chromedp.NoDefaultBrowserCheck, chromedp.UserDataDir(t.TempDir()),
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true))
	ctx, cancel := chromedp.NewContext(actx)
	ctx, cancelTimeout := context.WithTimeout(ctx, 90*time.Second)
	t.Cleanup(func() { cancelTimeout(); cancel(); cancelAlloc() })
	return ctx
}

// TestBrowserDashboardTracesLive opens the dashboard of a running gateway
// in a real browser, sends a web chat message and watches its decision
// arrive, answered; then a QQ group message without an @ arrives over a
// OneBot WebSocket, and its row, opened, names the rules that did not
// match. Screenshots are kept as test artifacts (go test -artifacts).
func TestBrowserDashboardTracesLive(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a browser")
	}
	ctx := headless(t)
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
		chromedp.Poll[chromedp.Void](`document.getElementById('live').textContent === 'live'`),
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
	steps, err := chromedp.Run(ctx, chromedp.Evaluate[string](row+`.querySelector('.steps').textContent`))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"no @ of the bot", "no keywords are set", "requireMentionInGroup is on", "the history buffer"} {
		if !strings.Contains(steps, want) {
			t.Errorf("the opened row %q lacks %q", steps, want)
		}
	}
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.ArtifactDir(), "gateway-dashboard.png")
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s", path)
}
