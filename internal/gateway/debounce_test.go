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

// TestWebchatDebounceMergesABurstAndCommandsNeverWait: with
// messages.inbound.debounceMs, the web chat's burst is held and answered
// as one turn; a command (/summary, which its pipeline answers, as much as
// /status) never waits for the window: the burst held before it is
// answered first, on its own, and the command right after.
func TestWebchatDebounceMergesABurstAndCommandsNeverWait(t *testing.T) {
	fake := llmtest.NewOpenAI(t)
	fake.Script(llmtest.Reply{Text: []string{"merged answer"}}, llmtest.Reply{Text: []string{"the summary"}})
	cfg := withOpenAI(fake.URL)
	cfg.Messages.Inbound.DebounceMs = 60000 // held until something lets it go
	cfg.UI.Locale = "en"                    // the merged messages' notice is read below
	g := startGateway(t, cfg)
	c := webchattest.New(g.url)
	if _, err := c.Session(); err != nil { // the browser cookie
		t.Fatal(err)
	}
	type result struct {
		events []webchattest.Event
		err    error
	}
	burst := []string{"明天几点开会？", "在哪个会议室？"}
	held := make([]chan result, len(burst))
	for i, text := range burst {
		// The reply stream opens once the message is handed in, so each
		// of the burst is held before the next is sent.
		res, _, err := c.Post(text, "")
		if err != nil {
			t.Fatal(err)
		}
		held[i] = make(chan result, 1)
		go func() {
			events, err := webchattest.Events(res)
			held[i] <- result{events, err}
		}()
	}
	summary := make(chan result, 1)
	go func() {
		res, _, err := c.Post("/summary", "")
		if err != nil {
			summary <- result{err: err}
			return
		}
		events, err := webchattest.Events(res)
		summary <- result{events, err}
	}()
	var got result
	select {
	case got = <-summary:
	case <-time.After(20 * time.Second):
		t.Fatal("/summary waited for the debounce window")
	}
	if got.err != nil {
		t.Fatal(got.err)
	}
	if reply := webchattest.Text(got.events, webchat.EventReply); reply != "the summary" {
		t.Errorf("/summary answered %q (events %+v)", reply, got.events)
	}
	var replies, merged int
	for _, h := range held {
		r := <-h
		if r.err != nil {
			t.Fatal(r.err)
		}
		switch {
		case webchattest.Text(r.events, webchat.EventReply) == "merged answer":
			replies++
		case len(r.events) == 1 && r.events[0].Name == webchat.EventFail && strings.Contains(r.events[0].Data["error"].(string), "together"):
			merged++
		default:
			t.Errorf("a message of the burst ended with %+v", r.events)
		}
	}
	if replies != 1 || merged != 1 {
		t.Errorf("%d replies and %d merged; want the burst answered once", replies, merged)
	}
	reqs := fake.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d model requests; want the burst's turn and the summary", len(reqs))
	}
	turn := userMessages(reqs[0])
	if last := turn[len(turn)-1]; !strings.HasSuffix(last, burst[0]+"\n"+burst[1]) {
		t.Errorf("the burst did not reach the model as one message: %q", last)
	}
	sum := userMessages(reqs[1])
	if last := sum[len(sum)-1]; !strings.Contains(last, config.DefaultSummaryPrompt) || !strings.Contains(last, burst[0]) || strings.Contains(last, "/summary") {
		t.Errorf("the summary turn, after the burst was answered, reads %q", last)
	}
}
