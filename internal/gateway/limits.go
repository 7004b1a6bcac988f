package gateway

import (
	"github.com/pincerbot/pincer/internal/chatconf"
	"github.com/pincerbot/pincer/internal/config"
	"github.com/pincerbot/pincer/internal/limits"
)

// limitsOf turns a limits section into the limiter's caps.
func limitsOf(c config.Limits) limits.Settings {
	return limits.Settings{
		PerUser: limits.Limit{MessagesPerMinute: c.PerUser.MessagesPerMinute, TokensPerDay: c.PerUser.TokensPerDay},
		PerChat: limits.Limit{MessagesPerMinute: c.PerChat.MessagesPerMinute, TokensPerDay: c.PerChat.TokensPerDay},
	}
}

// chatLimits are the caps of a chat's view, each named by the key of the
// chat entry that set it (the top-level key when none did).
func chatLimits(v *chatconf.View) limits.Settings {
	s := limitsOf(v.Limits)
	key := func(p string) string {
		if layer := v.Origin(p); layer != "" && layer != "default" && layer != "limits" {
			return layer + "." + p
		}
		return ""
	}
	s.PerUser.MessagesKey, s.PerUser.TokensKey = key("limits.perUser.messagesPerMinute"), key("limits.perUser.tokensPerDay")
	s.PerChat.MessagesKey, s.PerChat.TokensKey = key("limits.perChat.messagesPerMinute"), key("limits.perChat.tokensPerDay")
	return s
}
