package main

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pincerbot/pincer/internal/channel/feishu/feishusim"
	"github.com/pincerbot/pincer/internal/llm/llmtest"
)

// TestServeFeishuCardSurvivesKill9: pincer is killed with SIGKILL while a
// reply streams into its card; the next start answers the message again
// and writes the reply into the same card, which it closes with the final
// text, rather than posting a second message.
func TestServeFeishuCardSurvivesKill9(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	const (
		key   = "an-encrypt-key"
		group = "oc_card000000000000000000000001"
		userA = "ou_card00000000000000000000000a"
	)
	sim, platform := feishuPlatform(t, key, group, map[string]string{userA: "张三"})
	model := llmtest.NewOpenAI(t)
	hold := make(chan struct{})
	defer close(hold)
	story := []string{"从前有座山，", "山里有座庙。"}
	model.Script(llmtest.Reply{Text: story, Hold: hold}, llmtest.Reply{Text: story})
	dir := t.TempDir()
	db := filepath.Join(dir, "pincer.db")
	cfg := feishuWebhookConfig(model.URL, platform, key, "streaming: 'card',", fmt.Sprintf("store: { path: '%s' },", db))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	wait := func(what string, p *proc, cond func() bool) {
		t.Helper()
		for !cond() {
			if ctx.Err() != nil {
				t.Fatalf("%s never happened\n%s", what, p.stderr)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	recorded := func(id string) bool {
		t.Helper()
		var n int
		return readStoreFile(t, db, `SELECT count(*) FROM sent WHERE message_id = ?`, []any{id}, &n) == nil && n == 1
	}

	first, _ := startServe(t, dir, cfg)
	ask := feishusim.Message{
		ID: "om_card_kill_ask", ChatID: group, SenderID: userA, Content: `{"text":"@_user_1 讲个故事"}`,
		Mentions: []feishusim.Mention{{Key: "@_user_1", ID: feishusim.DefaultBotOpenID, Name: feishusim.DefaultBotName}},
	}
	postFeishu(t, ctx, sim, first.url, ask)
	// The card shows the first piece while the model is held, and the
	// sent log has its message.
	wait("the card", first, func() bool {
		cards, sent := sim.Cards(), sim.Sent()
		return len(cards) == 1 && cards[0].Elements["reply"] == story[0] && len(sent) == 1 && recorded(sent[0].MessageID)
	})
	card := sim.Cards()[0].ID
	if err := first.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = first.cmd.Wait()

	second, _ := startServe(t, dir, cfg)
	defer func() {
		if err := second.stop(); err != nil {
			t.Errorf("exit: %v\n%s", err, second.stderr)
		}
	}()
	whole := strings.Join(story, "")
	wait("the card closed", second, func() bool {
		for _, c := range sim.Cards() {
			if c.ID == card && !c.Streaming {
				return true
			}
		}
		return false
	})
	c := sim.Cards()[0]
	if c.Elements["reply"] != whole {
		t.Errorf("the card shows %q, want %q", c.Elements["reply"], whole)
	}
	sent := sim.Sent()
	if len(sent) != 1 || !strings.Contains(sent[0].Content, card) {
		t.Errorf("sent %+v, want the first run's card message only", sent)
	}
	if n := len(model.Requests()); n != 2 {
		t.Errorf("%d model requests, want the cut one and the resumed one", n)
	}
}
