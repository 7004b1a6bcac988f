package pipeline

import (
	"context"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/pincerbot/pincer/internal/msg"
	"github.com/pincerbot/pincer/internal/prompt"
)

// TestEnrichCompletesBatchAndHistory: the enricher rewrites what a turn
// reads, both the batch's own messages and the history taken with it,
// and the buffers keep the messages as they were taken in.
func TestEnrichCompletesBatchAndHistory(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newRig(t, defaults())
		var seen [][]msg.MessageID
		g.p.opts.Enrich = func(_ context.Context, msgs []msg.Message) []msg.Message {
			var ids []msg.MessageID
			for i := range msgs {
				ids = append(ids, msgs[i].ID)
				if len(msgs[i].ForwardIDs) > 0 {
					msgs[i].Text = "【合并转发,共 1 条】"
					msgs[i].ForwardIDs = nil
				}
			}
			seen = append(seen, ids)
			return msgs
		}
		fwd := gm("f", "1001", "用户A", "[合并转发]", 0)
		fwd.ForwardIDs = []msg.ForwardID{"f"}
		g.send(t, fwd)
		time.Sleep(time.Second)
		q := mention(gm("q", "1002", "用户B", "", time.Second), "看看上面这个")
		q.ForwardIDs = []msg.ForwardID{"q"}
		g.send(t, q)
		time.Sleep(2 * time.Second)
		synctest.Wait()
		turns := g.eng.list()
		if len(turns) != 1 {
			t.Fatalf("%d turns", len(turns))
		}
		body := turns[0].mc.BodyForAgent
		want := prompt.HistoryHeader + "\n[10:00:00] 用户A(1001): 【合并转发,共 1 条】\n" + prompt.HistoryFooter + "\n用户B (1002): 【合并转发,共 1 条】"
		if body != want {
			t.Errorf("body:\n%s\nwant:\n%s", body, want)
		}
		if len(seen) != 2 || len(seen[0]) != 1 || seen[0][0] != "q" || len(seen[1]) != 1 || seen[1][0] != "f" {
			t.Errorf("enricher calls %v: the batch, then its history", seen)
		}
		if strings.Contains(body, "[合并转发]") {
			t.Error("a placeholder reached the agent")
		}
	})
}
