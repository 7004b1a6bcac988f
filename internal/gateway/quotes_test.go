package gateway

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pincerbot/pincer/internal/config"
)

// getMsgAnswer plays an implementation whose get_msg answers at once:
// message 777 is the bot's, every other one someone else's. asked counts
// the calls by message id.
func getMsgAnswer(asked *sync.Map) qqAnswer {
	return func(action string, params json.RawMessage) (any, int, string, bool) {
		if action != "get_msg" {
			return nil, 0, "", false
		}
		var p struct {
			MessageID int64 `json:"message_id"`
		}
		_ = json.Unmarshal(params, &p)
		n, _ := asked.LoadOrStore(p.MessageID, new(atomic.Int64))
		n.(*atomic.Int64).Add(1)
		sender := int64(10009)
		if p.MessageID == 777 {
			sender = botQQ
		}
		return map[string]any{"message_id": p.MessageID, "user_id": sender, "sender": map[string]any{"user_id": sender, "nickname": "x"}, "message": "earlier"}, 0, "", true
	}
}

func quoting(id int64) map[string]any {
	return seg("reply", map[string]any{"id": strconv.FormatInt(id, 10)})
}

// TestQQQuotesUnderLoadNeverStallIngest: a burst over 20 groups in which
// every fifth message replies to a message pincer never saw (whose author
// only get_msg can tell, answered at once by the implementation), through
// a queue of 16, so the reader is held back again and again. No lane
// waits for get_msg, so the answers, read behind the waiting events, are
// never starved: each quoted id is asked once, a reply to the bot's own
// earlier message (777) is answered as one, and every group's reply then
// sees all of its messages in order. Before, the lane workers waited in
// get_msg for answers queued behind the events the blocked reader did not
// read, every lookup ran into its timeout, and the reply to the bot was
// never answered.
func TestQQQuotesUnderLoadNeverStallIngest(t *testing.T) {
	var asked sync.Map
	r := newQQRigAnswering(t, getMsgAnswer(&asked), func(c *config.Config) {
		c.Channels.OneBot.Receive.History.MaxMessages = 100
		c.Channels.OneBot.Receive.History.MaxChars = 100000
		c.Messages.Inbound.Queue = 16
	})
	const groups, each = 20, 30
	quotes := 0
	for i := range each {
		for g := range groups {
			id := int64(g*1000 + i + 1)
			segs := []any{text(fmt.Sprintf("g%d-%d", g, i))}
			if i%5 == 0 {
				segs = append([]any{quoting(500000 + id)}, segs...)
				quotes++
			}
			ev := groupFrom(id, 10001, "张三", segs...)
			ev["group_id"] = 700000100 + g
			r.push(t, ev)
		}
		if i == each/2 {
			// Someone replies to the bot's message from before pincer
			// started: only get_msg knows it is the bot's.
			thanks := groupFrom(99001, 10003, "王五", quoting(777), text("谢谢，那明天呢？"))
			thanks["group_id"] = 700000999
			r.push(t, thanks)
		}
	}
	for g := range groups {
		ev := groupFrom(int64(g*1000+900), 10002, "李四", atBot(), text(fmt.Sprintf(" g%d-ask", g)))
		ev["group_id"] = 700000100 + g
		r.push(t, ev)
	}
	answered := repliesQuoting(t, r, groups+1)
	if !answered["99001"] {
		t.Errorf("the reply to the bot's message is not answered; answered %v", answered)
	}
	// Each quoted id is asked about once; 777 once more, when the reply's
	// turn shows the agent what it quotes.
	ids := 0
	asked.Range(func(id, n any) bool {
		ids++
		if want := int64(1) + map[bool]int64{true: 1}[id == int64(777)]; n.(*atomic.Int64).Load() != want {
			t.Errorf("get_msg of %v asked %d times, want %d", id, n.(*atomic.Int64).Load(), want)
		}
		return true
	})
	if ids != quotes+1 {
		t.Errorf("get_msg asked about %d ids, want every quoted one (%d)", ids, quotes+1)
	}
	seen := 0
	for _, req := range r.model.Requests() {
		body := strings.Join(userMessages(req), "\n")
		if strings.Contains(body, "谢谢，那明天呢？") {
			continue
		}
		g, got := groupLines(t, body)
		if g < 0 {
			continue
		}
		seen++
		if len(got) != each || !slices.IsSorted(got) {
			t.Errorf("group %d saw %v", g, got)
		}
	}
	if seen != groups {
		t.Errorf("%d groups' replies read their history, want %d", seen, groups)
	}
}

// repliesQuoting waits until the bot has sent n messages and returns the
// ids their reply segments quote.
func repliesQuoting(t *testing.T, r *qqRig, n int) map[string]bool {
	t.Helper()
	for {
		quoted := map[string]bool{}
		sends := 0
		for _, c := range r.peer.Calls() {
			if !strings.HasPrefix(c.Action, "send_") {
				continue
			}
			sends++
			var p struct {
				Message []struct {
					Type string         `json:"type"`
					Data map[string]any `json:"data"`
				} `json:"message"`
			}
			if err := json.Unmarshal(c.Params, &p); err != nil {
				t.Fatal(err)
			}
			if len(p.Message) > 0 && p.Message[0].Type == "reply" {
				quoted[fmt.Sprint(p.Message[0].Data["id"])] = true
			}
		}
		if sends >= n {
			return quoted
		}
		select {
		case <-r.peer.Called():
		case <-time.After(20 * time.Millisecond):
		case <-r.ctx.Done():
			t.Fatalf("%d of %d replies sent before the deadline; quoted %v", sends, n, quoted)
		}
	}
}
