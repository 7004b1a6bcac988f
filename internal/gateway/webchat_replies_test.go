package gateway

import (
	"strings"
	"testing"
	"time"

	"github.com/pincerbot/pincer/internal/channel/webchat"
	"github.com/pincerbot/pincer/internal/channel/webchat/webchattest"
	"github.com/pincerbot/pincer/internal/config"
	"github.com/pincerbot/pincer/internal/llm/llmtest"
)

// TestWebchatSilentReplyShowsNothing: a model that answers NO_REPLY shows
// nothing in the web chat, live or whole, and the conversation view has
// no such reply; a trailing token is stripped from what is shown and kept.
func TestWebchatSilentReplyShowsNothing(t *testing.T) {
	fake := llmtest.NewOpenAI(t)
	fake.Script(llmtest.Reply{Text: []string{"NO", "_RE", "PLY"}}, llmtest.Reply{Text: []string{"Sure", "! NO_", "REPLY"}})
	g := startGateway(t, withOpenAI(fake.URL))
	c := webchattest.New(g.url)
	for i, want := range []string{"", "Sure!"} {
		res, _, err := c.Post([]string{"hi", "again"}[i], "")
		if err != nil {
			t.Fatal(err)
		}
		events, err := webchattest.Events(res)
		if err != nil {
			t.Fatal(err)
		}
		if got := webchattest.Text(events, webchat.EventDelta); got != want {
			t.Errorf("streamed %q, want %q", got, want)
		}
		if got := webchattest.Text(events, webchat.EventReply); got != want {
			t.Errorf("reply %q, want %q", got, want)
		}
	}
	s, err := c.Session()
	if err != nil {
		t.Fatal(err)
	}
	var shown []string
	for _, turn := range s["transcript"].([]any) {
		tm := turn.(map[string]any)
		shown = append(shown, tm["role"].(string)+": "+tm["text"].(string))
	}
	got := strings.Join(shown, "\n")
	if strings.Contains(strings.ToUpper(got), "NO_REPLY") || !strings.HasSuffix(got, "assistant: Sure!") {
		t.Errorf("the conversation shows:\n%s", got)
	}
}

// TestWebchatStopCancelsAHeldMessage: with bursts merged, stop sent while
// the debouncer holds a message takes effect at once: the held message is
// never answered and the model is never asked.
func TestWebchatStopCancelsAHeldMessage(t *testing.T) {
	fake := llmtest.NewOpenAI(t)
	cfg := withOpenAI(fake.URL)
	cfg.Messages.Inbound.DebounceMs = 60000
	english(&cfg) // the answers are read below
	g := startGateway(t, cfg)
	c := webchattest.New(g.url)
	if _, err := c.Session(); err != nil { // the browser cookie
		t.Fatal(err)
	}
	held := make(chan []webchattest.Event, 1)
	go func() {
		res, _, err := c.Post("tell me a long story", "")
		if err != nil {
			held <- nil
			return
		}
		events, _ := webchattest.Events(res)
		held <- events
	}()
	time.Sleep(200 * time.Millisecond) // the story is held
	start := time.Now()
	res, _, err := c.Post("stop", "")
	if err != nil {
		t.Fatal(err)
	}
	events, err := webchattest.Events(res)
	if err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("stop took %v", took)
	}
	if got := webchattest.Text(events, webchat.EventReply); got != "Nothing is running." {
		t.Errorf("stop answered %q", got)
	}
	story := <-held
	if len(story) != 1 || story[0].Name != webchat.EventFail || !strings.Contains(story[0].Data["error"].(string), "stopped") {
		t.Errorf("the held message ended with %+v", story)
	}
	if n := len(fake.Requests()); n != 0 {
		t.Errorf("the model was asked %d times", n)
	}
}

// TestWebchatSilentProviderFallsBack: a provider that accepts the request
// and sends nothing is given up after the first-token timeout; the
// fallback answers, well within a minute.
func TestWebchatSilentProviderFallsBack(t *testing.T) {
	stalled := llmtest.NewOpenAI(t)
	stalled.Script(llmtest.Reply{Stall: true})
	backup := llmtest.NewOpenAI(t)
	backup.Script(llmtest.Reply{Text: []string{"from the backup"}})
	cfg := withOpenAI(stalled.URL)
	cfg.Models.Providers["backup"] = config.Provider{BaseURL: backup.URL + "/v1"}
	cfg.Agents.Defaults.Model.Fallbacks = []string{"backup/m"}
	cfg.Agents.Defaults.FirstTokenTimeoutMs = 1000
	g := startGateway(t, cfg)
	start := time.Now()
	res, _, err := webchattest.New(g.url).Post("hello?", "")
	if err != nil {
		t.Fatal(err)
	}
	events, err := webchattest.Events(res)
	if err != nil {
		t.Fatal(err)
	}
	if got := webchattest.Text(events, webchat.EventReply); got != "from the backup" {
		t.Errorf("reply %q", got)
	}
	if took := time.Since(start); took < time.Second || took > 10*time.Second {
		t.Errorf("answered after %v; want the 1s first-token timeout, then the backup", took)
	}
	if n := len(stalled.Requests()); n != 1 {
		t.Errorf("the silent provider was asked %d times; a hang is not retried", n)
	}
}
