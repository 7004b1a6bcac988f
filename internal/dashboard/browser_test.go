package dashboard_test

import (
	"context"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/pincerbot/pincer/internal/browsertest"

	"github.com/pincerbot/pincer/internal/dashboard"
	"github.com/pincerbot/pincer/internal/texts"
	"github.com/pincerbot/pincer/internal/trace"
)

func do(t *testing.T, ctx context.Context, what string, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	if err := chromedp.Do(ctx, steps...); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// TestBrowserDashboard opens the dashboard in a real browser, then traces
// a group message that did not trigger and watches its decision appear
// live, with the rule that decided it once the row is opened; in Chinese
// by default and in English with the English locale.
func TestBrowserDashboard(t *testing.T) {
	t.Run("zh-CN", func(t *testing.T) {
		browseDashboard(t, "", shownTexts{lang: "zh-CN", live: "实时", turns: "轮数", noWindow: "没有打开的窗口。", status: "状态"})
	})
	t.Run("en", func(t *testing.T) {
		browseDashboard(t, texts.EN, shownTexts{lang: "en", live: "live", turns: "Turns", noWindow: "No open window.", status: "Status"})
	})
}

// shownTexts are texts of the dashboard in one locale.
type shownTexts struct{ lang, live, turns, noWindow, status string }

func browseDashboard(t *testing.T, locale texts.Locale, shown shownTexts) {
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
	d, err := dashboard.New(dashboard.Options{Recorder: rec, Source: src, Title: "pincer ops", Locale: locale})
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

	ctx := browsertest.New(t)
	do(t, ctx, "open the page",
		chromedp.EmulateViewport(1280, 900),
		chromedp.Navigate(srv.URL+"/dashboard"),
		chromedp.Poll[chromedp.Void](`document.getElementById('live').textContent === `+strconv.Quote(shown.live)),
		chromedp.Poll[chromedp.Void](`document.querySelectorAll('#stream .decision').length === 1`),
		chromedp.Poll[chromedp.Void](`document.querySelectorAll('.account').length === 2`),
		chromedp.Poll[chromedp.Void](`document.querySelector('#rate-chart rect.bar-messages') !== null`),
	)
	if title := browsertest.Run(t, ctx, chromedp.Title()); title != "pincer ops" {
		t.Errorf("title %q", title)
	}
	if lang := browsertest.Run(t, ctx, chromedp.Evaluate[string](`document.documentElement.lang`)); lang != shown.lang {
		t.Errorf("lang %q, want %q", lang, shown.lang)
	}
	if h := browsertest.Run(t, ctx, chromedp.Text(chromedp.CSS("#overview h2"))); h != shown.status {
		t.Errorf("status heading %q, want %q", h, shown.status)
	}
	main := browsertest.Run(t, ctx, chromedp.Text(chromedp.CSS(`.account[data-account="onebot:main"]`)))
	for _, want := range []string{"connected", "NapCat 4.8.1", "pincer (10001)"} {
		if !strings.Contains(main, want) {
			t.Errorf("account panel %q lacks %q", main, want)
		}
	}
	failed := browsertest.Run(t, ctx, chromedp.Text(chromedp.CSS(`.account[data-account="feishu:work"]`)))
	if !strings.Contains(failed, "failed") || !strings.Contains(failed, "app credentials refused") {
		t.Errorf("failed account panel %q", failed)
	}
	if overview := browsertest.Run(t, ctx, chromedp.Text(chromedp.ID("overview"))); !strings.Contains(overview, "v0.9.0") || !strings.Contains(overview, "realtime windows are off") {
		t.Errorf("overview %q", overview)
	}
	if n := browsertest.Run(t, ctx, chromedp.Evaluate[int](`document.querySelectorAll('#rate-chart rect.bar-messages').length`)); n != 1 {
		t.Errorf("%d message bars, want 1", n)
	}
	if link := browsertest.Run(t, ctx, chromedp.Evaluate[string](`document.getElementById('chat-link').href`)); link != srv.URL+"/" {
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
	row := browsertest.Run(t, ctx, chromedp.Text(chromedp.CSS(`#stream .decision:first-child .row`)))
	for _, want := range []string{"onebot:main:group:100", "alice (42)", "has anyone seen the build?", "not triggered"} {
		if !strings.Contains(row, want) {
			t.Errorf("row %q lacks %q", row, want)
		}
	}
	if n := browsertest.Run(t, ctx, chromedp.Evaluate[int](`document.querySelectorAll('#stream .steps').length`)); n != 0 {
		t.Errorf("%d rows open before a click", n)
	}
	do(t, ctx, "open the row",
		chromedp.Click(chromedp.CSS(`#stream .decision:first-child .row .preview`)),
		chromedp.WaitVisible(chromedp.CSS(`#stream .decision:first-child .steps`)),
	)
	steps := browsertest.Run(t, ctx, chromedp.Text(chromedp.CSS(`#stream .decision:first-child .steps`)))
	for _, want := range []string{"receive", "kept in the group history (12 lines)", "trigger", "not triggered", "no @ of the bot; no keyword matched"} {
		if !strings.Contains(steps, want) {
			t.Errorf("steps %q lack %q", steps, want)
		}
	}
	browsertest.Screenshot(t, ctx, "dashboard-"+shown.lang+".png")

	// The chat link opens the chat's view.
	do(t, ctx, "open the chat",
		chromedp.Click(chromedp.CSS(`#stream .decision:first-child .row .chat`)),
		chromedp.Poll[chromedp.Void](`document.getElementById('chat-view').textContent.includes('claude-test')`),
	)
	view := browsertest.Run(t, ctx, chromedp.Text(chromedp.ID("chat-view")))
	for _, want := range []string{"onebot:main:group:100", shown.turns, "7", "anyone around?", shown.noWindow, "has anyone seen the build?"} {
		if !strings.Contains(view, want) {
			t.Errorf("chat view %q lacks %q", view, want)
		}
	}

	// On a phone the page fits the screen's width.
	do(t, ctx, "narrow the screen", chromedp.EmulateViewport(390, 844, chromedp.EmulateScale(2)))
	if over := browsertest.Run(t, ctx, chromedp.Evaluate[bool](`document.documentElement.scrollWidth > window.innerWidth`)); over {
		t.Error("the page is wider than a phone's screen")
	}
	browsertest.Screenshot(t, ctx, "dashboard-phone-"+shown.lang+".png")
}
