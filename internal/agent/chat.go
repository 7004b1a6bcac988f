package agent

import (
	"context"

	"github.com/pincerbot/pincer/internal/msg"
)

// Chat is the conversation a run answers, as its tools see it.
type Chat struct {
	Channel msg.ChannelID
	Account msg.AccountID
	Peer    msg.Peer
}

type chatKey struct{}

// WithChat returns a context whose tools know the chat the run answers.
func WithChat(ctx context.Context, c Chat) context.Context {
	return context.WithValue(ctx, chatKey{}, c)
}

// ChatOf returns the chat a tool call serves, if the run said.
func ChatOf(ctx context.Context) (Chat, bool) {
	c, ok := ctx.Value(chatKey{}).(Chat)
	return c, ok
}
