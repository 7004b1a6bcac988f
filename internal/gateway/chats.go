package gateway

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pincerbot/pincer/internal/agent"
	"github.com/pincerbot/pincer/internal/chatconf"
	"github.com/pincerbot/pincer/internal/config"
	"github.com/pincerbot/pincer/internal/engine"
	"github.com/pincerbot/pincer/internal/limits"
	"github.com/pincerbot/pincer/internal/llm"
	"github.com/pincerbot/pincer/internal/media"
	"github.com/pincerbot/pincer/internal/msg"
	"github.com/pincerbot/pincer/internal/pipeline"
	"github.com/pincerbot/pincer/internal/reply"
)

// chats serves every chat's settings in the forms the engine, the receive
// pipelines and the QQ pacers read them, derived once per configuration
// from the views of chatconf: a message costs a map lookup.
type chats struct {
	resolver *chatconf.Resolver
	table    atomic.Pointer[chatTable]
	// workspace and the default system prompt (system, whose text is
	// basePrompt) build the chats' prompts.
	workspace  string
	system     func() string
	basePrompt string
	// describe builds the describer of an image model chain other than
	// agents.defaults.imageModel (baseImage); describers keeps them, by
	// chain, across configurations.
	describe   func(config.ModelChoice) (*media.Describer, error)
	baseImage  string
	mu         sync.Mutex
	describers map[string]*media.Describer
	log        *slog.Logger
}

// chatTable holds the derived settings of one configuration, by address
// (ID chatconf.Any for the chats without an entry of their own).
type chatTable struct {
	by map[chatconf.Address]*chatSettings
}

// chatSettings are one view in the forms its readers take.
type chatSettings struct {
	view   *chatconf.View
	engine *engine.ChatSettings
	rules  *pipeline.ChatRules
	// gap is the QQ send gap, set by a chat entry when gapSetting is not
	// empty.
	gap        time.Duration
	gapSetting string
	// describer is the chat's own image model, nil for the default one.
	describer *media.Describer
	// limits are the chat's caps.
	limits limits.Settings
}

// newChats derives the settings of cfg's chats; system is the prompt of
// chats that keep agents.defaults.systemPrompt, describe builds the
// describers of chats with an image model of their own (nil: none is
// built).
func newChats(cfg config.Config, system func() string, describe func(config.ModelChoice) (*media.Describer, error), log *slog.Logger) (*chats, error) {
	r, err := chatconf.NewResolver(cfg)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	d := cfg.Agents.Defaults
	c := &chats{
		resolver: r, workspace: d.Workspace, system: system, basePrompt: d.SystemPrompt,
		describe: describe, baseImage: chainKey(d.ImageModel), describers: map[string]*media.Describer{}, log: log,
	}
	r.OnSwap(func(t *chatconf.Table) { c.table.Store(c.derive(t)) })
	c.table.Store(c.derive(r.Table()))
	return c, nil
}

// swap puts the chat settings of cfg in force for the messages and turns
// that follow (a configuration reloaded while pincer runs); on error the
// settings in force stay. What is not a chat's setting (connections,
// buffers' bounds) is not changed by it. The default system prompt
// (c.system) must say cfg's agents.defaults.systemPrompt already.
func (c *chats) swap(cfg config.Config) error {
	old := c.basePrompt
	c.basePrompt = cfg.Agents.Defaults.SystemPrompt
	if err := c.resolver.Swap(cfg); err != nil {
		c.basePrompt = old
		return fmt.Errorf("config: %w", err)
	}
	return nil
}

// derive builds the settings of every view of t.
func (c *chats) derive(t *chatconf.Table) *chatTable {
	out := &chatTable{by: map[chatconf.Address]*chatSettings{}}
	prompts := map[string]func() string{c.basePrompt: c.system}
	t.Each(func(a chatconf.Address, v *chatconf.View) {
		sys, ok := prompts[v.SystemPrompt]
		if !ok {
			sys = systemPrompt(agent.NewPrompt(v.SystemPrompt, c.workspace), c.log)
			prompts[v.SystemPrompt] = sys
		}
		s := &chatSettings{view: v, engine: engineSettings(v, sys), describer: c.describerOf(a, v.ImageModel), limits: chatLimits(v)}
		if d := s.describer; d != nil {
			s.engine.Describe = func(ctx context.Context, img llm.Image) (string, error) { return d.Describe(ctx, img, "") }
		}
		var warnings []string
		s.rules, warnings = chatRules(v)
		for _, w := range warnings {
			c.log.Warn("config: "+a.String()+" receive.mention: "+w, "chat", a.String())
		}
		if a.Channel == chatconf.OneBot && slices.Contains(v.Layers, v.Origin("sendGapMs")) {
			s.gap, s.gapSetting = time.Duration(v.SendGapMs)*time.Millisecond, v.Origin("sendGapMs")+".sendGapMs"
		}
		out.by[a] = s
	})
	return out
}

// describerOf is the describer of a chat's image model chain, nil for
// the default one.
func (c *chats) describerOf(a chatconf.Address, choice config.ModelChoice) *media.Describer {
	key := chainKey(choice)
	if key == c.baseImage || choice.Primary == "" || c.describe == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if d, ok := c.describers[key]; ok {
		return d
	}
	d, err := c.describe(choice)
	if err != nil {
		c.log.Warn("config: "+a.String()+" imageModel: pictures are described with agents.defaults.imageModel instead", "err", err)
		return nil
	}
	c.describers[key] = d
	return d
}

// chainKey names a model chain.
func chainKey(m config.ModelChoice) string {
	return strings.Join(append([]string{m.Primary}, m.Fallbacks...), ",")
}

// describerFor is the media reader's describerFor.
func (c *chats) describerFor(m msg.Message) *media.Describer {
	if s := c.of(m.Channel, m.Account, m.Peer); s != nil {
		return s.describer
	}
	return nil
}

// of returns the settings of peer's chat on account acct of channel ch,
// nil for a channel or account without settings.
func (c *chats) of(ch msg.ChannelID, acct msg.AccountID, peer msg.Peer) *chatSettings {
	if c == nil {
		return nil
	}
	t := c.table.Load()
	a := chatconf.Address{Channel: string(ch), Account: string(acct), Kind: string(peer.Kind), ID: peer.ID}
	if s, ok := t.by[a]; ok {
		return s
	}
	a.ID = chatconf.Any
	return t.by[a]
}

// engineChat is the engine's Options.Chat.
func (c *chats) engineChat(m msg.Message) *engine.ChatSettings {
	if s := c.of(m.Channel, m.Account, m.Peer); s != nil {
		return s.engine
	}
	return nil
}

// rulesFor is the pipeline's Options.Chat for account acct of ch.
func (c *chats) rulesFor(ch msg.ChannelID, acct msg.AccountID) func(msg.Peer) *pipeline.ChatRules {
	return func(peer msg.Peer) *pipeline.ChatRules {
		if s := c.of(ch, acct, peer); s != nil {
			return s.rules
		}
		return nil
	}
}

// gapFor is a QQ account's onebot.Pacer.For.
func (c *chats) gapFor(acct msg.AccountID) func(msg.Peer) (time.Duration, string, bool) {
	return func(peer msg.Peer) (time.Duration, string, bool) {
		if s := c.of("onebot", acct, peer); s != nil && s.gapSetting != "" {
			return s.gap, s.gapSetting, true
		}
		return 0, "", false
	}
}

// engineSettings are the engine's form of v; sys is its system prompt.
func engineSettings(v *chatconf.View, sys func() string) *engine.ChatSettings {
	models, err := Chain(config.AgentDefaults{Model: v.Model})
	if err != nil {
		models = nil // config.Parse refused the ref: the engine's chain
	}
	lo, hi := v.HumanDelay.Range()
	s := &engine.ChatSettings{
		System: sys, Models: models, Thinking: v.Thinking,
		QueueMode: engine.QueueMode(v.Queue.Mode), QueueCap: v.Queue.Cap,
		HumanDelay: reply.DelayRange{Min: lo, Max: hi}, ResponsePrefix: v.ResponsePrefix,
		ToolAllowed: toolFilter(v.Tools),
	}
	if bs := v.BlockStreaming; bs.Enabled {
		s.Blocks = &reply.ChunkOptions{MinChars: bs.MinChars, MaxChars: bs.MaxChars, BreakOn: reply.Break(bs.BreakOn), Idle: time.Duration(bs.IdleMs) * time.Millisecond}
	}
	return s
}

// toolFilter is the engine's ToolAllowed for a chat's tool lists, nil when
// they limit nothing.
func toolFilter(t config.ChatTools) func(string) bool {
	if len(t.Allow) == 0 && len(t.Deny) == 0 {
		return nil
	}
	allow, deny := set(t.Allow), set(t.Deny)
	return func(name string) bool {
		if _, denied := deny[name]; denied {
			return false
		}
		_, allowed := allow[name]
		return len(allow) == 0 || allowed
	}
}

// chatRules are the pipeline's form of v.
func chatRules(v *chatconf.View) (*pipeline.ChatRules, []string) {
	r := pipeline.ChatRules{
		Silent: !v.Enabled, Why: "the chat is switched off: enabled is false (" + v.Origin("enabled") + ")",
		Receive:       ReceiveSettings(v.Receive),
		DigestAnyChat: slices.Contains(v.Layers, v.Origin("receive.digest.enabled")),
		NoQuote:       !v.Quote.Enabled,
	}
	if len(v.AllowFrom) > 0 || len(v.DenyFrom) > 0 {
		allow, deny := set(v.AllowFrom), set(v.DenyFrom)
		_, anyone := allow["*"]
		_, noone := deny["*"]
		r.Allow = func(u msg.UserID) bool {
			if _, denied := deny[string(u)]; denied || noone {
				return false
			}
			_, allowed := allow[string(u)]
			return anyone || len(allow) == 0 || allowed
		}
		r.DenyWhy = "the sender is not answered in this chat (allowFrom " + v.Origin("allowFrom") + ", denyFrom " + v.Origin("denyFrom") + ")"
	}
	return pipeline.NewChatRules(r)
}

// set makes a lookup set of a list.
func set(list []string) map[string]struct{} {
	out := make(map[string]struct{}, len(list))
	for _, s := range list {
		out[s] = struct{}{}
	}
	return out
}
