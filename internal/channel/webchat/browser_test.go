package webchat_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
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

// TestBrowserChat types a message into the page in a real browser and
// watches the streamed preview reply arrive, then reloads the page and finds
// the conversation again.
func TestBrowserChat(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a browser")
	}
	srv, _ := start(t)
	ctx := browser(t)
	const lastReplyDone = `(() => { const m = document.querySelectorAll('.msg.assistant'); return m.length > 0 && m[m.length-1].textContent.includes('=== End of preview ===') && !m[m.length-1].classList.contains('partial'); })()`
	err := chromedp.Do(ctx,
		chromedp.Navigate(srv.URL+"/"),
		chromedp.WaitVisible(chromedp.ID("input")),
		chromedp.SendKeys(chromedp.ID("input"), "hello from a browser"),
		chromedp.Click(chromedp.ID("send")),
		chromedp.Poll[chromedp.Void](lastReplyDone),
	)
	if err != nil {
		t.Fatal(err)
	}
	title := run(t, ctx, chromedp.Title())
	user := run(t, ctx, chromedp.Text(chromedp.CSS(".msg.user")))
	reply := run(t, ctx, chromedp.Text(chromedp.CSS(".msg.assistant")))
	if title != "pincer test" {
		t.Errorf("title %q", title)
	}
	if user != "hello from a browser" {
		t.Errorf("user bubble %q", user)
	}
	if !strings.Contains(reply, "[pincer preview]") || !strings.Contains(reply, "hello from a browser") {
		t.Errorf("reply bubble %q", reply)
	}

	if err := chromedp.Do(ctx, chromedp.Reload(), chromedp.Poll[chromedp.Void](`document.querySelectorAll('.msg').length === 2`)); err != nil {
		t.Fatal(err)
	}
	if restored := run(t, ctx, chromedp.Text(chromedp.CSS(".msg.user"))); restored != "hello from a browser" {
		t.Errorf("after reload the user bubble reads %q; the envelope must not show", restored)
	}
	if restored := run(t, ctx, chromedp.Text(chromedp.CSS(".msg.assistant"))); restored != reply {
		t.Errorf("after reload the reply reads %q, want %q", restored, reply)
	}
	if dir := os.Getenv("PINCER_SCREENSHOT_DIR"); dir != "" {
		if png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100)); err == nil {
			_ = os.WriteFile(filepath.Join(dir, "webchat.png"), png, 0o644)
		}
	}
}

func run[T any](t *testing.T, ctx context.Context, a chromedp.Action[T]) T {
	t.Helper()
	v, err := chromedp.Run(ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	return v
}
