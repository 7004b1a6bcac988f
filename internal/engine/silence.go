package engine

import (
	"github.com/pincerbot/pincer/internal/msg"
	"github.com/pincerbot/pincer/internal/reply"
)

// SilenceGuide tells the model of a group chat that it may stay silent:
// a group hears many people, and not every message that reaches the
// model asks for an answer from it. A direct chat gets no such guide (a
// bare token there is still not sent).
const SilenceGuide = "This is a group chat: many people talk here, not only to you. " +
	"When a message needs no answer from you (it is not meant for you, or you have nothing to add), " +
	"reply with exactly " + reply.SilentToken + " and nothing else, and nothing is sent."

// systemFor is the system prompt of a turn in m's chat: the chat's, with
// the silence guide in a group.
func systemFor(cs *ChatSettings, m msg.Message) string {
	system := cs.System()
	if m.Peer.Kind != msg.Group {
		return system
	}
	if system == "" {
		return SilenceGuide
	}
	return system + "\n\n" + SilenceGuide
}
