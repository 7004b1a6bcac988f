package feishu

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/pincerbot/pincer/internal/channel/feishu/larkevent"
	"github.com/pincerbot/pincer/internal/channel/feishu/larkmsg"
	"github.com/pincerbot/pincer/internal/msg"
)

// Chat types of receive events.
const (
	chatP2P = "p2p"
)

// nameTimeout bounds the look-up of a sender's name while taking a
// message in; the message goes on without a name when it runs out.
const nameTimeout = 2 * time.Second

// normalize turns a receive event into a msg.Message: its peer (the group
// chat, or the other user of a direct chat), sender, text with the
// platform's placeholders, real mentions and what it quotes.
func (a *Account) normalize(ctx context.Context, ev larkevent.MessageReceive) (msg.Message, bool) {
	m := msg.Message{
		ID: msg.MessageID(ev.MessageID), Channel: ChannelID, Account: a.opts.ID,
		Sender: msg.Sender{ID: msg.UserID(ev.SenderOpenID), IsBot: ev.SenderType == "app"},
		Time:   time.UnixMilli(ev.CreateTime),
	}
	if m.Sender.ID == "" {
		m.Sender.ID = msg.UserID(firstNonEmpty(ev.SenderUnionID, ev.SenderUserID, "anonymous"))
	}
	if ev.ChatType == chatP2P {
		m.Peer = msg.Peer{Kind: msg.Direct, ID: string(m.Sender.ID)}
	} else {
		m.Peer = msg.Peer{Kind: msg.Group, ID: ev.ChatID}
	}
	mentions := make([]larkmsg.Mention, 0, len(ev.Mentions))
	self := string(a.Self())
	selfName := ""
	for _, mn := range ev.Mentions {
		mentions = append(mentions, larkmsg.Mention{Key: mn.Key, ID: mn.OpenID, IDType: "open_id", Name: mn.Name})
		switch {
		case mn.Key == "@_all" || mn.OpenID == "all":
			m.AtAll = true
		case mn.OpenID != "":
			m.Mentions = append(m.Mentions, msg.UserID(mn.OpenID))
			if mn.OpenID == self {
				selfName = mn.Name
			}
		}
	}
	if larkmsg.MentionsAll(ev.MessageType, ev.Content, mentions) {
		m.AtAll = true
	}
	// A post may carry at tags with no entry in mentions.
	for _, id := range larkmsg.MentionedOpenIDs(ev.MessageType, ev.Content, mentions) {
		if id != "" && id != "all" && !m.Mentioned(msg.UserID(id)) {
			m.Mentions = append(m.Mentions, msg.UserID(id))
		}
	}
	m.Text = larkmsg.Render(ev.MessageType, ev.Content, ev.MessageID, mentions)
	if selfName != "" && strings.HasPrefix(strings.TrimSpace(m.Text), "@"+selfName) {
		// The bot addressed first ("@bot question"): the pipeline strips
		// it from the text the agent reads.
		m.Segments = append(m.Segments, msg.Segment{Kind: msg.SegAt, Target: msg.UserID(self), Name: selfName})
	}
	switch ev.MessageType {
	case "image":
		m.Segments = append(m.Segments, msg.Segment{Kind: msg.SegImage, ID: ev.MessageID})
	case "merge_forward":
		m.ForwardIDs = []msg.ForwardID{msg.ForwardID(ev.MessageID)}
		m.Segments = append(m.Segments, msg.Segment{Kind: msg.SegForward, ID: ev.MessageID})
	}
	m.Segments = append(m.Segments, msg.Text(m.Text))
	// In a topic, parent_id == root_id only says where the reply sits; it
	// is not a quote.
	if ev.ParentID != "" && !(ev.ThreadID != "" && ev.ParentID == ev.RootID) {
		m.ReplyTo = msg.MessageID(ev.ParentID)
	}
	if !m.Sender.IsBot && strings.HasPrefix(string(m.Sender.ID), "ou_") {
		nctx, cancel := context.WithTimeout(ctx, nameTimeout)
		m.Sender.Name = a.names.name(nctx, string(m.Sender.ID), mentions)
		cancel()
	}
	return m, true
}

func firstNonEmpty(ss ...string) string {
	for _, s := range ss {
		if s != "" {
			return s
		}
	}
	return ""
}

// parseMillis parses a millisecond timestamp as the API writes it.
func parseMillis(s string) (int64, error) { return strconv.ParseInt(strings.TrimSpace(s), 10, 64) }
