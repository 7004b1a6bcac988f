package pipeline

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/pincerbot/pincer/internal/channel"
	"github.com/pincerbot/pincer/internal/msg"
)

// TestReplierFromRebuildsTheReplyPath: the delivery spec of a turn
// rebuilds, after a restart, the reply path its flush made: a realtime
// reply quotes the batch's first message and may mention its people; a
// digest goes to the chat and stays silent on SKIP.
func TestReplierFromRebuildsTheReplyPath(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := defaults()
		r.Digest.Enabled, r.Digest.MaxMessages, r.Digest.MinMessages = true, 2, 1
		g := newRig(t, r)
		g.p.opts.ReplierFor = func(m msg.Message) channel.Replier { return &replier{trigger: m, s: g.sent} }
		g.send(t, gm("0", "1002", "李四", "早", 0))
		g.send(t, mention(gm("1", "1001", "张三", "", time.Second), "问题"))
		time.Sleep(time.Second)
		synctest.Wait()
		var realtime, digest Turn
		for _, tr := range g.eng.list() {
			if tr.mc.Standalone {
				digest = tr.mc
			} else {
				realtime = tr.mc
			}
		}
		if realtime.Delivery == nil || digest.Delivery == nil {
			t.Fatalf("turns carry their delivery: %+v %+v", realtime, digest)
		}
		rep, ok := g.p.ReplierFrom(realtime.Delivery)
		if !ok {
			t.Fatal("realtime spec not rebuilt")
		}
		if _, err := rep.Deliver(context.Background(), msg.Outbound{Account: "default", Peer: realtime.Message.Peer, Text: "答案"}); err != nil {
			t.Fatal(err)
		}
		dig, ok := g.p.ReplierFrom(digest.Delivery)
		if !ok {
			t.Fatal("digest spec not rebuilt")
		}
		for _, text := range []string{"SKIP", "**摘要**"} {
			if _, err := dig.Deliver(context.Background(), msg.Outbound{Text: text}); err != nil {
				t.Fatal(err)
			}
		}
		sent := g.sent.list()
		var got []msg.Outbound
		for _, out := range sent {
			if out.Text == "答案" || out.Text == "摘要" {
				got = append(got, out)
			}
		}
		if len(got) != 2 {
			t.Fatalf("sent %+v", sent)
		}
		if got[0].ReplyTo != "1" || len(got[0].Mentionable) == 0 {
			t.Errorf("the realtime reply quotes its message and may mention its people: %+v", got[0])
		}
		if got[1].ReplyTo != "" || !got[1].NoMentions || got[1].Peer != realtime.Message.Peer {
			t.Errorf("the digest goes to the chat, flattened, pinging no one: %+v", got[1])
		}
		if _, ok := g.p.ReplierFrom([]byte("not json")); ok {
			t.Error("a broken spec was rebuilt")
		}
	})
}
