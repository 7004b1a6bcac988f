package webchat_test

import (
	"context"
	"net"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/pincerbot/pincer/internal/browsertest"

	"github.com/pincerbot/pincer/internal/msg"
	"github.com/pincerbot/pincer/internal/texts"
)

// TestBrowserChat types a message into the page in a real browser and
// watches the streamed preview reply arrive, then reloads the page and finds
// the conversation again.
func TestBrowserChat(t *testing.T) {
	srv, _ := start(t)
	ctx := browsertest.New(t)
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
	title := browsertest.Run(t, ctx, chromedp.Title())
	user := browsertest.Run(t, ctx, chromedp.Text(chromedp.CSS(".msg.user")))
	reply := browsertest.Run(t, ctx, chromedp.Text(chromedp.CSS(".msg.assistant")))
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
	if restored := browsertest.Run(t, ctx, chromedp.Text(chromedp.CSS(".msg.user"))); restored != "hello from a browser" {
		t.Errorf("after reload the user bubble reads %q; the envelope must not show", restored)
	}
	if restored := browsertest.Run(t, ctx, chromedp.Text(chromedp.CSS(".msg.assistant"))); restored != reply {
		t.Errorf("after reload the reply reads %q, want %q", restored, reply)
	}
	browsertest.Screenshot(t, ctx, "webchat.png")
}

// nonLoopbackIPv4 returns an IPv4 address of this machine other than
// loopback, skipping the test when there is none.
func nonLoopbackIPv4(t *testing.T) string {
	t.Helper()
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Skipf("cannot list this machine's addresses: %v", err)
	}
	for _, a := range addrs {
		ipn, ok := a.(*net.IPNet)
		if !ok {
			continue
		}
		if ip := ipn.IP.To4(); ip != nil && !ip.IsLoopback() && !ip.IsLinkLocalUnicast() && !ip.IsUnspecified() {
			return ip.String()
		}
	}
	t.Skip("this machine has no IPv4 address besides loopback, so the page cannot be opened as an insecure origin")
	return ""
}

// lastReply is a page expression: the text of the last reply bubble once
// it is complete (neither streaming nor stopped), else "".
const lastReply = `(() => { const m = document.querySelectorAll('.msg.assistant'); const b = m[m.length-1]; return b && !b.classList.contains('partial') && !b.classList.contains('stopped') ? b.textContent : ''; })()`

// TestBrowserPlainHTTPByIP opens the page the way a phone on the same
// network would, by IP address over plain HTTP, where the page is not a
// secure context: sending, streaming, the event stream and copying code
// all have to work without the APIs limited to secure contexts.
func TestBrowserPlainHTTPByIP(t *testing.T) {
	ip := nonLoopbackIPv4(t)
	e := startWith(t, setup{addr: net.JoinHostPort(ip, "0"), model: "fake/echo"})
	if !strings.HasPrefix(e.srv.URL, "http://"+ip+":") {
		t.Fatalf("server at %s, want %s", e.srv.URL, ip)
	}
	ctx := browsertest.New(t)
	if err := chromedp.Do(ctx, chromedp.Navigate(e.srv.URL+"/"), chromedp.WaitVisible(chromedp.ID("input"))); err != nil {
		t.Fatal(err)
	}
	if secure := browsertest.Run(t, ctx, chromedp.Evaluate[bool](`window.isSecureContext`)); secure {
		t.Fatalf("%s is a secure context; the test must open an insecure one", e.srv.URL)
	}
	t.Logf("opened %s: window.isSecureContext === false", e.srv.URL)
	err := chromedp.Do(ctx,
		chromedp.Poll[chromedp.Void](`!document.getElementById('welcome').hidden && document.getElementById('model').textContent === 'fake/echo'`),
		chromedp.SendKeys(chromedp.ID("input"), "hello over plain http"),
		chromedp.Click(chromedp.ID("send")),
		chromedp.Poll[chromedp.Void](lastReply+`.includes('=== End of preview ===')`),
	)
	if err != nil {
		t.Fatal(err)
	}
	reply := browsertest.Run(t, ctx, chromedp.Evaluate[string](lastReply))
	if !strings.Contains(reply, "hello over plain http") {
		t.Errorf("reply %q", reply)
	}
	if hidden := browsertest.Run(t, ctx, chromedp.Evaluate[bool](`document.getElementById('welcome').hidden`)); !hidden {
		t.Error("the welcome still shows under the conversation")
	}

	// Replies sent outside a turn arrive over the event stream.
	if err := chromedp.Do(ctx, chromedp.Poll[chromedp.Void](`document.body.dataset.events === 'open'`)); err != nil {
		t.Fatal(err)
	}
	if _, err := e.wc.Send(context.Background(), msg.Outbound{Peer: e.backend.lastPeer(), Text: "pushed over the **event stream**"}); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(ctx, chromedp.Poll[chromedp.Void](`[...document.querySelectorAll('.msg.assistant strong')].some((s) => s.textContent === 'event stream')`)); err != nil {
		t.Fatalf("the pushed reply did not arrive: %v", err)
	}

	// Copying code falls back to execCommand: there is no Clipboard API here.
	err = chromedp.Do(ctx,
		chromedp.SendKeys(chromedp.ID("input"), askMarkdown),
		chromedp.Click(chromedp.ID("send")),
		chromedp.Poll[chromedp.Void](lastReply+` && document.querySelector('.msg.assistant .code .copy') !== null`),
	)
	if err != nil {
		t.Fatal(err)
	}
	const spy = `window.copied = []; const exec = document.execCommand.bind(document);
document.execCommand = (cmd, ...rest) => { window.copied.push([cmd, document.activeElement.value]); return exec(cmd, ...rest); };
navigator.clipboard === undefined`
	if noClipboard := browsertest.Run(t, ctx, chromedp.Evaluate[bool](spy)); !noClipboard {
		t.Error("navigator.clipboard exists in an insecure context")
	}
	err = chromedp.Do(ctx,
		chromedp.Click(chromedp.CSS(".msg.assistant .code .copy")),
		chromedp.Poll[chromedp.Void](`document.querySelector('.msg.assistant .code .copy').textContent !== '复制'`),
	)
	if err != nil {
		t.Fatal(err)
	}
	if label := browsertest.Run(t, ctx, chromedp.Text(chromedp.CSS(".msg.assistant .code .copy"))); label != "已复制" {
		t.Errorf("copy button reads %q", label)
	}
	copied := browsertest.Run(t, ctx, chromedp.Evaluate[[][]string](`window.copied`))
	if want := [][]string{{"copy", "fmt.Println(\"<b>hi</b>\")\n"}}; !slices.EqualFunc(copied, want, slices.Equal) {
		t.Errorf("execCommand calls %q, want %q", copied, want)
	}
	browsertest.Screenshot(t, ctx, "webchat-plain-http.png")
}

// TestBrowserRendersMarkdownSafely shows a reply with a code block, a
// table and HTML that would run if it reached the page as HTML.
func TestBrowserRendersMarkdownSafely(t *testing.T) {
	srv, _ := start(t)
	ctx := browsertest.New(t)
	err := chromedp.Do(ctx,
		chromedp.Navigate(srv.URL+"/"),
		chromedp.WaitVisible(chromedp.ID("input")),
		chromedp.SendKeys(chromedp.ID("input"), askMarkdown),
		chromedp.Click(chromedp.ID("send")),
		chromedp.Poll[chromedp.Void](lastReply+` && document.querySelector('.msg.assistant table') !== null`),
	)
	if err != nil {
		t.Fatal(err)
	}
	const inspect = `(() => {
  const b = document.querySelector('.msg.assistant');
  return {
    code: [...b.querySelectorAll('pre > code')].map((c) => c.textContent),
    codeFont: getComputedStyle(b.querySelector('pre > code')).fontFamily,
    copyButtons: b.querySelectorAll('.code button.copy').length,
    cells: [...b.querySelectorAll('table td')].map((c) => c.textContent),
    links: [...b.querySelectorAll('a')].map((a) => a.getAttribute('href')),
    executable: document.querySelectorAll('#log script, #log img, #log iframe, #log [onerror]').length,
    pwned: String(window.pwned),
    shown: b.textContent,
  };
})()`
	type page struct {
		Code        []string `json:"code"`
		CodeFont    string   `json:"codeFont"`
		CopyButtons int      `json:"copyButtons"`
		Cells       []string `json:"cells"`
		Links       []string `json:"links"`
		Executable  int      `json:"executable"`
		Pwned       string   `json:"pwned"`
		Shown       string   `json:"shown"`
	}
	got := browsertest.Run(t, ctx, chromedp.Evaluate[page](inspect))
	// The HTML block shows as code, like any text the page should not run.
	if want := []string{"fmt.Println(\"<b>hi</b>\")\n", "<script>window.pwned = 'script'</script>\n"}; !slices.Equal(got.Code, want) {
		t.Errorf("code blocks %q, want %q", got.Code, want)
	}
	if !strings.Contains(got.CodeFont, "monospace") {
		t.Errorf("code font %q", got.CodeFont)
	}
	if got.CopyButtons != len(got.Code) {
		t.Errorf("%d copy buttons for %d code blocks", got.CopyButtons, len(got.Code))
	}
	if want := []string{"apple", "3", "pear", "10"}; !slices.Equal(got.Cells, want) {
		t.Errorf("table cells %q, want %q", got.Cells, want)
	}
	if want := []string{"https://example.com"}; !slices.Equal(got.Links, want) {
		t.Errorf("links %q, want only %q", got.Links, want)
	}
	if got.Executable != 0 || got.Pwned != "undefined" {
		t.Errorf("HTML from the reply reached the page: %d script/img elements, window.pwned = %s", got.Executable, got.Pwned)
	}
	if !strings.Contains(got.Shown, `<img src=x onerror="window.pwned = 'img'">`) || !strings.Contains(got.Shown, "a trap") {
		t.Errorf("the HTML should show as text:\n%s", got.Shown)
	}
	browsertest.Screenshot(t, ctx, "webchat-markdown.png")

	// On a phone-sized screen nothing is wider than the screen: the code
	// block and the table scroll inside the bubble.
	err = chromedp.Do(ctx, chromedp.EmulateViewport(390, 844, chromedp.EmulatePortrait, chromedp.EmulateMobile, chromedp.EmulateTouch))
	if err != nil {
		t.Fatal(err)
	}
	if overflow := browsertest.Run(t, ctx, chromedp.Evaluate[bool](`document.documentElement.scrollWidth > window.innerWidth`)); overflow {
		t.Error("the page is wider than a phone screen")
	}
	browsertest.Screenshot(t, ctx, "webchat-phone.png")
}

// TestBrowserStopCancelsStreamingReply stops a reply that would otherwise
// never end.
func TestBrowserStopCancelsStreamingReply(t *testing.T) {
	srv, _ := start(t)
	ctx := browsertest.New(t)
	const streaming = `(() => { const b = document.querySelector('.msg.assistant'); return b !== null && b.classList.contains('partial') && b.textContent.includes('Counting slowly: 1') && !document.getElementById('stop').hidden && document.getElementById('send').hidden; })()`
	err := chromedp.Do(ctx,
		chromedp.Navigate(srv.URL+"/"),
		chromedp.WaitVisible(chromedp.ID("input")),
		chromedp.SendKeys(chromedp.ID("input"), askForever),
		chromedp.Click(chromedp.ID("send")),
		chromedp.Poll[chromedp.Void](streaming),
	)
	if err != nil {
		t.Fatal(err)
	}
	browsertest.Screenshot(t, ctx, "webchat-streaming.png")
	// The fake model ends its reply only when the turn is cancelled (or
	// the test is over), so the reply ending here is the stop working.
	err = chromedp.Do(ctx,
		chromedp.Click(chromedp.ID("stop")),
		chromedp.Poll[chromedp.Void](`(() => { const b = document.querySelector('.msg.assistant'); return b.classList.contains('stopped') && !b.classList.contains('partial') && document.getElementById('stop').hidden && !document.getElementById('send').hidden; })()`),
	)
	if err != nil {
		t.Fatalf("the reply was not stopped: %v", err)
	}
	if n := browsertest.Run(t, ctx, chromedp.Evaluate[int](`document.querySelectorAll('.msg').length`)); n != 2 {
		t.Errorf("%d bubbles after stopping, want the message and the cut reply", n)
	}
	if mark := browsertest.Run(t, ctx, chromedp.Evaluate[string](`getComputedStyle(document.querySelector('.msg.assistant.stopped'), '::after').content`)); !strings.Contains(mark, "已停止") {
		t.Errorf("the cut reply is marked %s, want the default locale's 已停止", mark)
	}
	browsertest.Screenshot(t, ctx, "webchat-stopped.png")

	// The chat goes on.
	err = chromedp.Do(ctx,
		chromedp.SendKeys(chromedp.ID("input"), "after the stop"),
		chromedp.Click(chromedp.ID("send")),
		chromedp.Poll[chromedp.Void](lastReply+`.includes('after the stop')`),
	)
	if err != nil {
		t.Fatal(err)
	}
}

// TestBrowserNewChat starts over with the New chat button; the engine's
// answer shows in the page's (default) locale.
func TestBrowserNewChat(t *testing.T) {
	srv, _ := start(t)
	ctx := browsertest.New(t)
	const cleared = `document.querySelectorAll('.msg').length === 0 && !document.getElementById('welcome').hidden && document.querySelector('.note') !== null && document.querySelector('.note').textContent.startsWith('已开始新会话')`
	err := chromedp.Do(ctx,
		chromedp.Navigate(srv.URL+"/"),
		chromedp.WaitVisible(chromedp.ID("input")),
		chromedp.SendKeys(chromedp.ID("input"), "remember me"),
		chromedp.Click(chromedp.ID("send")),
		chromedp.Poll[chromedp.Void](lastReply+`.includes('remember me')`),
		chromedp.Click(chromedp.ID("new")),
		chromedp.Poll[chromedp.Void](cleared),
	)
	if err != nil {
		t.Fatal(err)
	}
	browsertest.Screenshot(t, ctx, "webchat-new-chat.png")
	// The server started over too: a reload finds nothing to show.
	err = chromedp.Do(ctx, chromedp.Reload(), chromedp.WaitVisible(chromedp.ID("welcome")))
	if err != nil {
		t.Fatal(err)
	}
	if n := browsertest.Run(t, ctx, chromedp.Evaluate[int](`document.querySelectorAll('.msg').length`)); n != 0 {
		t.Errorf("%d bubbles after a reload of the new chat", n)
	}
}

// TestBrowserSpeaksTheLocale reads the page in a real browser, Chinese by
// default and English with the English locale: its static texts, the
// texts its script shows (the status while a reply is written, a code
// block's copy button) and a command's answer.
func TestBrowserSpeaksTheLocale(t *testing.T) {
	type shown struct {
		Lang    string `json:"lang"`
		Hello   string `json:"hello"`
		Send    string `json:"send"`
		NewChat string `json:"newChat"`
		Input   string `json:"input"`
		Copy    string `json:"copy"`
		Status  string `json:"status"`
	}
	const read = `(() => ({
  lang: document.documentElement.lang,
  hello: document.querySelector('#welcome h2').textContent,
  send: document.getElementById('send').textContent,
  newChat: document.getElementById('new').textContent,
  input: document.getElementById('input').placeholder,
  copy: document.querySelector('.msg.assistant .code .copy').textContent,
  status: window.seenStatus || '',
}))()`
	// seenStatus keeps the first status the page showed, since the one
	// shown while a reply is written is gone once it is done.
	const watchStatus = `new MutationObserver(() => { const s = document.getElementById('status').textContent; if (s && !window.seenStatus) window.seenStatus = s; }).observe(document.getElementById('status'), {childList: true, characterData: true, subtree: true})`
	tests := []struct {
		locale texts.Locale
		want   shown
		stop   string
	}{
		{"", shown{Lang: "zh-CN", Hello: "你好，这里是 pincer test。", Send: "发送", NewChat: "新对话", Input: "输入消息…", Copy: "复制", Status: "正在回复…"}, "当前没有正在生成的回复。"},
		{texts.EN, shown{Lang: "en", Hello: "Hi, this is pincer test.", Send: "Send", NewChat: "New chat", Input: "Message…", Copy: "Copy", Status: "writing…"}, "Nothing is running."},
	}
	for _, tt := range tests {
		t.Run(tt.want.Lang, func(t *testing.T) {
			e := startWith(t, setup{locale: tt.locale})
			ctx := browsertest.New(t)
			err := chromedp.Do(ctx,
				chromedp.Navigate(e.srv.URL+"/"),
				chromedp.WaitVisible(chromedp.ID("welcome")),
				chromedp.Evaluate[chromedp.Void](watchStatus),
			)
			if err != nil {
				t.Fatal(err)
			}
			hello := browsertest.Run(t, ctx, chromedp.Text(chromedp.CSS("#welcome h2")))
			err = chromedp.Do(ctx,
				chromedp.SendKeys(chromedp.ID("input"), askMarkdown),
				chromedp.Click(chromedp.ID("send")),
				chromedp.Poll[chromedp.Void](lastReply+` && document.querySelector('.msg.assistant .code .copy') !== null`),
			)
			if err != nil {
				t.Fatal(err)
			}
			got := browsertest.Run(t, ctx, chromedp.Evaluate[shown](read))
			got.Hello = hello
			if got != tt.want {
				t.Errorf("the page shows %+v, want %+v", got, tt.want)
			}
			err = chromedp.Do(ctx,
				chromedp.SendKeys(chromedp.ID("input"), "/stop"),
				chromedp.Click(chromedp.ID("send")),
				chromedp.Poll[chromedp.Void](lastReply+`.trim() === `+strconv.Quote(tt.stop)),
			)
			if err != nil {
				t.Errorf("/stop did not answer %q: %v", tt.stop, err)
			}
			browsertest.Screenshot(t, ctx, "webchat-"+tt.want.Lang+".png")
		})
	}
}

// TestBrowserSaysNoModelBeforeTheFirstMessage: a page no model answers
// says so in its welcome as it opens, before anything is sent; a page a
// model answers does not.
func TestBrowserSaysNoModelBeforeTheFirstMessage(t *testing.T) {
	for _, preview := range []bool{true, false} {
		e := startWith(t, setup{preview: preview, model: map[bool]string{false: "fake/echo"}[preview]})
		ctx := browsertest.New(t)
		if err := chromedp.Do(ctx, chromedp.Navigate(e.srv.URL+"/"), chromedp.WaitVisible(chromedp.ID("welcome"))); err != nil {
			t.Fatal(err)
		}
		if preview {
			if err := chromedp.Do(ctx, chromedp.Poll[chromedp.Void](`!document.getElementById('no-model').hidden`)); err != nil {
				t.Fatalf("the no-model notice never showed: %v", err)
			}
			if text := browsertest.Run(t, ctx, chromedp.Text(chromedp.ID("no-model"))); !strings.Contains(text, "还没有配置模型") {
				t.Errorf("no-model notice %q", text)
			}
			continue
		}
		// The model's name shows once the session is read; the notice
		// stays hidden.
		if err := chromedp.Do(ctx, chromedp.Poll[chromedp.Void](`document.getElementById('model').textContent === 'fake/echo'`)); err != nil {
			t.Fatal(err)
		}
		if hidden := browsertest.Run(t, ctx, chromedp.Evaluate[bool](`document.getElementById('no-model').hidden`)); !hidden {
			t.Error("a page a model answers says no model is configured")
		}
	}
}
