package feishu

import (
	"context"
	"encoding/json"
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
// message in (the platform waits three seconds for the webhook's answer);
// the message goes on without a name when it runs out.
const nameTimeout = time.Second

// normalize turns a receive event into a msg.Message: its peer (the group
// chat, or the other user of a direct chat), sender, text with the
// platform's placeholders, real mentions and what it quotes.
func (a *Account) normalize(ctx context.Context, ev larkevent.MessageReceive) msg.Message {
	peer, sender := eventPeer(ev)
	m := msg.Message{
		ID: msg.MessageID(ev.MessageID), Channel: ChannelID, Account: a.opts.ID, Peer: peer,
		Sender: msg.Sender{ID: sender, IsBot: ev.SenderType == "app"},
		Time:   time.UnixMilli(ev.CreateTime),
	}
	mentions := make([]larkmsg.Mention, 0, len(ev.Mentions))
	self := string(a.Self())
	for _, mn := range ev.Mentions {
		mentions = append(mentions, larkmsg.Mention{Key: mn.Key, ID: mn.OpenID, IDType: "open_id", Name: mn.Name})
		switch {
		case mn.Key == "@_all" || mn.OpenID == "all":
			m.AtAll = true
		case mn.OpenID != "" && !m.Mentioned(msg.UserID(mn.OpenID)):
			m.Mentions = append(m.Mentions, msg.UserID(mn.OpenID))
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
	m.Text = renderContent(ev.MessageType, ev.Content, ev.MessageID, mentions)
	if m.Mentioned(msg.UserID(self)) {
		if token, ok := leadingMention(ev, mentions, self, m.Text); ok {
			// The bot addressed first ("@bot question"): the pipeline
			// strips it from the text the agent reads.
			m.Segments = append(m.Segments, msg.Segment{Kind: msg.SegAt, Target: msg.UserID(self), Name: strings.TrimPrefix(token, "@")})
		}
	}
	m.Segments = append(m.Segments, mediaSegments(ev.MessageType, ev.Content, ev.MessageID)...)
	switch ev.MessageType {
	case "merge_forward":
		m.ForwardIDs = []msg.ForwardID{msg.ForwardID(ev.MessageID)}
		m.Segments = append(m.Segments, msg.Segment{Kind: msg.SegForward, ID: ev.MessageID})
	case "interactive":
		// The event carries a degraded card; the sender's is fetched
		// before a turn reads it.
		m.Deferred = []string{cardKey(ev.MessageID)}
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
	return m
}

// eventPeer is the chat of a receive event (the group, or the other user
// of a direct chat) and its sender: the open_id, else another id.
func eventPeer(ev larkevent.MessageReceive) (msg.Peer, msg.UserID) {
	sender := msg.UserID(firstNonEmpty(ev.SenderOpenID, ev.SenderUnionID, ev.SenderUserID, "anonymous"))
	if ev.ChatType == chatP2P {
		return msg.Peer{Kind: msg.Direct, ID: string(sender)}, sender
	}
	return msg.Peer{Kind: msg.Group, ID: ev.ChatID}, sender
}

// renderContent is the text of a message. A merged forward reads as the
// platform's fixed text until it is expanded, and keeps it when the
// expansion fails (the spec's choice: the agent sees what the user's
// client showed, never an error).
func renderContent(msgType, content, id string, mentions []larkmsg.Mention) string {
	if msgType == "merge_forward" {
		return larkmsg.MergeForwardText
	}
	return larkmsg.Render(msgType, content, id, mentions)
}

// selfMark stands for the bot's name in the probe rendering of
// leadingMention: a private-use character no name or text carries.
const selfMark = "\uE000pincer\uE000"

// leadingMention reports whether the message text starts with the bot's
// mention, and the text of that mention ("@name"). It renders the message
// once more with the bot's mention marked, so the answer is by open_id,
// never by name: a user whose name starts with the bot's is not the bot.
func leadingMention(ev larkevent.MessageReceive, mentions []larkmsg.Mention, self, text string) (string, bool) {
	probe := make([]larkmsg.Mention, 0, len(mentions)+1)
	found := false
	for _, mn := range mentions {
		if mn.ID == self {
			mn.Name, found = selfMark, true
		}
		probe = append(probe, mn)
	}
	if !found {
		// A post's at tag with the bot's open_id and no mention entry.
		probe = append(probe, larkmsg.Mention{ID: self, IDType: "open_id", Name: selfMark})
	}
	marked := strings.TrimSpace(larkmsg.Render(ev.MessageType, ev.Content, ev.MessageID, probe))
	rest, ok := strings.CutPrefix(marked, "@"+selfMark)
	if !ok {
		return "", false
	}
	text = strings.TrimSpace(text)
	if !strings.Contains(rest, selfMark) && strings.HasSuffix(text, rest) {
		// The mention as the text shows it: what comes before the rest.
		if token := text[:len(text)-len(rest)]; strings.HasPrefix(token, "@") {
			return token, true
		}
	}
	for _, mn := range mentions {
		if mn.ID == self && strings.TrimSpace(mn.Name) != "" && strings.HasPrefix(text, "@"+strings.TrimSpace(mn.Name)) {
			return "@" + strings.TrimSpace(mn.Name), true
		}
	}
	return "@" + self, strings.HasPrefix(text, "@"+self)
}

// mediaSegments are the downloadable media of a message, for
// channel.Downloader: an image, a voice note, a video or a file, each by
// the key the resource API takes (the message id when its content names
// none), and the images embedded in a post. Stickers and folders cannot
// be downloaded and have none.
func mediaSegments(msgType, content, id string) []msg.Segment {
	var c struct {
		ImageKey string `json:"image_key"`
		FileKey  string `json:"file_key"`
		FileName string `json:"file_name"`
	}
	switch msgType {
	case "image", "audio", "media", "video", "file":
		_ = json.Unmarshal([]byte(content), &c)
	case "post":
		var out []msg.Segment
		for _, k := range larkmsg.PostImageKeys(content) {
			out = append(out, msg.Segment{Kind: msg.SegImage, ID: k})
		}
		return out
	default:
		return nil
	}
	switch msgType {
	case "image":
		return []msg.Segment{{Kind: msg.SegImage, ID: firstNonEmpty(c.ImageKey, id)}}
	case "audio":
		return []msg.Segment{{Kind: msg.SegVoice, ID: firstNonEmpty(c.FileKey, id)}}
	case "media", "video":
		return []msg.Segment{{Kind: msg.SegVideo, ID: firstNonEmpty(c.FileKey, id), Name: c.FileName}}
	}
	return []msg.Segment{{Kind: msg.SegFile, ID: firstNonEmpty(c.FileKey, id), Name: c.FileName}}
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
