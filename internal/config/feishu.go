package config

import (
	"errors"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strings"
)

// Feishu configures the Feishu / Lark channel. Its top-level keys are the
// default app; accounts.<id> adds more. A named account starts from the
// default app's settings, except its credentials (appId, appSecret,
// verificationToken, encryptKey) and its webhook path, which it sets
// itself.
type Feishu struct {
	FeishuAccount
	Accounts map[string]FeishuAccount `json:"accounts"`
}

// FeishuAccount is one self-built Feishu or Lark app acting as a bot.
type FeishuAccount struct {
	// Enabled, when false, keeps the account down whatever else it sets.
	Enabled bool   `json:"enabled"`
	Name    string `json:"name"`
	// AppID and AppSecret are the app's credentials from the developer
	// console; the account runs once AppID is set.
	AppID     string `json:"appId"`
	AppSecret Secret `json:"appSecret"`
	// Domain is "feishu", "lark" or a base URL such as
	// "https://open.example.com" (private deployments, simulators).
	Domain string `json:"domain"`
	// Mode is how events arrive: "websocket" (the long connection pincer
	// opens) or "webhook" (Feishu POSTs them to Webhook.Path on
	// gateway.listen).
	Mode    string        `json:"mode"`
	Webhook FeishuWebhook `json:"webhook"`
	// VerificationToken is checked on every webhook event; EncryptKey, when
	// set, decrypts them and checks their signature.
	VerificationToken Secret `json:"verificationToken"`
	EncryptKey        Secret `json:"encryptKey"`
	// AllowFrom and DenyFrom list 'chat:oc_…', 'user:ou_…' or '*'.
	AllowFrom []string `json:"allowFrom"`
	DenyFrom  []string `json:"denyFrom"`
	// TextChunkLimit bounds one sent message, in characters.
	TextChunkLimit int `json:"textChunkLimit"`
	// TypingReaction puts a "Typing" reaction on the message being
	// answered while the agent works.
	TypingReaction bool `json:"typingReaction"`
	// Streaming is how a reply shows while the model writes it:
	// FeishuStreamingCard writes it live into a CardKit card (the app needs
	// cardkit:card:write; a refused app sends whole messages),
	// FeishuStreamingOff sends it whole when it is written.
	Streaming string `json:"streaming"`
	// MaxBotReplyChain stops loops with other bots in a chat: another
	// app's messages trigger at most this many replies in a row, until a
	// person speaks. 0 sets no limit.
	MaxBotReplyChain int `json:"maxBotReplyChain"`
	// Receive decides which messages are answered and with what context.
	Receive Receive `json:"receive"`
	// Quote resolves the message a reply quotes.
	Quote FeishuQuote `json:"quote"`
	// MergeForward expands merged forwards into an excerpt of their
	// messages.
	MergeForward FeishuMergeForward `json:"mergeForward"`
	// Groups and Direct set chats' own settings by chat id (oc_…) and open
	// id (ou_…), '*' for every group or direct chat (see Chat).
	Groups map[string]Chat `json:"groups"`
	Direct map[string]Chat `json:"direct"`
}

// FeishuWebhook is where Feishu posts events in webhook mode.
type FeishuWebhook struct {
	Path string `json:"path"`
}

// FeishuQuote resolves quoted messages.
type FeishuQuote struct {
	Enabled   bool `json:"enabled"`
	TimeoutMs int  `json:"timeoutMs"`
}

// FeishuMergeForward bounds the expansion of a merged forward: nesting
// depth, lines and characters shown inline (the rest goes to a file in the
// chat's workspace).
type FeishuMergeForward struct {
	Enabled  bool `json:"enabled"`
	MaxDepth int  `json:"maxDepth"`
	MaxLines int  `json:"maxLines"`
	MaxChars int  `json:"maxChars"`
}

// Feishu modes and domains.
const (
	FeishuWebSocket   = "websocket"
	FeishuWebhookMode = "webhook"
	// FeishuStreamingCard and FeishuStreamingOff are the streaming modes.
	FeishuStreamingCard = "card"
	FeishuStreamingOff  = "off"
	// DefaultFeishuWebhookPath is the default account's webhook path; a
	// named account appends "/<id>".
	DefaultFeishuWebhookPath = "/feishu/events"
)

// DefaultFeishu is the Feishu channel with one unconfigured default app.
func DefaultFeishu() Feishu {
	return Feishu{FeishuAccount: FeishuAccount{
		Enabled:          true,
		Domain:           "feishu",
		Mode:             FeishuWebSocket,
		Webhook:          FeishuWebhook{Path: DefaultFeishuWebhookPath},
		TextChunkLimit:   4000,
		TypingReaction:   true,
		Streaming:        FeishuStreamingCard,
		MaxBotReplyChain: 3,
		Receive:          DefaultReceive(),
		Quote:            FeishuQuote{Enabled: true, TimeoutMs: 10000},
		MergeForward:     FeishuMergeForward{Enabled: true, MaxDepth: 3, MaxLines: 100, MaxChars: 4000},
	}}
}

// UnmarshalJSON decodes the default app, then each named account over the
// default app's settings.
func (f *Feishu) UnmarshalJSON(b []byte) error {
	return decodeAccounts(b, &f.FeishuAccount, &f.Accounts, f.inherited)
}

// inherited is what a named account starts from: the default app's
// settings without its credentials and with a webhook path of its own.
func (f *Feishu) inherited(id string) FeishuAccount {
	a := f.FeishuAccount
	a.Name, a.AppID, a.AppSecret, a.VerificationToken, a.EncryptKey = "", "", "", "", ""
	a.AllowFrom = slices.Clone(a.AllowFrom)
	a.DenyFrom = slices.Clone(a.DenyFrom)
	a.Receive = a.Receive.cloned()
	// The channel's chat entries are a layer of their own, below the
	// account's.
	a.Groups, a.Direct = nil, nil
	a.Webhook = FeishuWebhook{Path: DefaultFeishuWebhookPath + "/" + id}
	return a
}

// All returns every account by id, the top-level one as "default".
func (f Feishu) All() map[string]FeishuAccount { return allAccounts(f.FeishuAccount, f.Accounts) }

// Active reports whether the account should run: it is enabled and has an
// app id.
func (a FeishuAccount) Active() bool { return a.Enabled && a.AppID != "" }

// BaseURL is the open platform's base URL for Domain.
func (a FeishuAccount) BaseURL() string {
	switch strings.ToLower(a.Domain) {
	case "", "feishu":
		return "https://open.feishu.cn"
	case "lark":
		return "https://open.larksuite.com"
	}
	return strings.TrimRight(a.Domain, "/")
}

// Validate checks the default app and every named one, and that no two
// webhook accounts share a path.
func (f Feishu) Validate() error {
	errs := []error{f.FeishuAccount.Validate()}
	if _, clash := f.Accounts["default"]; clash {
		errs = append(errs, problem("accounts.default", "the top-level keys are the default account; name this one differently"))
	}
	paths := map[string]string{}
	all := f.All()
	for _, id := range slices.Sorted(maps.Keys(all)) {
		a := all[id]
		prefix := ""
		if id != "default" {
			prefix = "accounts." + id + "."
			errs = append(errs, nest("accounts."+id, a.Validate()))
			if a.Enabled && a.AppID == "" {
				errs = append(errs, crossProblem("accounts."+id, []string{"enabled", "accounts." + id + ".enabled", "accounts." + id + ".appId"}, "needs appId"))
			}
		}
		if !a.Active() || a.Mode != FeishuWebhookMode {
			continue
		}
		if prev, dup := paths[a.Webhook.Path]; dup {
			errs = append(errs, crossProblem(prefix+"webhook.path", []string{prev}, "path %q is already used by %s", a.Webhook.Path, prev))
			continue
		}
		paths[a.Webhook.Path] = prefix + "webhook.path"
	}
	return errors.Join(errs...)
}

// Validate checks one account.
func (a FeishuAccount) Validate() error {
	var errs []error
	if a.AppID != "" && a.AppSecret == "" {
		errs = append(errs, crossProblem("appSecret", []string{"appId"}, "required with appId"))
	}
	switch strings.ToLower(a.Domain) {
	case "feishu", "lark":
	default:
		if u, err := url.Parse(a.Domain); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			errs = append(errs, problem("domain", "want feishu, lark or a base URL such as 'https://open.example.com', got %q", a.Domain))
		}
	}
	switch a.Mode {
	case FeishuWebSocket:
	case FeishuWebhookMode:
		if a.AppID != "" && a.VerificationToken == "" && a.EncryptKey == "" {
			errs = append(errs, crossProblem("verificationToken", []string{"mode", "appId", "encryptKey"},
				"webhook mode needs verificationToken or encryptKey (from the app's Events and Callbacks page), or anyone could post events"))
		}
	default:
		errs = append(errs, problem("mode", "want websocket or webhook, got %q", a.Mode))
	}
	switch a.Streaming {
	case FeishuStreamingCard, FeishuStreamingOff:
	default:
		errs = append(errs, problem("streaming", "want card or off, got %q", a.Streaming))
	}
	if a.MaxBotReplyChain < 0 {
		errs = append(errs, problem("maxBotReplyChain", "must not be negative"))
	}
	if p := a.Webhook.Path; !strings.HasPrefix(p, "/") || strings.ContainsAny(p, " ?#") {
		errs = append(errs, problem("webhook.path", "want a path such as %q, got %q", DefaultFeishuWebhookPath, p))
	}
	for _, list := range []struct {
		key     string
		entries []string
	}{{"allowFrom", a.AllowFrom}, {"denyFrom", a.DenyFrom}} {
		for i, e := range list.entries {
			if !validFeishuPeerPattern(e) {
				errs = append(errs, problem(fmt.Sprintf("%s[%d]", list.key, i), "want *, chat:<oc_…> or user:<ou_…>, got %q", e))
			}
		}
	}
	if a.TextChunkLimit < 1 {
		errs = append(errs, problem("textChunkLimit", "must be at least 1"))
	}
	if a.Quote.TimeoutMs < 1 {
		errs = append(errs, problem("quote.timeoutMs", "must be at least 1"))
	}
	mf := a.MergeForward
	for _, f := range []struct {
		key string
		v   int
	}{{"mergeForward.maxDepth", mf.MaxDepth}, {"mergeForward.maxLines", mf.MaxLines}, {"mergeForward.maxChars", mf.MaxChars}} {
		if f.v < 1 {
			errs = append(errs, problem(f.key, "must be at least 1"))
		}
	}
	errs = append(errs, nest("receive", a.Receive.Validate()))
	return errors.Join(errs...)
}

func validFeishuPeerPattern(e string) bool {
	e = strings.TrimSpace(e)
	if e == "*" {
		return true
	}
	kind, id, ok := strings.Cut(e, ":")
	return ok && strings.TrimSpace(id) != "" && !strings.ContainsAny(id, " \t") &&
		(strings.EqualFold(kind, "chat") || strings.EqualFold(kind, "user"))
}

// Warnings lists settings of every account that are skipped rather than
// refused, with their key paths.
func (f Feishu) Warnings() []string {
	out := receiveWarnings("channels.feishu", f.All(), func(a FeishuAccount) Receive { return a.Receive })
	eachAccount("channels.feishu", f.All(), func(prefix string, a FeishuAccount) {
		out = append(out, chatWarnings(prefix, a.Receive, map[string]map[string]Chat{"groups": a.Groups, "direct": a.Direct})...)
	})
	return out
}
