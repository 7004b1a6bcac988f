package main

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pincerbot/pincer/internal/config"
	"github.com/pincerbot/pincer/internal/llm/llmtest"
	"github.com/pincerbot/pincer/internal/msg"
	"github.com/pincerbot/pincer/internal/store/sqlite"
)

// TestKilledDuringABurstWithWindowsAndDigestsOpen is the durability
// promise under load: pincer is killed with SIGKILL halfway through a
// burst of chatter and mentions in ten groups, with realtime windows and
// digest windows open. What it had logged is, in every group, all the
// messages up to some point: only the newest can be missing (those still
// on their way: in the socket, in its queues or in the batch not yet
// committed). After the restart on the same data directory every mention
// it had logged, and every mention sent afterwards, is answered exactly
// once, and every message it had logged is in exactly one digest.
func TestKilledDuringABurstWithWindowsAndDigestsOpen(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the binary twice")
	}
	const (
		groups   = 10
		total    = 2000
		killAt   = 1000 // frames pushed before the kill
		every    = 41   // every 41st message @s the bot, each group in turn
		interval = 8000 // digest interval, ms: no digest before the kill
	)
	model := llmtest.NewOpenAI(t)
	model.Script(llmtest.Reply{Text: []string{"好"}})
	w := newQQWorld(t)
	dir := t.TempDir()
	cfg := freePortConfig(`
		models: { providers: { openai: { baseUrl: '` + model.URL + `/v1', apiKey: 'k' } } },
		agents: { defaults: { model: { primary: 'openai/m' }, maxConcurrent: 32 } },
		// A mention that arrives while its group's reply is written gets a
		// reply of its own afterwards, so each is seen answered.
		messages: { queue: { mode: 'followup' } },
		channels: { onebot: {
			wsUrl: '` + w.peer.URL + `', selfId: 3300000001,
			reconnect: { minDelayMs: 200, maxDelayMs: 500 },
			receive: {
				realtime: { windowMs: 300 },
				digest: { enabled: true, intervalMs: ` + strconv.Itoa(interval) + `, minMessages: 1, maxMessages: 1000, maxTranscriptChars: 1000000 },
			},
		} },
		log: { level: 'info' },`)

	burst := newBurst(total, groups, every)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	first, _ := startServe(t, dir, cfg)
	waitLink(t, ctx, w)
	for _, s := range burst[:killAt] {
		if err := w.peer.Push(ctx, w.burstFrame(s)); err != nil {
			t.Fatal(err)
		}
	}
	if err := first.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = first.cmd.Wait()

	// What the first pincer had taken in: its log, read from its file.
	logged := map[int64]bool{}
	db, err := sqlite.Open(ctx, filepath.Join(dir, config.Default().Store.Path), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for g := int64(0); g < groups; g++ {
		peer := msg.Peer{Kind: msg.Group, ID: strconv.FormatInt(700000000+g, 10)}
		entries, err := db.RecentInbound(ctx, "onebot", msg.DefaultAccount, peer, total)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			id, _ := strconv.ParseInt(string(e.Message.ID), 10, 64)
			logged[id] = true
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	// Only the newest messages of a group can be missing.
	missing := onlyNewestMissing(t, burst[:killAt], logged)
	t.Logf("the first pincer had logged %d of the %d messages pushed before the kill; the rest were on their way", len(logged), killAt)

	second, _ := startServe(t, dir, cfg)
	defer second.stop()
	defer func() {
		if t.Failed() {
			t.Logf("the second pincer's log:\n%s", second.stderr)
		}
	}()
	waitLink(t, ctx, w)
	for _, s := range burst[killAt:] {
		if err := w.peer.Push(ctx, w.burstFrame(s)); err != nil {
			t.Fatal(err)
		}
	}

	// Every mention taken in, before the kill or after the restart, is
	// answered once; the lost ones, never.
	var want []string
	for _, s := range burst {
		if s.trigger && (s.id > killAt || logged[s.id]) {
			want = append(want, strconv.FormatInt(s.id, 10))
		}
	}
	answered := func() (int, string) {
		w.mu.Lock()
		defer w.mu.Unlock()
		n, bad := 0, ""
		for _, id := range want {
			switch w.replies[id] {
			case 0:
			case 1:
				n++
			default:
				bad += fmt.Sprintf(" %s answered %d times;", id, w.replies[id])
			}
		}
		for id, c := range w.replies {
			if id != "" && !strings.Contains(" "+strings.Join(want, " ")+" ", " "+id+" ") {
				bad += fmt.Sprintf(" %s (not taken in) answered %d times;", id, c)
			}
		}
		return n, bad
	}
	// Every message taken in appears in exactly one digest.
	digested := func() map[int64]int { return digestCounts(model, burst) }
	for {
		n, bad := answered()
		if bad != "" {
			t.Fatalf("replies:%s", bad)
		}
		counts := digested()
		done := n == len(want)
		for _, s := range burst {
			if !s.trigger && (s.id > killAt || logged[s.id]) && counts[s.id] == 0 {
				done = false
			}
		}
		if done {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%d of %d mentions answered, %d messages digested", n, len(want), len(counts))
		case <-time.After(200 * time.Millisecond):
		}
	}
	waitMetric(t, ctx, second.url, "pincer_outbox_pending 0")
	if _, bad := answered(); bad != "" {
		t.Errorf("replies:%s", bad)
	}
	for id, n := range digested() {
		if n > 1 {
			t.Errorf("message %d is in %d digests", id, n)
		}
		if id <= killAt && !logged[id] {
			t.Errorf("message %d was not taken in, yet it is in a digest", id)
		}
	}
	t.Logf("%d mentions answered once; the %d messages not logged at the kill were the newest of their groups", len(want), missing)
}

// burstMsg is one message of a test burst: chatter in its group, or an
// @ of the bot from a sender of its own.
type burstMsg struct {
	id      int64
	group   int64
	trigger bool
}

// newBurst is total messages over groups groups (700000000 on), every
// every-th an @ of the bot, each group in turn.
func newBurst(total, groups, every int64) []burstMsg {
	var burst []burstMsg
	for i := int64(1); i <= total; i++ {
		burst = append(burst, burstMsg{id: i, group: 700000000 + i%groups, trigger: i%every == 0})
	}
	return burst
}

// burstFrame is s as the implementation sends it; an @ also joins its
// group's history.
func (w *qqWorld) burstFrame(s burstMsg) map[string]any {
	if s.trigger {
		ev := w.mention(s.id, s.group)
		ev["user_id"] = 50000 + s.id // one sender a mention: no two share a window
		ev["sender"] = map[string]any{"user_id": 50000 + s.id, "nickname": "提问者"}
		return ev
	}
	ev := mentionEvent(s.id, "")
	ev["group_id"] = s.group
	ev["user_id"] = 10000 + s.id%7
	ev["sender"] = map[string]any{"user_id": 10000 + s.id%7, "nickname": "群友"}
	ev["message"] = []any{map[string]any{"type": "text", "data": map[string]any{"text": chatter(s.id)}}}
	return ev
}

// onlyNewestMissing checks that of the messages sent, in every group only
// the newest can be missing from those kept (the ones still on their way
// when a pincer was killed), and returns how many are.
func onlyNewestMissing(t *testing.T, sent []burstMsg, kept map[int64]bool) int {
	t.Helper()
	missing := 0
	gap := map[int64]bool{}
	for _, s := range sent {
		switch {
		case !kept[s.id]:
			gap[s.group] = true
			missing++
		case gap[s.group]:
			t.Errorf("group %d: message %d was kept, but one before it was lost", s.group, s.id)
		}
	}
	return missing
}

// digestCounts counts, for each chatter message of burst, the digests it
// is in: the model requests with the digest prompt that quote it.
func digestCounts(model *llmtest.Server, burst []burstMsg) map[int64]int {
	counts := map[int64]int{}
	for _, r := range model.Requests() {
		body, _ := json.Marshal(r.Body["messages"])
		text := string(body)
		if !strings.Contains(text, config.DefaultDigestPrompt[:30]) {
			continue
		}
		for _, s := range burst {
			if !s.trigger && strings.Contains(text, chatter(s.id)) {
				counts[s.id]++
			}
		}
	}
	return counts
}

// chatter is the text of chatter message id, unique even as a substring.
func chatter(id int64) string { return "消息" + strconv.FormatInt(id, 10) + "号" }
