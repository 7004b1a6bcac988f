package pipeline

import (
	"encoding/json"

	"github.com/pincerbot/pincer/internal/channel"
	"github.com/pincerbot/pincer/internal/msg"
)

// delivery is how a turn's reply goes out, kept with the turn so that its
// reply path can be rebuilt after a restart (see Pipeline.ReplierFrom).
type delivery struct {
	// Answers is the message the reply answers (quoted, its sender
	// mentionable); empty for a digest, which goes to the chat.
	Answers *answered `json:"answers,omitempty"`
	// Chat is where a digest goes.
	Account     msg.AccountID `json:"account"`
	Peer        msg.Peer      `json:"peer"`
	Flatten     bool          `json:"flatten,omitempty"`
	NoMentions  bool          `json:"noMentions,omitempty"`
	Skip        bool          `json:"skip,omitempty"`
	Mentionable []msg.Sender  `json:"mentionable,omitempty"`
}

// answered is what a rebuilt replier needs of the message it answers.
type answered struct {
	ID      msg.MessageID `json:"id"`
	Channel msg.ChannelID `json:"channel"`
	Sender  msg.Sender    `json:"sender"`
}

// replyDelivery describes a reply to m through filtered f.
func replyDelivery(m msg.Message, f *filtered) json.RawMessage {
	return encodeDelivery(delivery{
		Answers: &answered{ID: m.ID, Channel: m.Channel, Sender: m.Sender},
		Account: m.Account, Peer: m.Peer, Flatten: f.flatten, NoMentions: f.noMentions, Mentionable: f.mentionable,
	})
}

// chatDelivery describes a digest's delivery through r.
func chatDelivery(r *peerReplier) json.RawMessage {
	return encodeDelivery(delivery{Account: r.account, Peer: r.peer, Flatten: r.flatten, Skip: r.skip, NoMentions: true})
}

func encodeDelivery(d delivery) json.RawMessage {
	b, err := json.Marshal(d)
	if err != nil {
		return nil // every field encodes; a turn without a spec is not journaled
	}
	return b
}

// ReplierFrom rebuilds the reply path of a turn from its delivery spec, as
// the turn's flush made it: for turns resumed after a restart. False when
// the spec cannot be read or the pipeline cannot answer messages.
func (p *Pipeline) ReplierFrom(spec json.RawMessage) (channel.Replier, bool) {
	var d delivery
	if json.Unmarshal(spec, &d) != nil {
		return nil, false
	}
	if d.Answers == nil {
		return &peerReplier{send: p.opts.Send, account: d.Account, peer: d.Peer, flatten: d.Flatten, skip: d.Skip}, true
	}
	if p.opts.ReplierFor == nil {
		return nil, false
	}
	m := msg.Message{ID: d.Answers.ID, Channel: d.Answers.Channel, Account: d.Account, Peer: d.Peer, Sender: d.Answers.Sender}
	return &filtered{Wrapper: channel.Wrapper{Replier: p.opts.ReplierFor(m)}, flatten: d.Flatten, noMentions: d.NoMentions, mentionable: d.Mentionable}, true
}
