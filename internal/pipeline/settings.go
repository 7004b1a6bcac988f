package pipeline

import (
	"time"

	"github.com/pincerbot/pincer/internal/trigger"
)

// Settings are an account's receive settings.
type Settings struct {
	Mention  trigger.Rules
	Realtime RealtimeSettings
	Digest   DigestSettings
	Summary  SummarySettings
	History  HistorySettings
	// MaxBotReplyChain stops bot-to-bot loops: in a chat, a message sent
	// by another bot triggers at most this many replies in a row, until a
	// person speaks; 0 sets no limit.
	MaxBotReplyChain int
}

// RealtimeSettings configure burst windows.
type RealtimeSettings struct {
	Enabled           bool
	Window, MaxWindow time.Duration
	MaxMessages       int
	MaxChars          int
}

// DigestSettings configure timed digests.
type DigestSettings struct {
	Enabled                  bool
	Interval                 time.Duration
	MaxMessages, MinMessages int
	Prompt                   string
	// Scope is group, direct or all; Peers limits digests to some chats.
	Scope              string
	Peers              []string
	MaxTranscriptChars int
}

// SummarySettings configure /summary.
type SummarySettings struct {
	Enabled            bool
	Commands           []string
	Count, MaxCount    int
	Prompt             string
	Scope              string
	Peers              []string
	MaxTranscriptChars int
}

// HistorySettings configure the reply history; MaxAge 0 keeps any age.
type HistorySettings struct {
	Enabled     bool
	MaxMessages int
	MaxChars    int
	MaxAge      time.Duration
}
