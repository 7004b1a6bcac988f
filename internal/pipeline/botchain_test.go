package pipeline

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/pincerbot/pincer/internal/msg"
)

// TestBotReplyChainIsCapped: another bot @-ing the bot gets at most
// MaxBotReplyChain replies in a row; a person's message in the chat, even
// one that triggers nothing, starts the count over; with no limit bots
// are answered as anyone.
func TestBotReplyChainIsCapped(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := defaults()
		s.Realtime.Enabled = false
		s.MaxBotReplyChain = 2
		g := newRig(t, s)
		fromBot := func(id string) msg.Message {
			m := mention(gm(id, "ou_bot", "另一个机器人", "", 0), "你好")
			m.Sender.IsBot = true
			return m
		}
		for _, id := range []string{"b1", "b2", "b3"} {
			g.send(t, fromBot(id))
			time.Sleep(time.Second)
			synctest.Wait()
		}
		if n := len(g.eng.list()); n != 2 {
			t.Fatalf("%d turns for 3 bot messages in a row, want 2", n)
		}
		g.send(t, gm("h1", "10001", "张三", "哈哈", 0)) // a person speaks
		time.Sleep(time.Second)
		synctest.Wait()
		g.send(t, fromBot("b4"))
		time.Sleep(time.Second)
		synctest.Wait()
		turns := g.eng.list()
		if len(turns) != 3 || turns[2].mc.Message.ID != "b4" {
			t.Fatalf("after a person spoke the bot is answered again: %d turns", len(turns))
		}
	})
	synctest.Test(t, func(t *testing.T) {
		s := defaults()
		s.Realtime.Enabled = false
		g := newRig(t, s)
		for _, id := range []string{"b1", "b2", "b3", "b4"} {
			m := mention(gm(id, "ou_bot", "另一个机器人", "", 0), "你好")
			m.Sender.IsBot = true
			g.send(t, m)
			time.Sleep(time.Second)
			synctest.Wait()
		}
		if n := len(g.eng.list()); n != 4 {
			t.Fatalf("no limit: %d turns, want 4", n)
		}
	})
}

// TestRecalledBatchIsNotAnswered: a window whose every message its sender
// took back before the flush gives no turn; one with a message left is
// answered.
func TestRecalledBatchIsNotAnswered(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newRig(t, defaults())
		recalled := map[msg.MessageID]bool{"r1": true, "r2": true, "r3": true}
		g.p.opts.Enrich = func(_ context.Context, msgs []msg.Message) []msg.Message {
			for i := range msgs {
				if recalled[msgs[i].ID] {
					msgs[i].Text, msgs[i].Recalled = "(已撤回)", true
				}
			}
			return msgs
		}
		g.send(t, mention(gm("r1", "1001", "A", "", 0), "在吗"))
		g.send(t, gm("r2", "1001", "A", "算了", 0))
		time.Sleep(5 * time.Second)
		synctest.Wait()
		if n := len(g.eng.list()); n != 0 {
			t.Fatalf("%d turns for a recalled batch", n)
		}
		g.send(t, mention(gm("r3", "1001", "A", "", 0), "在吗"))
		g.send(t, gm("ok", "1001", "A", "还在", 0))
		time.Sleep(5 * time.Second)
		synctest.Wait()
		if n := len(g.eng.list()); n != 1 {
			t.Fatalf("%d turns, want the batch with a message left answered", n)
		}
	})
}

// TestRecalledMessagesStillDigest: a digest reports the chat, recalled
// messages and all (they read as recalled); only a reply to nothing but
// recalled messages is skipped.
func TestRecalledMessagesStillDigest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := defaults()
		r.Digest.Enabled, r.Digest.Interval, r.Digest.MinMessages = true, time.Minute, 2
		g := newRig(t, r)
		g.p.opts.Enrich = func(_ context.Context, msgs []msg.Message) []msg.Message {
			for i := range msgs {
				msgs[i].Text, msgs[i].Recalled = "(已撤回)", true
			}
			return msgs
		}
		g.send(t, gm("1", "1001", "甲", "说错了", 0))
		g.send(t, gm("2", "1002", "乙", "我也是", time.Second))
		time.Sleep(61 * time.Second)
		synctest.Wait()
		digests := 0
		for _, tr := range g.eng.list() {
			if tr.mc.NoCommands {
				digests++
			}
		}
		if digests != 1 {
			t.Fatalf("%d digests, want 1", digests)
		}
	})
}
