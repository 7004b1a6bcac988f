package feishu

import (
	"context"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/pincerbot/pincer/internal/channel/feishu/feishusim"
	"github.com/pincerbot/pincer/internal/msg"
	"github.com/pincerbot/pincer/internal/trigger"
)

// segAts returns the message's mention segments.
func segAts(m msg.Message) []msg.Segment {
	var out []msg.Segment
	for _, s := range m.Segments {
		if s.Kind == msg.SegAt {
			out = append(out, s)
		}
	}
	return out
}

// TestNormalizeTextMentions: @_user_N keys read as @name, the bot is
// mentioned by its open_id, the leading @bot is a mention segment the
// pipeline strips, and the sender is named through basic_batch.
func TestNormalizeTextMentions(t *testing.T) {
	r := newRig(t, nil)
	r.run()
	m := r.take(feishusim.Message{
		ChatID: groupChat, SenderID: userA, Content: `{"text":"@_user_1 帮我总结一下 @_user_2 的方案"}`,
		Mentions: []feishusim.Mention{{Key: "@_user_1", ID: botID, Name: botName}, {Key: "@_user_2", ID: userB, Name: "李四"}},
	})
	if want := "@" + botName + " 帮我总结一下 @李四 的方案"; m.Text != want {
		t.Errorf("text %q, want %q", m.Text, want)
	}
	if !m.Mentioned(botID) || !m.Mentioned(userB) || m.AtAll {
		t.Errorf("mentions %v, all %v", m.Mentions, m.AtAll)
	}
	if m.Peer != (msg.Peer{Kind: msg.Group, ID: groupChat}) || m.Sender.ID != userA || m.Sender.Name != "张三" {
		t.Errorf("peer %v, sender %+v", m.Peer, m.Sender)
	}
	if got := trigger.StripLeadingMention(m, botID); got != "帮我总结一下 @李四 的方案" {
		t.Errorf("stripped %q", got)
	}
	if ats := segAts(m); len(ats) != 1 || ats[0].Target != botID || ats[0].Name != botName {
		t.Errorf("at segments %+v", ats)
	}
}

// TestNormalizeBotNeverByName: a user who has the bot's display name is
// not the bot, and neither is one whose name starts with it.
func TestNormalizeBotNeverByName(t *testing.T) {
	r := newRig(t, nil)
	r.run()
	m := r.take(feishusim.Message{
		ChatID: groupChat, SenderID: userA, Content: `{"text":"@_user_1 你好"}`,
		Mentions: []feishusim.Mention{{Key: "@_user_1", ID: userB, Name: botName}},
	})
	if m.Mentioned(botID) || len(segAts(m)) != 0 {
		t.Errorf("a namesake of the bot counted as the bot: %v %+v", m.Mentions, m.Segments)
	}
	// The bot mentioned second, after a user whose name starts with its
	// own: it is mentioned, not addressed first.
	m = r.take(feishusim.Message{
		ChatID: groupChat, SenderID: userA, Content: `{"text":"@_user_1 看 @_user_2"}`,
		Mentions: []feishusim.Mention{{Key: "@_user_1", ID: userB, Name: botName + "2"}, {Key: "@_user_2", ID: botID, Name: botName}},
	})
	if !m.Mentioned(botID) {
		t.Errorf("the bot is mentioned: %v", m.Mentions)
	}
	if ats := segAts(m); len(ats) != 0 {
		t.Errorf("leading mention segment for a namesake: %+v", ats)
	}
	if got := trigger.StripLeadingMention(m, botID); got != m.Text {
		t.Errorf("a namesake's mention was stripped: %q", got)
	}
}

// TestNormalizeAtAll: @all sets AtAll and never mentions the bot, with
// no mention entry or with a broadcast one.
func TestNormalizeAtAll(t *testing.T) {
	r := newRig(t, nil)
	r.run()
	for i, mentions := range [][]feishusim.Mention{nil, {{Key: "@_all", ID: "all", Name: "所有人"}}} {
		// Each a minute apart: the same text in the same millisecond is
		// one message redelivered (the content key).
		m := r.take(feishusim.Message{ChatID: groupChat, SenderID: userA, Content: `{"text":"@_all 下午开会"}`, Mentions: mentions,
			CreateTime: time.Now().Add(time.Duration(i) * time.Minute)})
		if !m.AtAll || m.Mentioned(botID) || slices.Contains(m.Mentions, "all") {
			t.Errorf("mentions %v: all %v, mentions %v", mentions, m.AtAll, m.Mentions)
		}
		if m.Text != "@所有人 下午开会" {
			t.Errorf("text %q", m.Text)
		}
	}
}

// TestNormalizePostAtTags: a post's at tags mention the bot, with a
// mention entry or none (the platform sometimes sends empty mentions),
// and a post that starts with the bot's at tag addresses it first.
func TestNormalizePostAtTags(t *testing.T) {
	r := newRig(t, nil)
	r.run()
	m := r.take(feishusim.Message{
		ChatID: groupChat, SenderID: userA, MsgType: "post",
		Content: `{"title":"","content":[[{"tag":"at","user_id":"` + botID + `","user_name":"` + botName + `"},{"tag":"text","text":" 请看"}],[{"tag":"a","text":"看板","href":"https://example.com/b"}]]}`,
	})
	if !m.Mentioned(botID) {
		t.Errorf("at tag without a mention entry: mentions %v", m.Mentions)
	}
	if got := trigger.StripLeadingMention(m, botID); got != "请看\n[看板](https://example.com/b)" {
		t.Errorf("stripped %q (text %q)", got, m.Text)
	}
	m = r.take(feishusim.Message{
		ChatID: groupChat, SenderID: userA, MsgType: "post",
		Content:  `{"zh_cn":{"title":"周报","content":[[{"tag":"text","text":"进度 "},{"tag":"at","user_id":"@_user_1","user_name":"张三"}]]}}`,
		Mentions: []feishusim.Mention{{Key: "@_user_1", ID: userB, Name: "李四"}},
	})
	if m.Mentioned(botID) || !m.Mentioned(userB) || m.Text != "周报\n进度 @李四" {
		t.Errorf("locale post: text %q, mentions %v", m.Text, m.Mentions)
	}
}

// TestNormalizeDirect: a direct chat is the peer of its user, whatever
// its chat id.
func TestNormalizeDirect(t *testing.T) {
	r := newRig(t, nil)
	r.run()
	m := r.take(feishusim.Message{ChatID: p2pChat, Content: `{"text":"在吗"}`})
	if m.Peer != (msg.Peer{Kind: msg.Direct, ID: userA}) || m.Sender.ID != userA || m.Text != "在吗" {
		t.Errorf("peer %v sender %v text %q", m.Peer, m.Sender, m.Text)
	}
}

// TestNormalizeQuotes: in a topic, parent_id == root_id only places the
// message; a real parent is a quote, and so is any parent outside
// topics.
func TestNormalizeQuotes(t *testing.T) {
	r := newRig(t, nil)
	r.run()
	root, err := r.sim.AddMessage(feishusim.Message{ChatID: topicChat, SenderID: userB, ThreadID: "omt_quotes", Content: `{"text":"话题"}`})
	must(t, err)
	other, err := r.sim.AddMessage(feishusim.Message{ChatID: topicChat, SenderID: userB, ThreadID: "omt_quotes", RootID: root, ParentID: root, Content: `{"text":"一楼"}`})
	must(t, err)
	m := r.take(feishusim.Message{ChatID: topicChat, SenderID: userA, ThreadID: "omt_quotes", RootID: root, ParentID: root, Content: `{"text":"跟帖"}`})
	if m.ReplyTo != "" {
		t.Errorf("a topic reply is no quote: %q", m.ReplyTo)
	}
	m = r.take(feishusim.Message{ChatID: topicChat, SenderID: userA, ThreadID: "omt_quotes", RootID: root, ParentID: other, Content: `{"text":"回一楼"}`})
	if m.ReplyTo != msg.MessageID(other) {
		t.Errorf("quote %q, want %q", m.ReplyTo, other)
	}
	plain, err := r.sim.AddMessage(feishusim.Message{ChatID: groupChat, SenderID: userB, Content: `{"text":"原话"}`})
	must(t, err)
	m = r.take(feishusim.Message{ChatID: groupChat, SenderID: userA, RootID: plain, ParentID: plain, Content: `{"text":"引用"}`})
	if m.ReplyTo != msg.MessageID(plain) {
		t.Errorf("quote outside a topic %q, want %q", m.ReplyTo, plain)
	}
}

// TestTopicAnsweredNeedsNoMention: once the bot has replied in a topic,
// the reply's topic is in the Sent log and the topic's later messages
// count as mentioning the bot; another topic's do not.
func TestTopicAnsweredNeedsNoMention(t *testing.T) {
	st := openStore(t, filepath.Join(t.TempDir(), "p.db"))
	r := newRig(t, func(o *Options) { o.Sent = st })
	r.run()
	root := r.take(feishusim.Message{
		ChatID: topicChat, SenderID: userA, ThreadID: "omt_answered", Content: `{"text":"@_user_1 问题"}`,
		Mentions: []feishusim.Mention{{Key: "@_user_1", ID: botID, Name: botName}},
	})
	plain := func(thread string) msg.Message {
		return r.take(feishusim.Message{ChatID: topicChat, SenderID: userB, ThreadID: thread, RootID: string(root.ID), ParentID: string(root.ID), Content: `{"text":"补充"}`})
	}
	if m := plain("omt_answered"); m.Mentioned(botID) {
		t.Fatal("a topic the bot has not answered in needs an @")
	}
	rep := r.taker.all()[0].r
	if _, err := rep.Deliver(context.Background(), msg.Outbound{ID: "turn#0", Peer: root.Peer, Text: "答案"}); err != nil {
		t.Fatal(err)
	}
	ok, err := st.WasSent(context.Background(), ChannelID, msg.DefaultAccount, threadKey("omt_answered"))
	if err != nil || !ok {
		t.Fatalf("the reply's topic is not recorded (%v)", err)
	}
	if m := plain("omt_answered"); !m.Mentioned(botID) {
		t.Error("a topic the bot answered in needs no @")
	}
	if m := plain("omt_other"); m.Mentioned(botID) {
		t.Error("another topic counted as answered")
	}
}

// TestDropOwnAndOld: the bot's own messages, and messages created more
// than two seconds before start-up, are not taken.
func TestDropOwnAndOld(t *testing.T) {
	r := newRig(t, nil)
	r.run()
	r.postOK(feishusim.Message{ChatID: groupChat, SenderID: botID, SenderType: feishusim.SenderApp, Content: `{"text":"我说的"}`})
	r.postOK(feishusim.Message{ChatID: groupChat, SenderID: userA, Content: `{"text":"旧"}`, CreateTime: r.a.started.Add(-3 * time.Second)})
	if n := r.taker.count(); n != 0 {
		t.Fatalf("%d taken, want none", n)
	}
	m := r.take(feishusim.Message{ChatID: groupChat, SenderID: userA, Content: `{"text":"刚好"}`, CreateTime: r.a.started.Add(-time.Second)})
	if m.Text != "刚好" {
		t.Errorf("text %q", m.Text)
	}
}
