package onebot

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/pincerbot/pincer/internal/msg"
)

// TestFindSentReadsTheChat: a part is found on the platform when the
// chat's history holds the bot's message with its text, quoting what the
// part quotes, dated since the reply was stored, and not recorded as sent
// for anything else; otherwise it is not, and an implementation without
// history says so.
func TestFindSentReadsTheChat(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		now := time.Now()
		bot := func(id int64, text string, at time.Time, quoting string) map[string]any {
			segs := []any{}
			if quoting != "" {
				segs = append(segs, map[string]any{"type": "reply", "data": map[string]any{"id": quoting}})
			}
			segs = append(segs, map[string]any{"type": "text", "data": map[string]any{"text": text}})
			return map[string]any{"message_id": id, "time": at.Unix(), "self_id": 3300000001, "user_id": 3300000001,
				"sender": map[string]any{"user_id": 3300000001, "nickname": "bot"}, "message": segs}
		}
		history := []any{
			bot(501, "八点半吧，我也去。", now.Add(-time.Hour), "42"), // before the reply was stored
			map[string]any{"message_id": 502, "time": now.Unix(), "user_id": 10001, "sender": map[string]any{"user_id": 10001, "nickname": "张三"},
				"message": []any{map[string]any{"type": "text", "data": map[string]any{"text": "八点半吧，我也去。"}}}}, // someone else's
			bot(503, "八点半吧，我也去。", now.Add(time.Second), "41"), // quotes another message
			bot(504, "八点半吧，我也去。", now.Add(2*time.Second), "42"),
		}
		unsupported := false
		r := newRig(t, AccountOptions{WSURL: "ws://onebot.test/", SelfID: 3300000001}, func(action string, params json.RawMessage) (any, int, string) {
			if action == "get_group_msg_history" {
				if unsupported {
					return nil, 1404, "不支持的Api"
				}
				return map[string]any{"messages": history}, 0, ""
			}
			return answerSends(action, params)
		})
		defer r.close()
		ctx := context.Background()
		if err := r.peer.Connected(ctx); err != nil {
			t.Fatal(err)
		}
		out := msg.Outbound{Account: "default", Peer: msg.Peer{Kind: msg.Group, ID: "700"}, Text: "八点半吧，我也去。", ReplyTo: "42"}
		id, found, err := r.acct.FindSent(ctx, out, 0, now)
		if err != nil || !found || id != "504" {
			t.Errorf("FindSent = %q %v %v, want 504", id, found, err)
		}
		r.acct.recordSent(ctx, "504") // confirmed for another part
		if id, found, err := r.acct.FindSent(ctx, out, 0, now); err != nil || found {
			t.Errorf("a message recorded as sent was found: %q %v %v", id, found, err)
		}
		other := out
		other.Text = "不去了"
		if _, found, _ := r.acct.FindSent(ctx, other, 0, now); found {
			t.Error("a part with other text was found")
		}
		if _, found, _ := r.acct.FindSent(ctx, out, 1, now); found {
			t.Error("a part the reply does not have was found")
		}
		// An implementation without history cannot tell: the part is sent.
		unsupported = true
		if _, found, err := r.acct.FindSent(ctx, out, 0, now); found || err != nil {
			t.Errorf("without history: found %v, err %v; want not found, no error", found, err)
		}
		// With no connection the platform cannot be asked now: the error
		// says so, and the outbox sends nothing before it can.
		r.peer.DropAll()
		synctest.Wait()
		if _, found, err := r.acct.FindSent(ctx, out, 0, now); found || !errors.Is(err, errNotConnected) {
			t.Errorf("with no connection: found %v, err %v; want errNotConnected", found, err)
		}
	})
}
