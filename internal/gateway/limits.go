package gateway

import (
	"github.com/pincerbot/pincer/internal/config"
	"github.com/pincerbot/pincer/internal/limits"
	"github.com/pincerbot/pincer/internal/msg"
)

// limitSettings turns the limits section into the caps of every message;
// nil when it sets none.
func limitSettings(c config.Limits) func(msg.Message) limits.Settings {
	if c.Zero() {
		return nil
	}
	s := limits.Settings{
		PerUser: limits.Limit{MessagesPerMinute: c.PerUser.MessagesPerMinute, TokensPerDay: c.PerUser.TokensPerDay},
		PerChat: limits.Limit{MessagesPerMinute: c.PerChat.MessagesPerMinute, TokensPerDay: c.PerChat.TokensPerDay},
	}
	return func(msg.Message) limits.Settings { return s }
}
