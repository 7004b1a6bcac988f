package pipeline

import (
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
