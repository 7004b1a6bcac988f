package pipeline

import (
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/pincerbot/pincer/internal/msg"
)

// TestChatRules: chats with settings of their own are received by them:
// a silent chat answers nothing (not even /summary), a chat with its own
// keywords answers them without a mention, a chat's sender filter, its
// history switch and its realtime windows hold; other chats keep the
// account's settings.
func TestChatRules(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		silentPeer := msg.Peer{Kind: msg.Group, ID: "1"}
		keywordPeer := msg.Peer{Kind: msg.Group, ID: "2"}
		silent, _ := NewChatRules(ChatRules{Silent: true, Why: "channels.onebot.groups.*.enabled is false", Receive: defaults()})
		kw := defaults()
		kw.Mention.RequireMentionInGroup = false
		kw.Mention.Keywords = []string{"骰子"}
		kw.History.Enabled = false
		kw.Realtime.Enabled = false // answered at once, no window
		keyword, _ := NewChatRules(ChatRules{Receive: kw, Allow: func(u msg.UserID) bool { return u != "666" }, DenyWhy: "666 is in denyFrom"})
		g := newRig(t, defaults())
		g.p.opts.Chat = func(peer msg.Peer) *ChatRules {
			switch peer {
			case silentPeer:
				return silent
			case keywordPeer:
				return keyword
			}
			return nil
		}
		in := func(m msg.Message, peer msg.Peer) msg.Message { m.Peer = peer; return m }
		g.send(t, in(mention(gm("1", "1001", "A", "", 0), "在吗"), silentPeer))
		g.send(t, in(mention(gm("2", "1001", "A", "", 0), "/summary"), silentPeer))
		g.send(t, in(gm("3", "1001", "A", "聊点别的", 0), keywordPeer))
		g.send(t, in(gm("4", "666", "B", "扔个骰子", 0), keywordPeer))
		g.send(t, in(gm("5", "1002", "C", "扔个骰子", 0), keywordPeer))
		g.send(t, gm("6", "1003", "D", "扔个骰子", 0)) // the account's settings: a mention is needed
		time.Sleep(10 * time.Second)
		synctest.Wait()
		turns := g.eng.list()
		if len(turns) != 1 || turns[0].mc.Message.ID != "5" {
			t.Fatalf("want only message 5 answered, got %+v", turns)
		}
		if turns[0].at != 0 {
			t.Errorf("the chat has no realtime windows, yet its message waited %s", turns[0].at)
		}
		if body := turns[0].mc.BodyForAgent; strings.Contains(body, "聊点别的") {
			t.Errorf("the chat's history is off, yet the turn reads it:\n%s", body)
		}
		if len(g.sent.list()) != 0 || len(g.hist.got) != 0 {
			t.Errorf("a silent chat was answered: sent %v, history read %d times", g.sent.list(), len(g.hist.got))
		}
	})
}
