package gateway

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/pincerbot/pincer/internal/channel/feishu/feishusim"
	"github.com/pincerbot/pincer/internal/config"
	"github.com/pincerbot/pincer/internal/llm/llmtest"
)

// newCardRig is a larkRig whose replies come from model and are written
// live into cards.
func newCardRig(t *testing.T, model *llmtest.Server, edit func(*config.Config)) *larkRig {
	t.Helper()
	return newLarkRig(t, func(cfg *config.Config) {
		cfg.Models.Providers["openai"] = config.Provider{BaseURL: model.URL + "/v1", APIKey: "sk-test"}
		cfg.Agents.Defaults.Model.Primary = "openai/gpt-4o-mini"
		cfg.Channels.Feishu.Streaming = config.FeishuStreamingCard
		if edit != nil {
			edit(cfg)
		}
	})
}

// cardText is what a card's one text element shows.
func cardText(c feishusim.Card) string {
	for _, text := range c.Elements {
		return text
	}
	return ""
}

// waitCard waits until the platform holds n cards and the last one is
// as ok wants it, and returns it.
func (r *larkRig) waitCard(t *testing.T, ctx context.Context, n int, ok func(feishusim.Card) bool) feishusim.Card {
	t.Helper()
	for {
		cards := r.sim.Cards()
		if len(cards) == n && ok(cards[n-1]) {
			return cards[n-1]
		}
		select {
		case <-ctx.Done():
			t.Fatalf("cards %+v never became as wanted", cards)
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// waitTurnOver waits until the typing reaction on the message id is
// removed: its turn is over, its reply (if any) delivered.
func (r *larkRig) waitTurnOver(t *testing.T, ctx context.Context, id string) {
	t.Helper()
	for {
		for _, rs := range r.sim.Reactions() {
			if rs.MessageID == id && rs.Removed {
				return
			}
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the turn of %s never ended", id)
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// cardShown is everything the cards ever showed: their JSON as created
// and each text update.
func cardShown(r *larkRig) []string {
	var out []string
	for _, c := range r.sim.Cards() {
		out = append(out, c.Data)
		for _, u := range c.Updates {
			out = append(out, u.Content)
		}
	}
	return out
}

// TestFeishuStreamingCardEndToEnd: a reply the model streams is written
// live into one card, which shows the text so far while the model is
// still writing, is updated fewer times than the model sent pieces, and
// is closed with the final text; the card is the one message posted.
func TestFeishuStreamingCardEndToEnd(t *testing.T) {
	model := llmtest.NewOpenAI(t)
	pieces := make([]string, 40)
	for i := range pieces {
		pieces[i] = fmt.Sprintf("第%d句。", i+1)
	}
	hold := make(chan struct{})
	model.Script(llmtest.Reply{Text: pieces, Hold: hold, HoldAfter: 20})
	r := newCardRig(t, model, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ask := askBot("om_stream_ask", "写四十句话")
	r.post(t, ctx, ask, feishusim.EventOptions{})

	half := strings.Join(pieces[:20], "")
	// The card entity is created first, then the message that shows it.
	c := r.waitCard(t, ctx, 1, func(c feishusim.Card) bool { return cardText(c) == half && len(r.sim.Sent()) > 0 })
	sent := r.sim.Sent()
	if !c.Streaming || len(sent) != 1 || sent[0].MsgType != "interactive" || !strings.Contains(sent[0].Content, c.ID) || sent[0].ReplyTo != ask.ID {
		t.Fatalf("while the model writes: card %+v, sent %+v; want one reply showing the streaming card", c, sent)
	}

	close(hold)
	whole := strings.Join(pieces, "")
	c = r.waitCard(t, ctx, 1, func(c feishusim.Card) bool { return !c.Streaming })
	if cardText(c) != whole || len(c.Updates) == 0 || c.Updates[len(c.Updates)-1].Content != whole {
		t.Errorf("the closed card shows %q, want %q", cardText(c), whole)
	}
	if len(c.Updates) >= len(pieces) {
		t.Errorf("%d updates for %d pieces: not batched", len(c.Updates), len(pieces))
	}
	if len(c.Settings) != 1 || c.Settings[0].Streaming {
		t.Errorf("settings %+v, want streaming closed once", c.Settings)
	}
	r.waitTurnOver(t, ctx, ask.ID)
	if n := len(r.sim.Sent()); n != 1 {
		t.Errorf("%d messages posted, want the card's only", n)
	}
}

// TestFeishuRefusedCardKitSendsMessages: an app without CardKit answers
// with whole messages, and asks for a card once only.
func TestFeishuRefusedCardKitSendsMessages(t *testing.T) {
	model := llmtest.NewOpenAI(t)
	hold := make(chan struct{})
	model.Script(llmtest.Reply{Text: []string{"你", "好", "呀"}, Hold: hold}, llmtest.Reply{Text: []string{"再", "见"}})
	r := newCardRig(t, model, nil)
	r.sim.RefuseCardKit(true)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	r.post(t, ctx, askBot("om_refused_1", "打个招呼"), feishusim.EventOptions{})
	for len(r.sim.Calls(feishusim.PathCards)) == 0 {
		select {
		case <-ctx.Done():
			t.Fatal("no card asked for")
		case <-time.After(10 * time.Millisecond):
		}
	}
	close(hold)
	r.waitTurnOver(t, ctx, "om_refused_1")
	r.post(t, ctx, askBot("om_refused_2", "道个别"), feishusim.EventOptions{})
	r.waitTurnOver(t, ctx, "om_refused_2")
	sent := r.sim.Sent()
	if len(sent) != 2 || sent[0].MsgType != "text" || larkText(t, sent[0]) != "你好呀" || larkText(t, sent[1]) != "再见" {
		t.Errorf("sent %+v, want two whole text replies", sent)
	}
	if n := len(r.sim.Calls(feishusim.PathCards)); n != 1 {
		t.Errorf("%d cards asked for, want 1 (the refused one)", n)
	}
	if len(r.sim.Cards()) != 0 {
		t.Errorf("cards %+v", r.sim.Cards())
	}
}

// TestFeishuStreamingOffSendsMessages: streaming 'off' posts the reply
// whole, as a message, and never asks for a card.
func TestFeishuStreamingOffSendsMessages(t *testing.T) {
	model := llmtest.NewOpenAI(t)
	model.Script(llmtest.Reply{Text: []string{"一", "二", "三"}})
	r := newCardRig(t, model, func(cfg *config.Config) { cfg.Channels.Feishu.Streaming = config.FeishuStreamingOff })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r.post(t, ctx, askBot("om_off_1", "数数"), feishusim.EventOptions{})
	r.waitTurnOver(t, ctx, "om_off_1")
	if sent := r.sim.Sent(); len(sent) != 1 || sent[0].MsgType != "text" || larkText(t, sent[0]) != "一二三" {
		t.Errorf("sent %+v", sent)
	}
	if n := len(r.sim.Calls(feishusim.PathCards)); n != 0 {
		t.Errorf("%d cards asked for with streaming off", n)
	}
}

// TestFeishuCardsNeverShowReasoningOrTheSilentToken: reasoning (deltas of
// its own, or <think> in the text) never reaches a card; a reply that is
// the silent token makes no card and posts nothing; one that ends with it
// never shows a piece of it.
func TestFeishuCardsNeverShowReasoningOrTheSilentToken(t *testing.T) {
	model := llmtest.NewOpenAI(t)
	thinking, tail := make(chan struct{}), make(chan struct{})
	model.Script(
		llmtest.Reply{Reasoning: []string{"先想一想：", "秘密推理"}, Text: []string{"<think>内心", "独白</think>", "这是", "答案"}, Hold: thinking, HoldAfter: 3},
		llmtest.Reply{Text: []string{"NO_", "REP", "LY"}},
		llmtest.Reply{Text: []string{"收到", "。N", "O_RE", "PLY"}, Hold: tail, HoldAfter: 2},
	)
	r := newCardRig(t, model, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	r.post(t, ctx, askBot("om_think", "想好了再答"), feishusim.EventOptions{})
	r.waitCard(t, ctx, 1, func(c feishusim.Card) bool { return cardText(c) == "这是" })
	close(thinking)
	r.waitTurnOver(t, ctx, "om_think")
	c := r.waitCard(t, ctx, 1, func(c feishusim.Card) bool { return !c.Streaming })
	if cardText(c) != "这是答案" {
		t.Errorf("the card shows %q", cardText(c))
	}

	r.post(t, ctx, askBot("om_silent", "不用回"), feishusim.EventOptions{})
	r.waitTurnOver(t, ctx, "om_silent")
	if n, m := len(r.sim.Cards()), len(r.sim.Sent()); n != 1 || m != 1 {
		t.Errorf("after a silent reply: %d cards, %d messages; want the first reply's only", n, m)
	}

	r.post(t, ctx, askBot("om_tail", "收到请回复"), feishusim.EventOptions{})
	// The model stopped after "收到。N": the card shows what is known not
	// to be the token.
	r.waitCard(t, ctx, 2, func(c feishusim.Card) bool { return cardText(c) == "收到。" })
	close(tail)
	r.waitTurnOver(t, ctx, "om_tail")
	c = r.waitCard(t, ctx, 2, func(c feishusim.Card) bool { return !c.Streaming })
	if cardText(c) != "收到。" {
		t.Errorf("the card shows %q, want 收到。", cardText(c))
	}

	for _, shown := range cardShown(r) {
		for _, secret := range []string{"先想", "秘密", "内心", "独白", "think", "NO", "N\"", "REPLY"} {
			if strings.Contains(shown, secret) {
				t.Errorf("a card showed %q: %q", secret, shown)
			}
		}
	}
	if n := len(r.sim.Sent()); n != 2 {
		t.Errorf("%d messages posted, want 2 cards", n)
	}
}

// TestFeishuCardFinishedAfterARestart: a reply stored in the outbox whose
// card the platform would not close is finished by the next run: the same
// card is closed with the stored text and no second message is posted.
func TestFeishuCardFinishedAfterARestart(t *testing.T) {
	model := llmtest.NewOpenAI(t)
	hold := make(chan struct{})
	model.Script(llmtest.Reply{Text: []string{"从前有座山，", "山里有座庙。"}, Hold: hold})
	r := newCardRig(t, model, func(cfg *config.Config) { cfg.Gateway.ShutdownTimeoutMs = 1000 })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r.post(t, ctx, askBot("om_story", "讲个故事"), feishusim.EventOptions{})
	c := r.waitCard(t, ctx, 1, func(c feishusim.Card) bool { return cardText(c) == "从前有座山，" })
	// The platform fails every close of its streaming until the restart.
	settings := feishusim.PathCards + "/" + c.ID + "/settings"
	for range 1000 {
		r.sim.QueueFault("PATCH "+settings, feishusim.Fault{Code: feishusim.CodeInternalError, Status: http.StatusInternalServerError})
	}
	close(hold)
	r.waitTurnOver(t, ctx, "om_story")
	for len(r.sim.Calls(settings)) == 0 {
		select {
		case <-ctx.Done():
			t.Fatal("the card was never closed")
		case <-time.After(10 * time.Millisecond):
		}
	}
	if c := r.sim.Cards()[0]; !c.Streaming {
		t.Fatalf("the card closed before the restart: %+v", c)
	}

	r.restart(t)
	r.sim.ClearFaults()
	c = r.waitCard(t, ctx, 1, func(c feishusim.Card) bool { return !c.Streaming })
	if cardText(c) != "从前有座山，山里有座庙。" || len(c.Settings) != 1 {
		t.Errorf("card after the restart: %+v", c)
	}
	if sent := r.sim.Sent(); len(sent) != 1 || !strings.Contains(sent[0].Content, c.ID) {
		t.Errorf("sent %+v, want the card's message only", sent)
	}
}

// TestFeishuCardOfAFailedTurnIsRecalled: a turn that fails in a group
// after its card showed some text posts nothing, so the card, which would
// show a cut reply as if it were the answer, is recalled.
func TestFeishuCardOfAFailedTurnIsRecalled(t *testing.T) {
	model := llmtest.NewOpenAI(t)
	hold := make(chan struct{})
	model.Script(llmtest.Reply{Text: []string{"写到一半，", "还有"}, Hold: hold, StreamError: "server_error"})
	r := newCardRig(t, model, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r.post(t, ctx, askBot("om_fails", "写篇长文"), feishusim.EventOptions{})
	r.waitCard(t, ctx, 1, func(c feishusim.Card) bool { return cardText(c) == "写到一半，" })
	close(hold)
	r.waitTurnOver(t, ctx, "om_fails")
	sent := r.sim.Sent()
	if len(sent) != 1 {
		t.Fatalf("sent %+v, want the card's message only", sent)
	}
	if m, _ := r.sim.Message(sent[0].MessageID); !m.Deleted {
		t.Error("the card of the failed turn still shows its cut text")
	}
}
