// Package config loads pincer's configuration: one JSON5 file with ${ENV}
// substitution and strict keys, layered over built-in defaults. Every section
// knows its defaults and validates itself; problems name the full key path.
package config

import (
	"errors"
	"runtime"
	"time"

	"github.com/pincerbot/pincer/internal/texts"
)

// Config is the whole configuration. The zero value is not useful; start
// from Default or Load.
type Config struct {
	Gateway  Gateway  `json:"gateway"`
	Log      Log      `json:"log"`
	Store    Store    `json:"store"`
	Models   Models   `json:"models"`
	Agents   Agents   `json:"agents"`
	Messages Messages `json:"messages"`
	Commands Commands `json:"commands"`
	Session  Session  `json:"session"`
	Channels Channels `json:"channels"`
	Trace    Trace    `json:"trace"`
	Media    Media    `json:"media"`
	UI       UI       `json:"ui"`
	Limits   Limits   `json:"limits"`
	Cluster  Cluster  `json:"cluster"`
}

// Default returns the built-in configuration that pincer runs on when no
// file is given: SQLite under ./data, web chat on 127.0.0.1:18789 and the
// preview agent.
func Default() Config {
	return Config{
		Gateway: Gateway{Listen: "127.0.0.1:18789", ShutdownTimeoutMs: 30000},
		Log:     Log{Level: "info", Format: "text"},
		Store:   Store{Driver: "sqlite", Path: "./data/pincer.db", BusyTimeoutMs: 5000, KeepMessagesHours: 168},
		Models:  Models{Providers: map[string]Provider{}},
		Agents: Agents{Defaults: AgentDefaults{
			Workspace: "./data/workspace", MaxTokens: 4096, ContextTokens: 128000, Identity: "pincer",
			FirstTokenTimeoutMs: defaultFirstTokenTimeoutMs, TurnTimeoutMs: defaultTurnTimeoutMs,
			HumanDelay:     HumanDelay{Mode: "off", MinMs: 800, MaxMs: 2500},
			BlockStreaming: BlockStreaming{MinChars: 800, MaxChars: 1200, BreakOn: "paragraph", IdleMs: 1000},
			Envelope:       Envelope{Timezone: "local"},
			MaxConcurrent:  min(16, max(8, runtime.NumCPU())),
		}},
		Messages: Messages{
			Inbound: Inbound{ByChannel: map[string]int{}, DedupTTLMs: defaultDedupTTLMs, MaxChars: defaultInboundMaxChars, Queue: defaultInboundQueue},
			Queue:   Queue{Mode: "steer", Cap: 20, Drop: "summarize", DebounceMs: 500, ByChannel: map[string]string{}},
			Outbox:  Outbox{MaxAgeMs: defaultOutboxMaxAgeMs},
		},
		// The web chat is the operator's console (loopback, or behind the
		// gateway token), so it owns the commands; other channels may run
		// the harmless ones.
		Commands: Commands{AllowFrom: []string{"*"}, OwnerAllowFrom: []string{"webchat:*"}},
		Session:  Session{AutoCompact: true, DMScope: "per-peer", GroupScope: "per-group"},
		Channels: Channels{Webchat: DefaultWebchat(), OneBot: DefaultOneBot(), Feishu: DefaultFeishu()},
		Trace:    Trace{PerAccount: 500, KeepHours: 72},
		Media:    DefaultMedia(),
		UI:       UI{Locale: string(texts.Default)},
		Cluster:  Cluster{Partitions: DefaultClusterPartitions, LeaseTTLMs: DefaultLeaseTTLMs},
	}
}

// Validate checks every section and returns all problems joined, each a
// *FieldError naming its key path.
func (c *Config) Validate() error {
	return errors.Join(
		nest("gateway", c.Gateway.Validate()),
		nest("log", c.Log.Validate()),
		nest("store", c.Store.Validate()),
		nest("models", c.Models.Validate()),
		nest("agents", c.Agents.Validate(&c.Models)),
		nest("messages", c.Messages.Validate()),
		nest("messages.inbound", c.Messages.Inbound.validateWebchat(c.Channels.Webchat)),
		nest("commands", c.Commands.Validate()),
		nest("session", c.Session.Validate()),
		nest("channels", c.Channels.Validate()),
		nest("channels.onebot", c.Channels.OneBot.validateExposed(c.Gateway)),
		nest("channels", c.validateChats()),
		nest("trace", c.Trace.Validate()),
		nest("media", c.Media.Validate(&c.Models)),
		nest("ui", c.UI.Validate()),
		nest("limits", c.Limits.Validate()),
		nest("cluster", c.Cluster.Validate()),
		c.validateCluster(),
	)
}

// ms converts a millisecond setting to a duration.
func ms(n int) time.Duration { return time.Duration(n) * time.Millisecond }
