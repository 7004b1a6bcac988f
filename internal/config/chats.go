package config

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Chat is the entry of one chat under channels.<channel>.groups.<id> or
// channels.<channel>.direct.<id> (and the same under accounts.<id>); the id
// '*' is every group, or every direct chat. An entry sets only what it
// names: every key it leaves out is inherited from the layers below it
// (see internal/chatconf). The zero values of its fields say nothing by
// themselves: Sets tells whether the file set a key.
type Chat struct {
	// Enabled false keeps pincer silent in the chat: its messages are
	// logged and traced, never answered.
	Enabled bool `json:"enabled"`
	// Receive decides which of the chat's messages are answered and with
	// what context.
	Receive ChatReceive `json:"receive"`
	// Quote switches resolving the messages a reply quotes.
	Quote ChatQuote `json:"quote"`
	// SystemPrompt replaces agents.defaults.systemPrompt in the chat or,
	// with SystemPromptMode "append", is added after it.
	SystemPrompt     string `json:"systemPrompt"`
	SystemPromptMode string `json:"systemPromptMode"`
	// Model is the chat's model chain (provider/model refs).
	Model ModelChoice `json:"model"`
	// ImageModel describes pictures for a model of the chat that cannot
	// see them, in place of agents.defaults.imageModel.
	ImageModel ModelChoice `json:"imageModel"`
	// Thinking is the reasoning level a session of the chat starts with
	// (off, minimal, low, medium, high or xhigh); /think still changes it.
	Thinking string `json:"thinking"`
	// Queue is what happens to messages sent while a reply is running.
	Queue ChatQueue `json:"queue"`
	// HumanDelay and BlockStreaming pace and cut the chat's replies.
	HumanDelay     HumanDelay     `json:"humanDelay"`
	BlockStreaming BlockStreaming `json:"blockStreaming"`
	// ResponsePrefix is put before every reply in the chat.
	ResponsePrefix string `json:"responsePrefix"`
	// AllowFrom and DenyFrom list the senders the bot answers in the chat:
	// QQ numbers or Feishu open ids ('ou_…'), or '*'.
	AllowFrom []string `json:"allowFrom"`
	DenyFrom  []string `json:"denyFrom"`
	// Tools limits the agent tools offered in the chat.
	Tools ChatTools `json:"tools"`
	// Limits replaces, key by key, the top-level limits in the chat: a
	// person's caps count their turns in the chats that share them.
	Limits Limits `json:"limits"`

	// raw is the entry as decoded, set its key paths.
	raw []byte
	set []string
}

// ChatReceive are the receive settings a chat may set for itself.
type ChatReceive struct {
	Mention  Mention     `json:"mention"`
	Realtime Realtime    `json:"realtime"`
	Digest   ChatDigest  `json:"digest"`
	Summary  ChatSummary `json:"summary"`
	History  ChatHistory `json:"history"`
}

// ChatDigest switches a chat's timed digest and sets its interval and
// prompt.
type ChatDigest struct {
	Enabled    bool   `json:"enabled"`
	IntervalMs int    `json:"intervalMs"`
	Prompt     string `json:"prompt"`
}

// ChatSummary switches /summary in a chat and sets its prompt.
type ChatSummary struct {
	Enabled bool   `json:"enabled"`
	Prompt  string `json:"prompt"`
}

// ChatHistory switches the context of recent chat carried into a reply
// and bounds it.
type ChatHistory struct {
	Enabled  bool `json:"enabled"`
	MaxChars int  `json:"maxChars"`
}

// ChatQuote switches resolving quoted messages in a chat.
type ChatQuote struct {
	Enabled bool `json:"enabled"`
}

// ChatQueue is a chat's queue mode and bound.
type ChatQueue struct {
	Mode string `json:"mode"`
	Cap  int    `json:"cap"`
}

// ChatTools limits the agent tools of a chat: Allow, when not empty,
// names the only tools offered; Deny names tools never offered.
type ChatTools struct {
	Allow []string `json:"allow"`
	Deny  []string `json:"deny"`
}

// OneBotChat is a QQ chat's entry: a Chat plus the gap between the
// messages sent to it.
type OneBotChat struct {
	Chat
	// SendGapMs replaces the account's sendGapMs in the chat.
	SendGapMs int `json:"sendGapMs"`
}

// UnmarshalJSON decodes the entry and remembers which keys it sets.
func (c *Chat) UnmarshalJSON(b []byte) error {
	type plain Chat
	var p plain
	if err := json.Unmarshal(b, &p); err != nil {
		return err
	}
	*c = Chat(p)
	var tree map[string]any
	if err := json.Unmarshal(b, &tree); err != nil {
		return err
	}
	c.raw = slices.Clone(b)
	c.set = chatLeaves(tree, "", nil)
	slices.Sort(c.set)
	return nil
}

// UnmarshalJSON decodes the entry and remembers which keys it sets.
func (c *OneBotChat) UnmarshalJSON(b []byte) error {
	if err := c.Chat.UnmarshalJSON(b); err != nil {
		return err
	}
	var gap struct {
		SendGapMs int `json:"sendGapMs"`
	}
	if err := json.Unmarshal(b, &gap); err != nil {
		return err
	}
	c.SendGapMs = gap.SendGapMs
	return nil
}

// chatLeaves appends the key paths of the values (not objects) in tree.
func chatLeaves(tree map[string]any, prefix string, out []string) []string {
	for k, v := range tree {
		if v == nil {
			continue
		}
		if sub, ok := v.(map[string]any); ok {
			out = chatLeaves(sub, join(prefix, k), out)
			continue
		}
		out = append(out, join(prefix, k))
	}
	return out
}

// Sets reports whether the entry sets the key path p (such as
// "receive.mention.keywords") or, for an object such as "receive", any
// key inside it.
func (c Chat) Sets(p string) bool {
	return slices.ContainsFunc(c.set, func(s string) bool { return within(s, p) })
}

// Set lists the key paths the entry sets, sorted.
func (c Chat) Set() []string { return slices.Clone(c.set) }

// Raw is the entry as the file gave it (after ${ENV} substitution, without
// the values that could not be decoded): decoding it over a value of the
// same shape sets exactly the keys the entry sets.
func (c Chat) Raw() []byte { return c.raw }

// accountOnly are the keys an account (or agents.defaults, messages)
// takes that a chat entry does not: they stay the account's.
var accountOnly = []string{
	"maxMessages", "maxAgeMs", "minMessages", "maxTranscriptChars", "scope", "peers", "commands", "count", "maxCount",
	"resolveForward", "maxDepth", "maxNodes", "timeoutMs", "drop", "debounceMs", "textChunkLimit", "groupAutoReact",
	"groupAutoReactEmojiId", "replyToTrigger", "streaming", "typingReaction", "mergeForward", "maxBotReplyChain", "byChannel",
}

func chatHint(key string) string {
	if key == "sendGapMs" {
		return " (only QQ chats take it: Feishu has no send gap)"
	}
	if slices.Contains(accountOnly, key) {
		return " (it cannot be set for one chat; set it on the account, or under agents.defaults / messages)"
	}
	return ""
}

func (Chat) unknownHint(key string) string        { return chatHint(key) }
func (ChatReceive) unknownHint(key string) string { return chatHint(key) }
func (ChatDigest) unknownHint(key string) string  { return chatHint(key) }
func (ChatSummary) unknownHint(key string) string { return chatHint(key) }
func (ChatHistory) unknownHint(key string) string { return chatHint(key) }
func (ChatQuote) unknownHint(key string) string   { return chatHint(key) }
func (ChatQueue) unknownHint(key string) string   { return chatHint(key) }

// hinter is a settings type that explains some of the keys it does not
// take.
type hinter interface{ unknownHint(key string) string }

var toolNamePattern = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

// thinkingLevels are the reasoning levels (llm.ThinkingLevels).
var thinkingLevels = []string{"off", "minimal", "low", "medium", "high", "xhigh"}

// validate checks the keys the entry sets. sender checks one allowFrom /
// denyFrom entry; d are the agent defaults humanDelay and blockStreaming
// are checked over.
func (c Chat) validate(models *Models, d AgentDefaults, acct Receive, sender func(string) bool, senderWant string) error {
	var errs []error
	str := func(p, v string) {
		if c.Sets(p) && strings.TrimSpace(v) == "" {
			errs = append(errs, problem(p, "must not be empty"))
		}
	}
	positive := func(p string, v int) {
		if c.Sets(p) && v < 1 {
			errs = append(errs, problem(p, "must be at least 1"))
		}
	}
	if c.Sets("receive.mention.keywordMatch") {
		errs = append(errs, oneOf("receive.mention.keywordMatch", c.Receive.Mention.KeywordMatch, "contains", "prefix", "exact", "regex"))
	}
	if c.Sets("receive.realtime") {
		// Checked over the account's windows: maxWindowMs against the
		// windowMs in effect.
		rt := struct {
			Realtime Realtime `json:"realtime"`
		}{acct.Realtime}
		if err := c.Overlay("receive", &rt); err != nil {
			errs = append(errs, problem("receive.realtime", "%v", err))
		} else {
			errs = append(errs, nest("receive.realtime", rt.Realtime.Validate()))
		}
	}
	positive("receive.digest.intervalMs", c.Receive.Digest.IntervalMs)
	str("receive.digest.prompt", c.Receive.Digest.Prompt)
	str("receive.summary.prompt", c.Receive.Summary.Prompt)
	positive("receive.history.maxChars", c.Receive.History.MaxChars)
	if c.Sets("systemPromptMode") {
		errs = append(errs, oneOf("systemPromptMode", c.SystemPromptMode, "replace", "append"))
	}
	errs = append(errs, nest("limits", c.Limits.Validate()))
	if c.Sets("model.primary") {
		errs = append(errs, models.checkRef("model.primary", c.Model.Primary))
	}
	for i, ref := range c.Model.Fallbacks {
		errs = append(errs, models.checkRef(fmt.Sprintf("model.fallbacks[%d]", i), ref))
	}
	if c.Sets("model.fallbacks") && len(c.Model.Fallbacks) > 0 && !c.Sets("model.primary") && d.Model.Primary == "" {
		errs = append(errs, problem("model.primary", "required when fallbacks are set (agents.defaults.model.primary is empty)"))
	}
	if c.Sets("imageModel.primary") {
		if c.ImageModel.Primary == "" {
			errs = append(errs, problem("imageModel.primary", "must not be empty: a chat cannot go without the image model of agents.defaults; leave imageModel out instead"))
		} else {
			errs = append(errs, models.checkRef("imageModel.primary", c.ImageModel.Primary))
		}
	}
	for i, ref := range c.ImageModel.Fallbacks {
		errs = append(errs, models.checkRef(fmt.Sprintf("imageModel.fallbacks[%d]", i), ref))
	}
	if c.Sets("thinking") {
		errs = append(errs, oneOf("thinking", c.Thinking, thinkingLevels...))
	}
	if c.Sets("queue.mode") {
		errs = append(errs, oneOf("queue.mode", c.Queue.Mode, queueModes...))
	}
	positive("queue.cap", c.Queue.Cap)
	if c.Sets("humanDelay") {
		h := d.HumanDelay
		if err := c.Overlay("humanDelay", &h); err != nil {
			errs = append(errs, problem("humanDelay", "%v", err))
		} else {
			errs = append(errs, nest("humanDelay", h.Validate()))
		}
	}
	if c.Sets("blockStreaming") {
		b := d.BlockStreaming
		if err := c.Overlay("blockStreaming", &b); err != nil {
			errs = append(errs, problem("blockStreaming", "%v", err))
		} else {
			errs = append(errs, nest("blockStreaming", b.Validate()))
		}
	}
	for _, list := range []struct {
		key     string
		entries []string
	}{{"allowFrom", c.AllowFrom}, {"denyFrom", c.DenyFrom}} {
		for i, e := range list.entries {
			if e = strings.TrimSpace(e); e != "*" && !sender(e) {
				errs = append(errs, problem(fmt.Sprintf("%s[%d]", list.key, i), "want * or %s, got %q", senderWant, e))
			}
		}
	}
	for _, list := range []struct {
		key   string
		names []string
	}{{"tools.allow", c.Tools.Allow}, {"tools.deny", c.Tools.Deny}} {
		for i, n := range list.names {
			if !toolNamePattern.MatchString(n) {
				errs = append(errs, problem(fmt.Sprintf("%s[%d]", list.key, i), "want a tool name such as onebot_get_history, got %q", n))
			}
		}
	}
	return errors.Join(errs...)
}

// Overlay decodes the part of the entry at key (such as "humanDelay")
// over v, which holds what the layers below set: the keys the entry sets
// there replace v's, lists whole, the rest stay. v's lists must be its
// own (cloned), as decoding reuses them.
func (c Chat) Overlay(key string, v any) error {
	var tree map[string]json.RawMessage
	if err := json.Unmarshal(c.raw, &tree); err != nil {
		return err
	}
	part, ok := tree[key]
	if !ok {
		return nil
	}
	return json.Unmarshal(part, v)
}

// qqNumber reports whether s is a QQ number.
func qqNumber(s string) bool {
	n, err := strconv.ParseInt(s, 10, 64)
	return err == nil && n > 0
}

// feishuID reports whether s could be a Feishu id (oc_…, ou_…).
func feishuID(s string) bool {
	return strings.TrimSpace(s) != "" && !strings.ContainsAny(s, " \t\n")
}

// validateChats checks the chat entries of an account whose settings are
// under prefix (relative to channels).
func validateChats[C any](prefix string, kinds map[string]map[string]C, chat func(C) Chat, models *Models, d AgentDefaults, acct Receive, chatID, sender func(string) bool, idWant, senderWant string) []error {
	var errs []error
	for _, kind := range slices.Sorted(maps.Keys(kinds)) {
		for _, id := range slices.Sorted(maps.Keys(kinds[kind])) {
			path := prefix + kind + "." + id
			if id != "*" && !chatID(id) {
				errs = append(errs, problem(path, "want '*' or %s as the key, got %q", idWant, id))
				continue
			}
			errs = append(errs, nest(path, chat(kinds[kind][id]).validate(models, d, acct, sender, senderWant)))
		}
	}
	return errs
}

// validateChats checks every chat entry of the QQ and Feishu accounts.
func (c *Config) validateChats() error {
	var errs []error
	d := c.Agents.Defaults
	eachAccount("onebot", c.Channels.OneBot.All(), func(prefix string, a OneBotAccount) {
		errs = append(errs, validateChats(prefix, map[string]map[string]OneBotChat{"groups": a.Groups, "direct": a.Direct},
			func(e OneBotChat) Chat { return e.Chat }, &c.Models, d, a.Receive, qqNumber, qqNumber, "a group number", "a QQ number")...)
		for _, kind := range []struct {
			name    string
			entries map[string]OneBotChat
		}{{"groups", a.Groups}, {"direct", a.Direct}} {
			for _, cid := range slices.Sorted(maps.Keys(kind.entries)) {
				if e := kind.entries[cid]; e.Sets("sendGapMs") && e.SendGapMs < 0 {
					errs = append(errs, problem(prefix+kind.name+"."+cid+".sendGapMs", "must not be negative (0 sends without a gap), got %d", e.SendGapMs))
				}
			}
		}
	})
	eachAccount("feishu", c.Channels.Feishu.All(), func(prefix string, a FeishuAccount) {
		errs = append(errs, validateChats(prefix, map[string]map[string]Chat{"groups": a.Groups, "direct": a.Direct},
			func(e Chat) Chat { return e }, &c.Models, d, a.Receive, feishuID, feishuID, "a chat id (oc_…) or open id (ou_…)", "an open id (ou_…)")...)
	})
	return errors.Join(errs...)
}

// chatWarnings lists the skipped settings of the chat entries of an
// account whose settings are under prefix (such as "channels.onebot."):
// keywords that are not valid regular expressions where the chat's
// keywordMatch (its own, else the account's) is regex.
func chatWarnings(prefix string, account Receive, kinds map[string]map[string]Chat) []string {
	var out []string
	for _, kind := range slices.Sorted(maps.Keys(kinds)) {
		for _, id := range slices.Sorted(maps.Keys(kinds[kind])) {
			c := kinds[kind][id]
			if !c.Sets("receive.mention.keywords") {
				continue
			}
			m := account.Mention
			m.Keywords = c.Receive.Mention.Keywords
			if c.Sets("receive.mention.keywordMatch") {
				m.KeywordMatch = c.Receive.Mention.KeywordMatch
			}
			for _, w := range (Receive{Mention: m}).Warnings() {
				out = append(out, prefix+kind+"."+id+"."+w)
			}
		}
	}
	return out
}

// onebotChats returns the QQ entries as Chats.
func onebotChats(m map[string]OneBotChat) map[string]Chat {
	out := make(map[string]Chat, len(m))
	for id, e := range m {
		out[id] = e.Chat
	}
	return out
}
