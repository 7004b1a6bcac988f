package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pincerbot/pincer/internal/channel/onebot/onebottest"
	"github.com/pincerbot/pincer/internal/config"
	"github.com/pincerbot/pincer/internal/llm/llmtest"
	"github.com/pincerbot/pincer/internal/trace"
)

// gapPeer is a OneBot implementation that notes when each send arrived,
// which message it quoted and, once asked is set, what the model had
// just been asked.
type gapPeer struct {
	*onebottest.Peer
	self int64

	mu    sync.Mutex
	asked func() string
	sends []gapSend
	// sent is signalled after each send is noted.
	sent chan struct{}
}

type gapSend struct {
	at           time.Time
	quote, asked string
}

func newGapPeer(t *testing.T, self int64) *gapPeer {
	g := &gapPeer{self: self, sent: make(chan struct{}, 1)}
	g.Peer = onebottest.New(t, func(action string, params json.RawMessage) (any, int, string) {
		switch action {
		case "get_login_info":
			return map[string]any{"user_id": self, "nickname": "bot"}, 0, ""
		case "send_group_msg":
			var p struct {
				Message []struct {
					Type string         `json:"type"`
					Data map[string]any `json:"data"`
				} `json:"message"`
			}
			_ = json.Unmarshal(params, &p)
			s := gapSend{at: time.Now()}
			if len(p.Message) > 0 && p.Message[0].Type == "reply" {
				s.quote, _ = p.Message[0].Data["id"].(string)
			}
			g.mu.Lock()
			if g.asked != nil {
				// A chat's replies go one at a time, so the model's latest
				// request is the one this send answers.
				s.asked = g.asked()
			}
			g.sends = append(g.sends, s)
			n := len(g.sends)
			g.mu.Unlock()
			select {
			case g.sent <- struct{}{}:
			default: // one signal pending is enough: the waiter reads them all
			}
			return map[string]any{"message_id": 9000 + n}, 0, ""
		}
		return nil, 0, ""
	})
	return g
}

// ask pushes an @ of the bot from its own sender, so no two messages
// merge before they reach the agent.
func (g *gapPeer) ask(t *testing.T, ctx context.Context, id int64, text string) {
	t.Helper()
	ev := map[string]any{
		"time": time.Now().Unix(), "self_id": g.self, "post_type": "message", "message_type": "group",
		"message_id": id, "user_id": 20000 + id, "group_id": 700000001,
		"sender":  map[string]any{"user_id": 20000 + id, "nickname": "u" + strconv.FormatInt(id, 10)},
		"message": []any{seg("at", map[string]any{"qq": g.self}), seg("text", map[string]any{"text": " " + text})},
	}
	if err := g.Push(ctx, ev); err != nil {
		t.Fatal(err)
	}
}

// waitSends waits until the peer has received n sends and returns them.
func (g *gapPeer) waitSends(t *testing.T, ctx context.Context, n int) []gapSend {
	t.Helper()
	for {
		g.mu.Lock()
		got := append([]gapSend(nil), g.sends...)
		g.mu.Unlock()
		if len(got) >= n {
			return got
		}
		select {
		case <-g.sent:
		case <-ctx.Done():
			t.Fatalf("%d sends before the deadline, want %d", len(got), n)
		}
	}
}

// newlyAsked is what the model's latest request asks beyond what it
// answered before: the user messages after its last assistant message.
func newlyAsked(fake *llmtest.Server) string {
	reqs := fake.Requests()
	if len(reqs) == 0 {
		return ""
	}
	msgs, _ := reqs[len(reqs)-1].Body["messages"].([]any)
	var b strings.Builder
	for _, m := range msgs {
		switch m, _ := m.(map[string]any); m["role"] {
		case "assistant":
			b.Reset()
		case "user":
			b.WriteString(mustString(m["content"]) + "\n")
		}
	}
	return b.String()
}

var gapStep = regexp.MustCompile(`waited (\d+) ms for channels\.onebot\.accounts\.slow\.sendGapMs`)

// TestQQSendGapEndToEnd runs the whole gateway with two QQ accounts over
// real WebSockets: the default one with channels.onebot.sendGapMs 0
// answers two @s back to back, and says nothing about a gap; the named
// one with its own sendGapMs of 2000 sends each reply 2 s or more after
// the one before, and the message a reply answers says in its trace how
// long the reply waited and for which key. The @s that come while a
// reply is under way are answered together (messages.queue.mode collect),
// not each by a reply of its own: the replies of a group that asks faster
// than the gap do not pile up.
func TestQQSendGapEndToEnd(t *testing.T) {
	fast, slow := newGapPeer(t, botQQ), newGapPeer(t, botQQ+1)
	fake := llmtest.NewOpenAI(t)
	fake.Script(llmtest.Reply{Text: []string{"好的"}})
	doc := fmt.Sprintf(`{
	  models: { providers: { openai: { baseUrl: %q, apiKey: 'sk-test' } } },
	  agents: { defaults: { model: { primary: 'openai/gpt-4o-mini' } } },
	  messages: { queue: { mode: 'collect', debounceMs: 100 } },
	  channels: { onebot: {
	    wsUrl: %q, selfId: %d, sendGapMs: 0,
	    receive: { realtime: { enabled: false }, history: { enabled: false } },
	    accounts: { slow: { wsUrl: %q, selfId: %d, sendGapMs: 2000 } },
	  } },
	}`, fake.URL+"/v1", fast.URL, botQQ, slow.URL, botQQ+1)
	cfg, err := config.Parse([]byte(doc), func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	g := startGateway(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for _, p := range []*gapPeer{fast, slow} {
		if err := p.Connected(ctx); err != nil {
			t.Fatal(err)
		}
	}

	// sendGapMs 0: back to back, and no gap in the trace.
	fast.ask(t, ctx, 1, "一")
	fast.waitSends(t, ctx, 1)
	fast.ask(t, ctx, 2, "二")
	fast.waitSends(t, ctx, 2)
	rec := traceOf(t, ctx, g.url, "onebot:default:group:700000001", "2", "9002")
	for _, s := range rec.Steps {
		if strings.HasPrefix(s.Detail, "waited ") {
			t.Errorf("with sendGapMs 0 nothing waits, yet the trace says %q", s.Detail)
		}
	}

	// The named account's own 2000 ms, and three more @s right after the
	// first reply: they come while a reply holds the chat's turn or waits
	// for its gap, and are answered together rather than one by one.
	slow.mu.Lock()
	slow.asked = func() string { return newlyAsked(fake) }
	slow.mu.Unlock()
	slow.ask(t, ctx, 1, "一")
	slow.waitSends(t, ctx, 1)
	slow.ask(t, ctx, 2, "二")
	// 3 and 4 come once the model was asked about 2, so they cannot join
	// its turn: they wait while its reply holds the chat's turn.
	for !strings.Contains(newlyAsked(fake), "二") {
		select {
		case <-ctx.Done():
			t.Fatal("the model was never asked about 2")
		case <-time.After(5 * time.Millisecond):
		}
	}
	slow.ask(t, ctx, 3, "三")
	slow.ask(t, ctx, 4, "四")
	var sends []gapSend
	for n := 2; ; n++ {
		if sends = slow.waitSends(t, ctx, n); strings.Contains(sends[n-1].asked, "四") {
			break
		}
	}
	// The reply that answers 4 answers 3 with it, and quotes the one the
	// queue took last.
	last := sends[len(sends)-1]
	if !strings.Contains(last.asked, "三") {
		t.Errorf("the @s that came while a reply waited are answered in one turn; the model was asked:\n%s", last.asked)
	}
	if len(sends) > 3 {
		t.Errorf("%d replies to 4 @s that came faster than the gap; the ones that waited are answered together", len(sends))
	}
	for i := 1; i < len(sends); i++ {
		if d := sends[i].at.Sub(sends[i-1].at); d < 2*time.Second {
			t.Errorf("reply %d went %s after the one before; sendGapMs is 2000", i+1, d)
		}
	}
	together := last.quote
	rec = traceOf(t, ctx, g.url, "onebot:slow:group:700000001", together, "sendGapMs")
	var waited []string
	for _, s := range rec.Steps {
		if s.Stage == trace.StageDeliver && gapStep.MatchString(s.Detail) {
			waited = append(waited, s.Detail)
		}
	}
	if len(waited) != 1 {
		t.Fatalf("gap steps %q", waited)
	}
	if ms, _ := strconv.Atoi(gapStep.FindStringSubmatch(waited[0])[1]); ms <= 0 || ms > 2400 {
		t.Errorf("the trace says %q", waited[0])
	}
	// The chat's first reply took its turn at once: it waited for nothing.
	for _, s := range traceOf(t, ctx, g.url, "onebot:slow:group:700000001", "1", `"outcome":"sent"`).Steps {
		if strings.HasPrefix(s.Detail, "waited ") {
			t.Errorf("the first reply waited for nothing, yet the trace says %q", s.Detail)
		}
	}
}
