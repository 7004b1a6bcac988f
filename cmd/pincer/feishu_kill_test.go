package main

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pincerbot/pincer/internal/channel/feishu/feishusim"
	"github.com/pincerbot/pincer/internal/llm/llmtest"
)

// TestServeFeishuPendingForwardSurvivesKill9: a merged forward nobody @s
// is logged pending while Feishu is slow to expand it; pincer is killed
// with SIGKILL meanwhile, and the next start expands it again before the
// next @, whose model request reads it as the excerpt.
func TestServeFeishuPendingForwardSurvivesKill9(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	const (
		key   = "an-encrypt-key"
		group = "oc_kill000000000000000000000001"
		userA = "ou_kill00000000000000000000000a"
		userB = "ou_kill00000000000000000000000b"
	)
	sim, platform := feishuPlatform(t, key, group, map[string]string{userA: "张三", userB: "李四"})
	model := llmtest.NewOpenAI(t)
	model.Script(llmtest.Reply{Text: []string{"数据库连接数满了，已经在处理。"}})
	dir := t.TempDir()
	db := filepath.Join(dir, "pincer.db")
	cfg := feishuWebhookConfig(model.URL, platform, key, "", fmt.Sprintf("store: { path: '%s' },", db))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	post := func(p *proc, m feishusim.Message) {
		t.Helper()
		postFeishu(t, ctx, sim, p.url, m)
	}
	pending := func() (found, pending bool) {
		t.Helper()
		err := readStoreFile(t, db, `SELECT enrich_pending FROM messages WHERE message_id = 'om_kill_fwd'`, nil, &pending)
		return err == nil, pending
	}

	release := sim.Hold("/open-apis/im/v1/messages/om_kill_fwd")
	defer release()
	first, _ := startServe(t, dir, cfg)
	post(first, feishusim.Message{
		ID: "om_kill_fwd", ChatID: group, MsgType: "merge_forward", SenderID: userA,
		Children: []feishusim.Message{{ID: "om_kill_c1", SenderID: userB, Content: `{"text":"数据库连接数满了"}`, CreateTime: time.Date(2026, 10, 8, 1, 12, 0, 0, time.UTC)}},
	})
	// Logged (committed) and pending: the expansion waits for Feishu.
	for {
		if found, p := pending(); found && p {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("the forward was never logged pending\n%s", first.stderr)
		}
		time.Sleep(20 * time.Millisecond)
	}
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
	for {
		if found, p := pending(); found && !p {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("the restart did not complete the pending forward\n%s", second.stderr)
		}
		time.Sleep(20 * time.Millisecond)
	}
	post(second, feishusim.Message{
		ID: "om_kill_ask", ChatID: group, SenderID: userB, Content: `{"text":"@_user_1 刚才转发的是什么"}`,
		Mentions: []feishusim.Mention{{Key: "@_user_1", ID: feishusim.DefaultBotOpenID, Name: feishusim.DefaultBotName}},
	})
	for len(sim.Sent()) == 0 {
		if ctx.Err() != nil {
			t.Fatalf("no reply\n%s", second.stderr)
		}
		time.Sleep(50 * time.Millisecond)
	}
	reqs := model.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d model requests", len(reqs))
	}
	body, _ := json.Marshal(reqs[0].Body)
	user := string(body)
	for _, want := range []string{"【合并转发,共 1 条】", "李四:数据库连接数满了", "刚才转发的是什么"} {
		if !strings.Contains(user, want) {
			t.Errorf("the model request lacks %q:\n%s", want, user)
		}
	}
	if strings.Contains(user, "Merged and Forwarded Message") {
		t.Errorf("the model read the fixed text:\n%s", user)
	}
}
