package config

import (
	"errors"
	"fmt"
	"maps"
	"net"
	"net/url"
	"slices"
	"strconv"
	"strings"
)

// OneBot configures the QQ channel over OneBot v11. Its top-level keys are
// the default account; accounts.<id> adds more. A named account starts
// from the default account's settings, except its connection (wsUrl,
// httpUrl, accessToken, selfId, reverseWs, httpPost), which it sets itself.
type OneBot struct {
	OneBotAccount
	Accounts map[string]OneBotAccount `json:"accounts"`
}

// OneBotAccount is one QQ account behind a OneBot v11 implementation.
type OneBotAccount struct {
	// Enabled, when false, keeps the account down whatever else it sets.
	Enabled bool   `json:"enabled"`
	Name    string `json:"name"`
	// WSURL is the implementation's forward WebSocket ("/" endpoint).
	WSURL string `json:"wsUrl"`
	// HTTPURL is the implementation's HTTP API, used for actions while no
	// WebSocket is connected.
	HTTPURL     string `json:"httpUrl"`
	AccessToken Secret `json:"accessToken"`
	// SelfID is the bot's QQ number; found at connect time when empty. The
	// file may give it as a number, as OneBot implementations write it, or
	// as a string (which may reference ${ENV}).
	SelfID    string   `json:"selfId" config:"intstring"`
	AllowFrom []string `json:"allowFrom"`
	DenyFrom  []string `json:"denyFrom"`
	// GroupAutoReact reacts to triggering group messages with
	// GroupAutoReactEmojiID (a QQ face id, or a Unicode code point in
	// decimal).
	GroupAutoReact        bool `json:"groupAutoReact"`
	GroupAutoReactEmojiID int  `json:"groupAutoReactEmojiId"`
	// ReplyToTrigger quotes the triggering message in group replies.
	ReplyToTrigger bool `json:"replyToTrigger"`
	TextChunkLimit int  `json:"textChunkLimit"`
	// SendGapMs is the least time between two messages sent to one chat,
	// separate replies (up to a fifth more, at random) and the parts of
	// one long reply alike; 0 sends them back to back.
	SendGapMs        int `json:"sendGapMs"`
	RequestTimeoutMs int `json:"requestTimeoutMs"`
	// InlineLocalMedia sends the files a reply names as base64:// data
	// (up to 10 MiB each) instead of file:// paths, for an implementation
	// that does not share pincer's file system (another container or
	// machine).
	InlineLocalMedia bool `json:"inlineLocalMedia"`
	// Debug logs every outbound payload.
	Debug     bool            `json:"debug"`
	Reconnect OneBotReconnect `json:"reconnect"`
	Tools     OneBotTools     `json:"tools"`
	ReverseWS OneBotReverseWS `json:"reverseWs"`
	HTTPPost  OneBotHTTPPost  `json:"httpPost"`
	// Receive decides which messages are answered and with what context.
	Receive Receive `json:"receive"`
	// Quote resolves quoted messages and merged forwards for the agent.
	Quote Quote `json:"quote"`
	// Groups and Direct set chats' own settings by group number and QQ
	// number, '*' for every group or direct chat (see Chat).
	Groups map[string]OneBotChat `json:"groups"`
	Direct map[string]OneBotChat `json:"direct"`
}

// OneBotReconnect is the forward WebSocket's reconnect policy.
type OneBotReconnect struct {
	Enabled bool `json:"enabled"`
	// Retries bounds consecutive failed attempts: -1 retries forever, 0
	// never retries.
	Retries    int `json:"retries"`
	MinDelayMs int `json:"minDelayMs"`
	MaxDelayMs int `json:"maxDelayMs"`
}

// OneBotTools switches the account's agent tools.
type OneBotTools struct {
	Enabled bool `json:"enabled"`
}

// OneBotReverseWS accepts the implementation's reverse WebSocket on the
// gateway's listener at Path.
type OneBotReverseWS struct {
	Enabled bool   `json:"enabled"`
	Path    string `json:"path"`
}

// OneBotHTTPPost receives events the implementation POSTs to Path on the
// gateway's listener, checking X-Signature with Secret (the access token
// when empty).
type OneBotHTTPPost struct {
	Enabled bool   `json:"enabled"`
	Path    string `json:"path"`
	Secret  Secret `json:"secret"`
}

// Default paths of the reverse endpoints; a named account appends "/<id>".
const (
	DefaultReverseWSPath = "/onebot/v11/ws"
	DefaultHTTPPostPath  = "/onebot/v11/post"
)

// DefaultSendGapMs is the default of OneBotAccount.SendGapMs: QQ treats a
// rapid run of messages to a group as risky, so they go a second apart.
const DefaultSendGapMs = 1000

// DefaultOneBot is the QQ channel with one unconfigured default account.
func DefaultOneBot() OneBot {
	return OneBot{OneBotAccount: OneBotAccount{
		Enabled:               true,
		GroupAutoReactEmojiID: 1,
		ReplyToTrigger:        true,
		TextChunkLimit:        4500,
		SendGapMs:             DefaultSendGapMs,
		RequestTimeoutMs:      30000,
		Reconnect:             OneBotReconnect{Enabled: true, Retries: -1, MinDelayMs: 1000, MaxDelayMs: 30000},
		Tools:                 OneBotTools{Enabled: true},
		ReverseWS:             OneBotReverseWS{Path: DefaultReverseWSPath},
		HTTPPost:              OneBotHTTPPost{Path: DefaultHTTPPostPath},
		Receive:               DefaultReceive(),
		Quote:                 DefaultQuote(),
	}}
}

// UnmarshalJSON decodes the default account, then each named account
// over the default account's settings.
func (o *OneBot) UnmarshalJSON(b []byte) error {
	return decodeAccounts(b, &o.OneBotAccount, &o.Accounts, o.inherited)
}

// inherited is what a named account starts from: the default account's
// settings without its connection.
func (o *OneBot) inherited(id string) OneBotAccount {
	a := o.OneBotAccount
	a.Name = ""
	a.WSURL, a.HTTPURL, a.AccessToken, a.SelfID = "", "", "", ""
	a.AllowFrom = slices.Clone(a.AllowFrom)
	a.DenyFrom = slices.Clone(a.DenyFrom)
	a.Receive = a.Receive.cloned()
	// The channel's chat entries are a layer of their own, below the
	// account's.
	a.Groups, a.Direct = nil, nil
	a.ReverseWS = OneBotReverseWS{Path: DefaultReverseWSPath + "/" + id}
	a.HTTPPost = OneBotHTTPPost{Path: DefaultHTTPPostPath + "/" + id}
	return a
}

// All returns every account by id, the top-level one as "default".
func (o OneBot) All() map[string]OneBotAccount { return allAccounts(o.OneBotAccount, o.Accounts) }

// Active reports whether the account should run: it is enabled and has
// a way to receive events or to send.
func (a OneBotAccount) Active() bool {
	return a.Enabled && (a.WSURL != "" || a.HTTPURL != "" || a.ReverseWS.Enabled || a.HTTPPost.Enabled)
}

// SelfQQ is the configured QQ number, 0 when unset.
func (a OneBotAccount) SelfQQ() int64 {
	n, _ := strconv.ParseInt(a.SelfID, 10, 64)
	return n
}

// PostSecret is the HMAC key for HTTP POST events: the secret, else the
// access token (NapCat, LLOneBot and SnowLuma sign with the token).
func (a OneBotAccount) PostSecret() string {
	if a.HTTPPost.Secret != "" {
		return a.HTTPPost.Secret.Value()
	}
	return a.AccessToken.Value()
}

// Validate checks the default account and every named one, and that no
// two accounts share an endpoint path.
func (o OneBot) Validate() error {
	errs := []error{o.OneBotAccount.Validate()}
	if _, clash := o.Accounts["default"]; clash {
		errs = append(errs, problem("accounts.default", "the top-level keys are the default account; name this one differently"))
	}
	paths := map[string]string{}
	claim := func(path, key string) {
		if prev, dup := paths[path]; dup {
			errs = append(errs, crossProblem(key, []string{prev}, "path %q is already used by %s", path, prev))
			return
		}
		paths[path] = key
	}
	all := o.All()
	for _, id := range slices.Sorted(maps.Keys(all)) {
		a := all[id]
		prefix := ""
		if id != "default" {
			prefix = "accounts." + id + "."
			errs = append(errs, nest("accounts."+id, a.Validate()))
			if !a.Active() && a.Enabled {
				// enabled is inherited from the default account.
				after := []string{"enabled"}
				for _, k := range []string{"enabled", "wsUrl", "httpUrl", "reverseWs.enabled", "httpPost.enabled"} {
					after = append(after, "accounts."+id+"."+k)
				}
				errs = append(errs, crossProblem("accounts."+id, after, "needs wsUrl, httpUrl, reverseWs or httpPost"))
			}
		}
		if !a.Enabled {
			continue
		}
		if a.ReverseWS.Enabled {
			claim(a.ReverseWS.Path, prefix+"reverseWs.path")
		}
		if a.HTTPPost.Enabled {
			claim(a.HTTPPost.Path, prefix+"httpPost.path")
		}
	}
	return errors.Join(errs...)
}

// validateExposed checks the accounts against the gateway's listener.
// The reverse WebSocket and event POST endpoints are served on
// gateway.listen outside the gateway token; when it is not a loopback
// address anyone who reaches it could dial in as the implementation or
// post events, so every account that serves either needs its access token
// (for POSTs alone, httpPost.secret will do). Paths are relative to
// channels.onebot.
func (o OneBot) validateExposed(g Gateway) error {
	if _, port, err := net.SplitHostPort(g.Listen); err != nil || port == "" || g.Loopback() {
		return nil // a bad listen is reported under gateway
	}
	var errs []error
	all := o.All()
	for _, id := range slices.Sorted(maps.Keys(all)) {
		a := all[id]
		if !a.Enabled {
			continue
		}
		prefix := ""
		if id != "default" {
			prefix = "accounts." + id + "."
		}
		var open []string
		if a.ReverseWS.Enabled && a.AccessToken == "" {
			open = append(open, "reverseWs")
		}
		if a.HTTPPost.Enabled && a.PostSecret() == "" {
			open = append(open, "httpPost")
		}
		if len(open) == 0 {
			continue
		}
		need, verb := "required", "is"
		if len(open) == 1 && open[0] == "httpPost" {
			need = "required (or " + prefix + "httpPost.secret)"
		}
		if len(open) == 2 {
			verb = "are"
		}
		errs = append(errs, &FieldError{
			Path: prefix + "accessToken",
			Msg: fmt.Sprintf("%s when %s %s enabled and gateway.listen (%s) is not loopback",
				need, strings.Join(open, " and "), verb, g.Listen),
			after:  []string{"enabled", prefix + "enabled", prefix + "reverseWs.enabled", prefix + "httpPost.enabled", prefix + "httpPost.secret"},
			rooted: []string{"gateway.listen"},
		})
	}
	return errors.Join(errs...)
}

// Validate checks one account.
func (a OneBotAccount) Validate() error {
	var errs []error
	if a.WSURL != "" {
		if u, err := url.Parse(a.WSURL); err != nil || (u.Scheme != "ws" && u.Scheme != "wss") || u.Host == "" {
			errs = append(errs, problem("wsUrl", "want a ws:// or wss:// URL, got %q", a.WSURL))
		}
	}
	if a.HTTPURL != "" {
		if u, err := url.Parse(a.HTTPURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			errs = append(errs, problem("httpUrl", "want an http:// or https:// URL, got %q", a.HTTPURL))
		}
	}
	if a.SelfID != "" {
		if n, err := strconv.ParseInt(a.SelfID, 10, 64); err != nil || n <= 0 {
			errs = append(errs, problem("selfId", "want a QQ number, got %q", a.SelfID))
		}
	}
	for _, list := range []struct {
		key     string
		entries []string
	}{{"allowFrom", a.AllowFrom}, {"denyFrom", a.DenyFrom}} {
		for i, e := range list.entries {
			if !validPeerPattern(e) {
				errs = append(errs, problem(fmt.Sprintf("%s[%d]", list.key, i), "want *, group:<id> or private:<qq>, got %q", e))
			}
		}
	}
	if a.GroupAutoReactEmojiID <= 0 {
		errs = append(errs, problem("groupAutoReactEmojiId", "want a QQ face id or a Unicode code point, got %d", a.GroupAutoReactEmojiID))
	}
	if a.TextChunkLimit < 1 {
		errs = append(errs, problem("textChunkLimit", "must be at least 1"))
	}
	if a.SendGapMs < 0 {
		errs = append(errs, problem("sendGapMs", "must not be negative (0 sends without a gap), got %d", a.SendGapMs))
	}
	if a.RequestTimeoutMs < 1 {
		errs = append(errs, problem("requestTimeoutMs", "must be at least 1"))
	}
	r := a.Reconnect
	if r.Retries < -1 {
		errs = append(errs, problem("reconnect.retries", "want -1 (forever), 0 (never) or a count, got %d", r.Retries))
	}
	if r.MinDelayMs < 1 {
		errs = append(errs, problem("reconnect.minDelayMs", "must be at least 1"))
	}
	if r.MaxDelayMs < r.MinDelayMs {
		errs = append(errs, crossProblem("reconnect.maxDelayMs", []string{"reconnect.minDelayMs"}, "must not be below minDelayMs (%d)", r.MinDelayMs))
	}
	errs = append(errs, nest("receive", a.Receive.Validate()), nest("quote", a.Quote.Validate()))
	for _, p := range []struct{ key, path string }{{"reverseWs.path", a.ReverseWS.Path}, {"httpPost.path", a.HTTPPost.Path}} {
		if !strings.HasPrefix(p.path, "/") || strings.ContainsAny(p.path, " ?#") {
			errs = append(errs, problem(p.key, "want a path such as %q, got %q", DefaultReverseWSPath, p.path))
		}
	}
	return errors.Join(errs...)
}

func validPeerPattern(e string) bool {
	e = strings.TrimSpace(e)
	if e == "*" {
		return true
	}
	kind, id, ok := strings.Cut(e, ":")
	n, err := strconv.ParseInt(id, 10, 64)
	kind = strings.ToLower(kind)
	return ok && err == nil && n > 0 && (kind == "group" || kind == "private")
}

// Warnings lists settings of every account that are skipped rather than
// refused, with their key paths.
func (o OneBot) Warnings() []string {
	out := receiveWarnings("channels.onebot", o.All(), func(a OneBotAccount) Receive { return a.Receive })
	eachAccount("channels.onebot", o.All(), func(prefix string, a OneBotAccount) {
		out = append(out, chatWarnings(prefix, a.Receive, map[string]map[string]Chat{"groups": onebotChats(a.Groups), "direct": onebotChats(a.Direct)})...)
	})
	return out
}

// Warnings lists the skipped settings of every channel.
func (c Channels) Warnings() []string {
	var out []string
	for _, w := range c.Webchat.Receive.Warnings() {
		out = append(out, "channels.webchat."+w)
	}
	out = append(out, c.OneBot.Warnings()...)
	return append(out, c.Feishu.Warnings()...)
}
