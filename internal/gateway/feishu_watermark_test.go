package gateway

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pincerbot/pincer/internal/channel/feishu/feishusim"
	"github.com/pincerbot/pincer/internal/config"
)

// logPending reports whether the log holds message id and whether its
// entry is still pending, read from the database file as another process
// would.
func logPending(t *testing.T, path, id string) (found, pending bool) {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+(&url.URL{Path: path}).EscapedPath()+"?_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	err = db.QueryRow(`SELECT enrich_pending FROM messages WHERE message_id = ? ORDER BY seq DESC LIMIT 1`, id).Scan(&pending)
	if err == sql.ErrNoRows {
		return false, false
	}
	if err != nil {
		t.Fatal(err)
	}
	return true, pending
}

// waitLogged waits until the log holds id with pending as wanted.
func waitLogged(t *testing.T, ctx context.Context, path, id string, pending bool) {
	t.Helper()
	for {
		if found, p := logPending(t, path, id); found && p == pending {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the log never held %s with enrich_pending=%v", id, pending)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// TestFeishuPendingForwardIsTheWatermarkEndToEnd: a merged forward nobody
// @s, whose expansion the platform is slow to answer, is logged pending;
// an @ meanwhile is answered at once with the history before it (neither
// its fixed text nor what came after it); once expanded, the excerpt is
// in the log and the next @ reads it and what came after.
func TestFeishuPendingForwardIsTheWatermarkEndToEnd(t *testing.T) {
	r := newLarkRig(t, nil)
	db := filepath.Join(r.gw.dataDir, "pincer.db")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	at := time.Date(2026, 10, 8, 1, 12, 0, 0, time.UTC)
	release := r.sim.Hold("/open-apis/im/v1/messages/om_slow_fwd")
	defer release()
	r.post(t, ctx, feishusim.Message{ID: "om_before", ChatID: larkGroup, SenderID: larkUserA, Content: `{"text":"告警又来了"}`}, feishusim.EventOptions{})
	r.post(t, ctx, feishusim.Message{
		ID: "om_slow_fwd", ChatID: larkGroup, MsgType: "merge_forward", SenderID: larkUserA,
		Children: []feishusim.Message{{ID: "om_c1", SenderID: larkUserB, Content: `{"text":"数据库连接数满了"}`, CreateTime: at}},
	}, feishusim.EventOptions{})
	r.post(t, ctx, feishusim.Message{ID: "om_after", ChatID: larkGroup, SenderID: larkUserB, Content: `{"text":"我去看看"}`}, feishusim.EventOptions{})
	waitLogged(t, ctx, db, "om_slow_fwd", true)
	r.post(t, ctx, askBot("om_ask1", "怎么回事"), feishusim.EventOptions{})
	first := larkText(t, r.waitSent(t, ctx, 1)[0])
	if !strings.Contains(first, "告警又来了") || !strings.Contains(first, "怎么回事") {
		t.Errorf("the first @'s input lacks the history before the forward or its own text:\n%s", first)
	}
	for _, not := range []string{"Merged and Forwarded Message", "我去看看", "数据库连接数满了"} {
		if strings.Contains(first, not) {
			t.Errorf("the first @'s input holds %q, past the watermark:\n%s", not, first)
		}
	}
	if found, pending := logPending(t, db, "om_slow_fwd"); !found || !pending {
		t.Errorf("the forward is not pending in the log while its expansion waits (found %v)", found)
	}

	release()
	waitLogged(t, ctx, db, "om_slow_fwd", false)
	r.post(t, ctx, askBot("om_ask2", "现在呢"), feishusim.EventOptions{})
	second := larkText(t, r.waitSent(t, ctx, 2)[1])
	// The turn's own user message: the session's earlier turns come before.
	second = second[strings.LastIndex(second, "=== User message ==="):]
	for _, want := range []string{"【合并转发,共 1 条】", "李四:数据库连接数满了", "我去看看", "现在呢"} {
		if !strings.Contains(second, want) {
			t.Errorf("the second @'s input lacks %q:\n%s", want, second)
		}
	}
	if strings.Contains(second, "Merged and Forwarded Message") || strings.Contains(second, "告警又来了") {
		t.Errorf("the second @'s input holds the fixed text or history the first took:\n%s", second)
	}
}

// TestFeishuQuoteOfAnExpandedForwardReadsTheLog: a quote of a merged
// forward the log holds expanded is answered from the log, with no second
// request for the forward, even after a restart.
func TestFeishuQuoteOfAnExpandedForwardReadsTheLog(t *testing.T) {
	r := newLarkRig(t, nil)
	db := filepath.Join(r.gw.dataDir, "pincer.db")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	at := time.Date(2026, 10, 8, 1, 12, 0, 0, time.UTC)
	r.post(t, ctx, feishusim.Message{
		ID: "om_q_fwd", ChatID: larkGroup, MsgType: "merge_forward", SenderID: larkUserA,
		Children: []feishusim.Message{{ID: "om_q_c1", SenderID: larkUserB, Content: `{"text":"磁盘快满了"}`, CreateTime: at}},
	}, feishusim.EventOptions{})
	waitLogged(t, ctx, db, "om_q_fwd", false)
	// What this process remembers of the expansion goes with it.
	r.restart(t)
	fetched := len(r.sim.Calls("/open-apis/im/v1/messages/om_q_fwd"))
	r.post(t, ctx, feishusim.Message{
		ID: "om_q_ask", ChatID: larkGroup, SenderID: larkUserB, ParentID: "om_q_fwd", RootID: "om_q_fwd",
		Content:  `{"text":"@_user_1 这个怎么处理"}`,
		Mentions: []feishusim.Mention{{Key: "@_user_1", ID: feishusim.DefaultBotOpenID, Name: feishusim.DefaultBotName}},
	}, feishusim.EventOptions{})
	got := larkText(t, r.waitSent(t, ctx, 1)[0])
	if !strings.Contains(got, "李四:磁盘快满了") || !strings.Contains(got, "这个怎么处理") {
		t.Errorf("the agent's input lacks the quoted forward's excerpt or its own text:\n%s", got)
	}
	if n := len(r.sim.Calls("/open-apis/im/v1/messages/om_q_fwd")); n != fetched {
		t.Errorf("the quoted forward was fetched %d more time(s); the log held it expanded", n-fetched)
	}
}

// TestFeishuQuoteOfALoggedGroupMessageReadsTheLog: in a group, a quote of
// a plain message the log holds is answered from the log (the log comes
// first), with no request for it.
func TestFeishuQuoteOfALoggedGroupMessageReadsTheLog(t *testing.T) {
	r := newLarkRig(t, nil)
	db := filepath.Join(r.gw.dataDir, "pincer.db")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r.post(t, ctx, feishusim.Message{ID: "om_plain", ChatID: larkGroup, SenderID: larkUserA, Content: `{"text":"周五下午三点开会"}`}, feishusim.EventOptions{})
	waitLogged(t, ctx, db, "om_plain", false)
	r.post(t, ctx, feishusim.Message{
		ID: "om_plain_ask", ChatID: larkGroup, SenderID: larkUserB, ParentID: "om_plain", RootID: "om_plain",
		Content:  `{"text":"@_user_1 几点来着"}`,
		Mentions: []feishusim.Mention{{Key: "@_user_1", ID: feishusim.DefaultBotOpenID, Name: feishusim.DefaultBotName}},
	}, feishusim.EventOptions{})
	got := larkText(t, r.waitSent(t, ctx, 1)[0])
	if !strings.Contains(got, "周五下午三点开会") || !strings.Contains(got, "几点来着") {
		t.Errorf("the agent's input lacks the quoted message or its own text:\n%s", got)
	}
	if n := len(r.sim.Calls("/open-apis/im/v1/messages/om_plain")); n != 0 {
		t.Errorf("the quoted message was fetched %d time(s); the log held it", n)
	}
}

// TestFeishuLongForwardSpillsToTheWorkspace: a merged forward whose
// excerpt exceeds mergeForward.maxChars reaches the agent as its first
// maxChars characters and a line naming the file that holds it whole, in
// the chat's workspace under quoted/; the log keeps that inline text, not
// the whole. When the file cannot be written the agent gets the first
// characters and a note that the rest was cut.
func TestFeishuLongForwardSpillsToTheWorkspace(t *testing.T) {
	r := newLarkRig(t, func(c *config.Config) { c.Channels.Feishu.MergeForward.MaxChars = 200 })
	db := filepath.Join(r.gw.dataDir, "pincer.db")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	at := time.Date(2026, 10, 8, 1, 12, 0, 0, time.UTC)
	long := strings.Repeat("日志一行，", 30) // 150 characters a message
	forward := func(id string) feishusim.Message {
		var children []feishusim.Message
		for i := range 3 {
			children = append(children, feishusim.Message{ID: fmt.Sprintf("%s_c%d", id, i), SenderID: larkUserB, Content: `{"text":"` + long + `"}`, CreateTime: at.Add(time.Duration(i) * time.Minute)})
		}
		return feishusim.Message{ID: id, ChatID: larkGroup, MsgType: "merge_forward", SenderID: larkUserA, Children: children}
	}
	r.post(t, ctx, forward("om_long_fwd"), feishusim.EventOptions{})
	waitLogged(t, ctx, db, "om_long_fwd", false)
	file := filepath.Join(r.gw.workspace, "feishu", "default", larkGroup, "quoted", "merge-forward-om_long_fwd.txt")
	whole, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("the whole excerpt is not in the workspace: %v", err)
	}
	if n := strings.Count(string(whole), long); n != 3 {
		t.Errorf("the file holds %d of the 3 messages whole:\n%s", n, whole)
	}
	// A file where the directory would be: the next spill cannot be written.
	if err := os.Remove(file); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Dir(file)); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Dir(file), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	r.post(t, ctx, forward("om_long_fwd2"), feishusim.EventOptions{})
	waitLogged(t, ctx, db, "om_long_fwd2", false)
	r.post(t, ctx, askBot("om_long_ask", "总结一下"), feishusim.EventOptions{})
	got := larkText(t, r.waitSent(t, ctx, 1)[0])
	if !strings.Contains(got, "  全文见 @"+file+"@\n") {
		t.Errorf("the agent's input does not name the file with the whole excerpt:\n%s", got)
	}
	if !strings.Contains(got, "  (其余已截断)\n") {
		t.Errorf("the agent's input does not say the unwritten excerpt was cut:\n%s", got)
	}
	if strings.Count(got, long) > 2 {
		t.Errorf("more than the inline part of a forward reached the agent:\n%s", got)
	}
}
