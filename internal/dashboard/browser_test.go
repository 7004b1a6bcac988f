package dashboard_test

import (
	"context"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/pincerbot/pincer/internal/dashboard"
	"github.com/pincerbot/pincer/internal/trace"
)

// chromium finds a Chromium binary. Without one the browser test skips,
// unless PINCER_REQUIRE_BROWSER is set (as CI does), where it fails.
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("PINCER_REQUIRE_BROWSER") != "" {
		t.Fatal("no Chromium found, and PINCER_REQUIRE_BROWSER is set")
	}
	t.Skip("no Chromium on this machine")
	return ""
}

func browser(t *testing.T) context.Context {
	t.Helper()
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(chromium(t)),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.UserDataDir(t.TempDir()),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	ctx, cancelTimeout := context.WithTimeout(ctx, 60*time.Second)
	t.Cleanup(func() { cancelTimeout(); cancel(); cancelAlloc() })
	return ctx
}

func run[T any](t *testing.T, ctx context.Context, a chromedp.Action[T]) T {
	t.Helper()
	v, err := chromedp.Run(ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func do(t *testing.T, ctx context.Context, what string, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	if err := chromedp.Do(ctx, steps...); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

func screenshot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	png := run(t, ctx, chromedp.FullScreenshot(100)) // 100: PNG; below it is JPEG
	// Kept with go test -artifacts (under -outputdir), else removed.
	path := filepath.Join(t.ArtifactDir(), name)
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s", path)
}

// TestBrowserDashboard opens the dashboard in a real browser, then traces
// a group message that did not trigger and watches its decision appear
// live, with the rule that decided it once the row is opened.
func TestBrowserDashboard(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a browser")
	}
	rec := trace.New(trace.Options{})
	src := &fakeSource{
		status: dashboard.Status{
			Version: "v0.9.0", Started: time.Now().Add(-time.Hour),
			Accounts: []dashboard.Account{
				{Channel: "onebot", ID: "main", State: dashboard.StateConnected, Self: "10001", Name: "pincer", Implementation: "NapCat", Version: "4.8.1"},
				{Channel: "feishu", ID: "work", State: dashboard.StateFailed, LastError: "app credentials refused", LastErrorAt: time.Now()},
			},
			Queues: []dashboard.Queue{{Name: "inbound", Depth: 3, Capacity: 1024}},
			Config: dashboard.ConfigCheck{OK: true, Warnings: []string{"realtime windows are off"}},
		},
		chats: map[string]dashboard.ChatView{
			"onebot:main:group:100": {
				History: []dashboard.Line{{At: time.Now(), Sender: "alice", Text: "anyone around?"}},
				Session: &dashboard.Session{Key: "onebot:main:group:100", Model: "claude-test", Turns: 7},
			},
		},
	}
	d, err := dashboard.New(dashboard.Options{Recorder: rec, Source: src, Title: "pincer ops"})
	if err != nil {
		t.Fatal(err)
	}
	// A message answered before the page opened: it is in the rate chart
	// and the stream's first load.
	earlier := groupMessage("main", "200", "e1", "@pincer what time is it")
	rec.Begin(earlier)
	rec.Step(trace.KeyOf(earlier), trace.StageTrigger, "triggered", "@ of the bot")
	rec.Step(trace.KeyOf(earlier), trace.StageDeliver, "sent", "1 message")

	go func() { _ = d.Run(t.Context()) }()
	srv := httptest.NewServer(d.Handler())
	t.Cleanup(srv.Close)

	ctx := browser(t)
	do(t, ctx, "open the page",
		chromedp.EmulateViewport(1280, 900),
		chromedp.Navigate(srv.URL+"/dashboard"),
		chromedp.Poll[chromedp.Void](`document.getElementById('live').textContent === 'live'`),
		chromedp.Poll[chromedp.Void](`document.querySelectorAll('#stream .decision').length === 1`),
		chromedp.Poll[chromedp.Void](`document.querySelectorAll('.account').length === 2`),
		chromedp.Poll[chromedp.Void](`document.querySelector('#rate-chart rect.bar-messages') !== null`),
	)
	if title := run(t, ctx, chromedp.Title()); title != "pincer ops" {
		t.Errorf("title %q", title)
	}
	main := run(t, ctx, chromedp.Text(chromedp.CSS(`.account[data-account="onebot:main"]`)))
	for _, want := range []string{"connected", "NapCat 4.8.1", "pincer (10001)"} {
		if !strings.Contains(main, want) {
			t.Errorf("account panel %q lacks %q", main, want)
		}
	}
	failed := run(t, ctx, chromedp.Text(chromedp.CSS(`.account[data-account="feishu:work"]`)))
	if !strings.Contains(failed, "failed") || !strings.Contains(failed, "app credentials refused") {
		t.Errorf("failed account panel %q", failed)
	}
	if overview := run(t, ctx, chromedp.Text(chromedp.ID("overview"))); !strings.Contains(overview, "v0.9.0") || !strings.Contains(overview, "realtime windows are off") {
		t.Errorf("overview %q", overview)
	}
	if n := run(t, ctx, chromedp.Evaluate[int](`document.querySelectorAll('#rate-chart rect.bar-messages').length`)); n != 1 {
		t.Errorf("%d message bars, want 1", n)
	}
	if link := run(t, ctx, chromedp.Evaluate[string](`document.getElementById('chat-link').href`)); link != srv.URL+"/" {
		t.Errorf("web chat link %q", link)
	}

	// Now a group message that does not trigger, traced while the page
	// is open.
	m := groupMessage("main", "100", "m1", "has anyone seen the build?")
	rec.Begin(m)
	rec.Step(trace.KeyOf(m), trace.StageBuffer, "", "kept in the group history (12 lines)")
	rec.Step(trace.KeyOf(m), trace.StageTrigger, "not triggered", "no @ of the bot; no keyword matched")
	do(t, ctx, "see the decision arrive",
		chromedp.Poll[chromedp.Void](`document.querySelectorAll('#stream .decision').length === 2 &&
			document.querySelector('#stream .decision .outcome').textContent === 'not triggered'`),
	)
	row := run(t, ctx, chromedp.Text(chromedp.CSS(`#stream .decision:first-child .row`)))
	for _, want := range []string{"onebot:main:group:100", "alice (42)", "has anyone seen the build?", "not triggered"} {
		if !strings.Contains(row, want) {
			t.Errorf("row %q lacks %q", row, want)
		}
	}
	if n := run(t, ctx, chromedp.Evaluate[int](`document.querySelectorAll('#stream .steps').length`)); n != 0 {
		t.Errorf("%d rows open before a click", n)
	}
	do(t, ctx, "open the row",
		chromedp.Click(chromedp.CSS(`#stream .decision:first-child .row .preview`)),
		chromedp.WaitVisible(chromedp.CSS(`#stream .decision:first-child .steps`)),
	)
	steps := run(t, ctx, chromedp.Text(chromedp.CSS(`#stream .decision:first-child .steps`)))
	for _, want := range []string{"receive", "kept in the group history (12 lines)", "trigger", "not triggered", "no @ of the bot; no keyword matched"} {
		if !strings.Contains(steps, want) {
			t.Errorf("steps %q lack %q", steps, want)
		}
	}
	screenshot(t, ctx, "dashboard.png")

	// The chat link opens the chat's view.
	do(t, ctx, "open the chat",
		chromedp.Click(chromedp.CSS(`#stream .decision:first-child .row .chat`)),
		chromedp.Poll[chromedp.Void](`document.getElementById('chat-view').textContent.includes('claude-test')`),
	)
	view := run(t, ctx, chromedp.Text(chromedp.ID("chat-view")))
	for _, want := range []string{"onebot:main:group:100", "Turns", "7", "anyone around?", "no open window", "has anyone seen the build?"} {
		if !strings.Contains(strings.ToLower(view), strings.ToLower(want)) {
			t.Errorf("chat view %q lacks %q", view, want)
		}
	}

	// On a phone the page fits the screen's width.
	do(t, ctx, "narrow the screen", chromedp.EmulateViewport(390, 844, chromedp.EmulateScale(2)))
	if over := run(t, ctx, chromedp.Evaluate[bool](`document.documentElement.scrollWidth > window.innerWidth`)); over {
		t.Error("the page is wider than a phone's screen")
	}
	screenshot(t, ctx, "dashboard-phone.png")
}
