package config

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
)

// Receive decides which messages of a channel account get answered and
// what context comes with them.
type Receive struct {
	Mention  Mention         `json:"mention"`
	Realtime Realtime        `json:"realtime"`
	Digest   DigestSettings  `json:"digest"`
	Summary  SummarySettings `json:"summary"`
	History  HistorySettings `json:"history"`
}

// Mention is the trigger rule set.
type Mention struct {
	Enabled               bool     `json:"enabled"`
	RequireMentionInGroup bool     `json:"requireMentionInGroup"`
	Keywords              []string `json:"keywords"`
	// KeywordMatch is contains, prefix, exact or regex.
	KeywordMatch         string `json:"keywordMatch"`
	CaseSensitive        bool   `json:"caseSensitive"`
	TriggerOnReplyToSelf bool   `json:"triggerOnReplyToSelf"`
	AlwaysReplyInDirect  bool   `json:"alwaysReplyInDirect"`
}

// Realtime merges a sender's burst into one turn.
type Realtime struct {
	Enabled     bool `json:"enabled"`
	WindowMs    int  `json:"windowMs"`
	MaxWindowMs int  `json:"maxWindowMs"`
	MaxMessages int  `json:"maxMessages"`
	MaxChars    int  `json:"maxChars"`
}

// DigestSettings configure timed digests of a chat.
type DigestSettings struct {
	Enabled     bool   `json:"enabled"`
	IntervalMs  int    `json:"intervalMs"`
	MaxMessages int    `json:"maxMessages"`
	MinMessages int    `json:"minMessages"`
	Prompt      string `json:"prompt"`
	// Scope is group, direct or all.
	Scope              string   `json:"scope"`
	Peers              []string `json:"peers"`
	MaxTranscriptChars int      `json:"maxTranscriptChars"`
}

// SummarySettings configure the /summary command.
type SummarySettings struct {
	Enabled            bool     `json:"enabled"`
	Commands           []string `json:"commands"`
	Count              int      `json:"count"`
	MaxCount           int      `json:"maxCount"`
	Prompt             string   `json:"prompt"`
	Scope              string   `json:"scope"`
	Peers              []string `json:"peers"`
	MaxTranscriptChars int      `json:"maxTranscriptChars"`
}

// HistorySettings configure the context of recent chat carried into a
// reply.
type HistorySettings struct {
	Enabled     bool `json:"enabled"`
	MaxMessages int  `json:"maxMessages"`
	MaxChars    int  `json:"maxChars"`
	MaxAgeMs    int  `json:"maxAgeMs"`
}

// Default prompts of digests and summaries.
const (
	DefaultDigestPrompt  = "请用简洁的中文归纳这段时间的讨论主题、结论和待办事项，没有值得汇报的内容请只回复 SKIP。"
	DefaultSummaryPrompt = "请用简洁的中文总结以下最近的聊天记录：讨论了哪些主题、得出了什么结论、还有哪些待办事项。"
)

// DefaultReceive is the receive behaviour of the reference plugin.
func DefaultReceive() Receive {
	return Receive{
		Mention:  Mention{Enabled: true, RequireMentionInGroup: true, KeywordMatch: "contains", TriggerOnReplyToSelf: true, AlwaysReplyInDirect: true},
		Realtime: Realtime{Enabled: true, WindowMs: 800, MaxWindowMs: 3000, MaxMessages: 10, MaxChars: 8000},
		Digest:   DigestSettings{IntervalMs: 300000, MaxMessages: 50, MinMessages: 3, Prompt: DefaultDigestPrompt, Scope: "group", MaxTranscriptChars: 20000},
		Summary: SummarySettings{
			Enabled: true, Commands: []string{"/summary", "/总结"}, Count: 100, MaxCount: 200,
			Prompt: DefaultSummaryPrompt, Scope: "all", MaxTranscriptChars: 20000,
		},
		History: HistorySettings{Enabled: true, MaxMessages: 20, MaxChars: 4000},
	}
}

// MinMessagesClamped is minMessages, never above maxMessages, so a digest
// window can always flush.
func (d DigestSettings) MinMessagesClamped() int { return min(d.MinMessages, d.MaxMessages) }

// Warnings lists settings that are skipped rather than refused: keywords
// that are not valid regular expressions under keywordMatch regex.
func (r Receive) Warnings() []string {
	var out []string
	if r.Mention.KeywordMatch == "regex" {
		for i, k := range r.Mention.Keywords {
			if _, err := regexp.Compile(k); err != nil {
				out = append(out, fmt.Sprintf("receive.mention.keywords[%d]: %q is not a valid regular expression and is skipped: %v", i, k, err))
			}
		}
	}
	return out
}

// Validate checks the receive settings.
func (r Receive) Validate() error {
	var errs []error
	errs = append(errs, oneOf("mention.keywordMatch", r.Mention.KeywordMatch, "contains", "prefix", "exact", "regex"))
	positive := func(key string, v int) {
		if v < 1 {
			errs = append(errs, problem(key, "must be at least 1"))
		}
	}
	errs = append(errs, nest("realtime", r.Realtime.Validate()))
	positive("digest.intervalMs", r.Digest.IntervalMs)
	positive("digest.maxMessages", r.Digest.MaxMessages)
	positive("digest.maxTranscriptChars", r.Digest.MaxTranscriptChars)
	if r.Digest.MinMessages < 0 {
		errs = append(errs, problem("digest.minMessages", "must not be negative"))
	}
	errs = append(errs, oneOf("digest.scope", r.Digest.Scope, "group", "direct", "all"))
	errs = append(errs, peerList("digest.peers", r.Digest.Peers)...)
	if r.Digest.Enabled && strings.TrimSpace(r.Digest.Prompt) == "" {
		errs = append(errs, crossProblem("digest.prompt", []string{"digest.enabled"}, "must not be empty"))
	}
	positive("summary.count", r.Summary.Count)
	positive("summary.maxCount", r.Summary.MaxCount)
	positive("summary.maxTranscriptChars", r.Summary.MaxTranscriptChars)
	errs = append(errs, oneOf("summary.scope", r.Summary.Scope, "group", "direct", "all"))
	errs = append(errs, peerList("summary.peers", r.Summary.Peers)...)
	if r.Summary.Enabled {
		enabled := []string{"summary.enabled"}
		if len(r.Summary.Commands) == 0 {
			errs = append(errs, crossProblem("summary.commands", enabled, "must name at least one command"))
		}
		for i, c := range r.Summary.Commands {
			if strings.TrimSpace(c) == "" || strings.ContainsAny(c, " \t\n") {
				errs = append(errs, crossProblem(fmt.Sprintf("summary.commands[%d]", i), enabled, "want one word such as /summary, got %q", c))
			}
		}
		if strings.TrimSpace(r.Summary.Prompt) == "" {
			errs = append(errs, crossProblem("summary.prompt", enabled, "must not be empty"))
		}
	}
	positive("history.maxMessages", r.History.MaxMessages)
	positive("history.maxChars", r.History.MaxChars)
	if r.History.MaxAgeMs < 0 {
		errs = append(errs, problem("history.maxAgeMs", "must not be negative (0 keeps messages of any age)"))
	}
	return errors.Join(errs...)
}

// peerList checks digest and summary peer filters: group:<id>,
// private:<id> or direct:<id>.
func peerList(key string, peers []string) []error {
	var errs []error
	for i, p := range peers {
		kind, id, ok := strings.Cut(strings.TrimSpace(p), ":")
		kind = strings.ToLower(kind)
		if !ok || id == "" || (kind != "group" && kind != "private" && kind != "direct") {
			errs = append(errs, problem(fmt.Sprintf("%s[%d]", key, i), "want group:<id> or private:<id>, got %q", p))
		}
	}
	return errs
}

// Validate checks the realtime windows.
func (rt Realtime) Validate() error {
	var errs []error
	for _, f := range []struct {
		key string
		v   int
	}{{"windowMs", rt.WindowMs}, {"maxMessages", rt.MaxMessages}, {"maxChars", rt.MaxChars}} {
		if f.v < 1 {
			errs = append(errs, problem(f.key, "must be at least 1"))
		}
	}
	if rt.MaxWindowMs < rt.WindowMs {
		errs = append(errs, crossProblem("maxWindowMs", []string{"windowMs"}, "must not be below windowMs (%d)", rt.WindowMs))
	}
	return errors.Join(errs...)
}

// Quote configures how quoted messages and merged forwards of realtime
// batches are resolved for the agent.
type Quote struct {
	Enabled        bool `json:"enabled"`
	ResolveForward bool `json:"resolveForward"`
	MaxDepth       int  `json:"maxDepth"`
	MaxNodes       int  `json:"maxNodes"`
	MaxChars       int  `json:"maxChars"`
	TimeoutMs      int  `json:"timeoutMs"`
}

// DefaultQuote resolves quotes and forwards two levels deep, 20 nodes and
// 4000 characters at most, 10 s per fetch.
func DefaultQuote() Quote {
	return Quote{Enabled: true, ResolveForward: true, MaxDepth: 2, MaxNodes: 20, MaxChars: 4000, TimeoutMs: 10000}
}

// Validate checks the quote settings.
func (q Quote) Validate() error {
	var errs []error
	if q.MaxDepth < 0 {
		errs = append(errs, problem("maxDepth", "must not be negative (0 expands the top level only)"))
	}
	for _, f := range []struct {
		key string
		v   int
	}{{"maxNodes", q.MaxNodes}, {"maxChars", q.MaxChars}, {"timeoutMs", q.TimeoutMs}} {
		if f.v < 1 {
			errs = append(errs, problem(f.key, "must be at least 1"))
		}
	}
	return errors.Join(errs...)
}
