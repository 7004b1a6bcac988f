// Package chatconf resolves the settings of one chat from the layers of
// the configuration, lowest first: the built-in defaults,
// agents.defaults and messages, the channel, the account, the '*' entry of
// the chat's kind (groups or direct: the channel's, then the account's),
// and the chat's own entry (the channel's, then the account's). The
// result is a View, an immutable value that also names the layer each of
// its settings came from. A Table holds the views of a whole
// configuration, computed once; a Resolver swaps in the Table of a new
// configuration while lookups go on.
package chatconf

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/pincerbot/pincer/internal/config"
)

// Channels and kinds of Address.
const (
	OneBot = "onebot"
	Feishu = "feishu"
	Group  = "group"
	Direct = "direct"
	// Any is the id of the '*' entries: every chat of a kind.
	Any = "*"
)

// Address names a chat: channel (onebot or feishu), account id
// ("default" for the top-level one), kind (group or direct) and the
// chat's id (a group number, QQ number, oc_… or ou_…).
type Address struct {
	Channel, Account, Kind, ID string
}

func (a Address) String() string {
	return a.Channel + ":" + a.Account + ":" + a.Kind + ":" + a.ID
}

// ParseAddress reads "<channel>:<account>:<group|direct>:<id>", such as
// "onebot:default:group:123".
func ParseAddress(s string) (Address, error) {
	parts := strings.SplitN(s, ":", 4)
	if len(parts) != 4 || slices.Contains(parts, "") {
		return Address{}, fmt.Errorf("chat %q: want <channel>:<account>:<group|direct>:<id>, such as onebot:default:group:123", s)
	}
	a := Address{Channel: parts[0], Account: parts[1], Kind: parts[2], ID: parts[3]}
	if a.Channel != OneBot && a.Channel != Feishu {
		return Address{}, fmt.Errorf("chat %q: channel %q: want onebot or feishu", s, a.Channel)
	}
	if a.Kind != Group && a.Kind != Direct {
		return Address{}, fmt.Errorf("chat %q: kind %q: want group or direct", s, a.Kind)
	}
	return a, nil
}

// View is the effective settings of a chat. Views are shared: never
// change one.
type View struct {
	// Enabled false: the chat's messages are logged, never answered.
	Enabled bool `json:"enabled"`
	// Receive is the account's receive settings with the chat's own over
	// them.
	Receive config.Receive   `json:"receive"`
	Quote   config.ChatQuote `json:"quote"`
	// SystemPrompt is the prompt the workspace files follow.
	SystemPrompt   string                `json:"systemPrompt"`
	Model          config.ModelChoice    `json:"model"`
	ImageModel     config.ModelChoice    `json:"imageModel"`
	Thinking       string                `json:"thinking"`
	Queue          config.ChatQueue      `json:"queue"`
	HumanDelay     config.HumanDelay     `json:"humanDelay"`
	BlockStreaming config.BlockStreaming `json:"blockStreaming"`
	ResponsePrefix string                `json:"responsePrefix"`
	// AllowFrom and DenyFrom are the senders answered in the chat (the
	// account's allowFrom, which lists chats, is applied before).
	AllowFrom []string         `json:"allowFrom"`
	DenyFrom  []string         `json:"denyFrom"`
	Tools     config.ChatTools `json:"tools"`
	// SendGapMs is QQ's gap between messages to the chat; 0 on Feishu.
	SendGapMs int `json:"sendGapMs"`
	// Limits are the caps of the chat's turns (see limits).
	Limits config.Limits `json:"limits"`

	// Layers lists the layers with an entry for the chat, lowest first
	// (the key paths of the '*' and chat entries).
	Layers []string `json:"-"`
	// origin maps each setting's key path to the layer that set it.
	origin map[string]string
}

// Origin names the layer that set the setting at key path p, such as
// "default", "agents.defaults" or "channels.onebot.groups.123".
func (v *View) Origin(p string) string { return v.origin[p] }

// Setting is one effective setting of a chat: its key path, its value as
// JSON and the layer it came from.
type Setting struct {
	Path, Value, Layer string
}

// Settings lists every setting of v by key path, sorted.
func (v *View) Settings() []Setting {
	leaves := flatten(v)
	out := make([]Setting, 0, len(leaves))
	for _, p := range slices.Sorted(maps.Keys(leaves)) {
		out = append(out, Setting{Path: p, Value: leaves[p], Layer: v.origin[p]})
	}
	return out
}

// ErrNoAccount is returned for a chat of an account the configuration
// does not have.
var ErrNoAccount = errors.New("no such account")

// Resolve computes the view of the chat at a from cfg.
func Resolve(cfg config.Config, a Address) (*View, error) {
	src, err := sourcesOf(cfg, a)
	if err != nil {
		return nil, err
	}
	return resolve(cfg, a, src)
}

// sources are what a chat's view is made of.
type sources struct {
	section    string // "channels.onebot"
	chanBase   base   // the channel's top-level account
	acctBase   base   // the chat's account
	acctPrefix string // section + ".accounts.<id>", "" for the default account
	entries    []entry
}

// entry is one layer of chat entries: its key path and settings.
type entry struct {
	name string
	chat config.Chat
}

// base is what an account gives a chat.
type base struct {
	receive config.Receive
	quote   bool
	gap     int
}

func sourcesOf(cfg config.Config, a Address) (sources, error) {
	kindKey := "groups"
	if a.Kind == Direct {
		kindKey = "direct"
	}
	s := sources{section: "channels." + a.Channel}
	if a.Account != "default" {
		s.acctPrefix = s.section + ".accounts." + a.Account
	}
	var chanEntries, acctEntries map[string]config.Chat
	switch a.Channel {
	case OneBot:
		ob := cfg.Channels.OneBot
		acct, ok := ob.All()[a.Account]
		if !ok {
			return s, fmt.Errorf("chat %s: %w %q under channels.onebot", a, ErrNoAccount, a.Account)
		}
		s.chanBase = base{ob.Receive, ob.Quote.Enabled, ob.SendGapMs}
		s.acctBase = base{acct.Receive, acct.Quote.Enabled, acct.SendGapMs}
		chanEntries, acctEntries = oneBotChats(ob.OneBotAccount, a.Kind), oneBotChats(acct, a.Kind)
	case Feishu:
		fs := cfg.Channels.Feishu
		acct, ok := fs.All()[a.Account]
		if !ok {
			return s, fmt.Errorf("chat %s: %w %q under channels.feishu", a, ErrNoAccount, a.Account)
		}
		s.chanBase = base{fs.Receive, fs.Quote.Enabled, 0}
		s.acctBase = base{acct.Receive, acct.Quote.Enabled, 0}
		chanEntries, acctEntries = fs.Groups, acct.Groups
		if a.Kind == Direct {
			chanEntries, acctEntries = fs.Direct, acct.Direct
		}
	default:
		return s, fmt.Errorf("chat %s: unknown channel %q", a, a.Channel)
	}
	if a.Account == "default" {
		acctEntries = nil // the channel's entries are the account's
	}
	ids := []string{Any}
	if a.ID != Any {
		ids = append(ids, a.ID)
	}
	for _, id := range ids {
		if e, ok := chanEntries[id]; ok {
			s.entries = append(s.entries, entry{s.section + "." + kindKey + "." + id, e})
		}
		if e, ok := acctEntries[id]; ok {
			s.entries = append(s.entries, entry{s.acctPrefix + "." + kindKey + "." + id, e})
		}
	}
	return s, nil
}

// oneBotChats are an account's QQ chat entries of a kind as Chats, with
// their sendGapMs (which Chat.Raw holds).
func oneBotChats(a config.OneBotAccount, kind string) map[string]config.Chat {
	src := a.Groups
	if kind == Direct {
		src = a.Direct
	}
	if len(src) == 0 {
		return nil
	}
	out := make(map[string]config.Chat, len(src))
	for id, e := range src {
		out[id] = e.Chat
	}
	return out
}

// baseView is what a chat gets before any chat entry: the agent
// defaults, messages and its account.
func baseView(cfg config.Config, channel string, b base) View {
	d, q := cfg.Agents.Defaults, cfg.Messages.Queue
	mode := q.Mode
	if m, ok := q.ByChannel[channel]; ok {
		mode = m
	}
	return View{
		Enabled: true, Receive: b.receive.Clone(), Quote: config.ChatQuote{Enabled: b.quote},
		SystemPrompt: d.SystemPrompt, Model: config.ModelChoice{Primary: d.Model.Primary, Fallbacks: slices.Clone(d.Model.Fallbacks)},
		ImageModel: config.ModelChoice{Primary: d.ImageModel.Primary, Fallbacks: slices.Clone(d.ImageModel.Fallbacks)},
		Queue:      config.ChatQueue{Mode: mode, Cap: q.Cap}, HumanDelay: d.HumanDelay, BlockStreaming: d.BlockStreaming,
		ResponsePrefix: cfg.Messages.ResponsePrefix, SendGapMs: b.gap, Limits: cfg.Limits,
	}
}

func resolve(cfg config.Config, a Address, src sources) (*View, error) {
	v := baseView(cfg, a.Channel, src.acctBase)
	// Who set the base settings is found by comparing them with the
	// layers below: a value equal to the one below counts as that layer's.
	def := config.Default()
	defBase := base{def.Channels.OneBot.Receive, def.Channels.OneBot.Quote.Enabled, def.Channels.OneBot.SendGapMs}
	if a.Channel == Feishu {
		defBase = base{def.Channels.Feishu.Receive, def.Channels.Feishu.Quote.Enabled, 0}
	}
	defView := baseView(def, a.Channel, defBase)
	chanView := baseView(cfg, a.Channel, src.chanBase)
	got, below, channel := flatten(&v), flatten(&defView), flatten(&chanView)
	v.origin = make(map[string]string, len(got))
	for p, val := range got {
		layer := "default"
		switch {
		case strings.HasPrefix(p, "receive.") || strings.HasPrefix(p, "quote.") || p == "sendGapMs":
			if src.acctPrefix != "" && val != channel[p] {
				layer = src.acctPrefix
			} else if channel[p] != below[p] {
				layer = src.section
			}
		case p == "queue.mode" && val != below[p]:
			layer = "messages.queue.mode"
			if _, ok := cfg.Messages.Queue.ByChannel[a.Channel]; ok {
				layer = "messages.queue.byChannel." + a.Channel
			}
		case (strings.HasPrefix(p, "queue.") || p == "responsePrefix") && val != below[p]:
			layer = "messages"
		case strings.HasPrefix(p, "limits.") && val != below[p]:
			layer = "limits"
		case (strings.HasPrefix(p, "model.") || strings.HasPrefix(p, "imageModel.") || strings.HasPrefix(p, "humanDelay.") || strings.HasPrefix(p, "blockStreaming.") || p == "systemPrompt") && val != below[p]:
			layer = "agents.defaults"
		}
		v.origin[p] = layer
	}
	for _, e := range src.entries {
		if err := v.apply(e); err != nil {
			return nil, fmt.Errorf("%s: %w", e.name, err)
		}
	}
	if a.Channel != OneBot {
		delete(v.origin, "sendGapMs")
	}
	return &v, nil
}

// apply lays the entry e over v.
func (v *View) apply(e entry) error {
	v.Layers = append(v.Layers, e.name)
	prompt := v.SystemPrompt
	*v = v.clone() // the entry's lists must not write into the layers below
	if err := json.Unmarshal(e.chat.Raw(), v); err != nil {
		return err
	}
	if e.chat.Sets("systemPrompt") && e.chat.SystemPromptMode == "append" {
		if strings.TrimSpace(prompt) != "" {
			v.SystemPrompt = prompt + "\n\n" + e.chat.SystemPrompt
		}
		v.origin["systemPrompt"] = v.origin["systemPrompt"] + " + " + e.name
	} else if e.chat.Sets("systemPrompt") {
		v.origin["systemPrompt"] = e.name
	}
	for _, p := range e.chat.Set() {
		if p != "systemPrompt" && p != "systemPromptMode" {
			v.origin[p] = e.name
		}
	}
	return nil
}

// clone copies v with lists and origins of its own.
func (v View) clone() View {
	v.Receive = v.Receive.Clone()
	v.Model.Fallbacks = slices.Clone(v.Model.Fallbacks)
	v.ImageModel.Fallbacks = slices.Clone(v.ImageModel.Fallbacks)
	v.AllowFrom, v.DenyFrom = slices.Clone(v.AllowFrom), slices.Clone(v.DenyFrom)
	v.Tools.Allow, v.Tools.Deny = slices.Clone(v.Tools.Allow), slices.Clone(v.Tools.Deny)
	v.Layers = slices.Clone(v.Layers)
	v.origin = maps.Clone(v.origin)
	return v
}

// flatten maps every setting of v to its value as JSON; lists are
// settings, not their elements, and an absent list reads [].
func flatten(v *View) map[string]string {
	b, err := json.Marshal(v)
	if err != nil {
		panic("chatconf: " + err.Error()) // a View always encodes
	}
	var tree map[string]any
	if err := json.Unmarshal(b, &tree); err != nil {
		panic("chatconf: " + err.Error())
	}
	out := map[string]string{}
	var walk func(prefix string, t map[string]any)
	walk = func(prefix string, t map[string]any) {
		for k, val := range t {
			p := k
			if prefix != "" {
				p = prefix + "." + k
			}
			if sub, ok := val.(map[string]any); ok {
				walk(p, sub)
				continue
			}
			s, _ := json.Marshal(val)
			if string(s) == "null" {
				s = []byte("[]")
			}
			out[p] = string(s)
		}
	}
	walk("", tree)
	if v.origin != nil {
		if _, ok := v.origin["sendGapMs"]; !ok {
			delete(out, "sendGapMs")
		}
	}
	return out
}

// Table holds the views of one configuration: every chat with an entry
// of its own and, per account and kind, the view of the chats without one.
type Table struct {
	views map[Address]*View
}

// NewTable computes the views of cfg. A chat entry that cannot be laid
// over its layers (config.Parse reports it first) is an error.
func NewTable(cfg config.Config) (*Table, error) {
	t := &Table{views: map[Address]*View{}}
	var errs []error
	add := func(ch, acct, kind string, ids []string) {
		for _, id := range append([]string{Any}, ids...) {
			a := Address{ch, acct, kind, id}
			if _, done := t.views[a]; done {
				continue
			}
			v, err := Resolve(cfg, a)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			t.views[a] = v
		}
	}
	ob := cfg.Channels.OneBot
	for id, acct := range ob.All() {
		for _, kind := range []string{Group, Direct} {
			add(OneBot, id, kind, slices.Concat(slices.Collect(maps.Keys(oneBotChats(ob.OneBotAccount, kind))), slices.Collect(maps.Keys(oneBotChats(acct, kind)))))
		}
	}
	fs := cfg.Channels.Feishu
	for id, acct := range fs.All() {
		add(Feishu, id, Group, slices.Concat(slices.Collect(maps.Keys(fs.Groups)), slices.Collect(maps.Keys(acct.Groups))))
		add(Feishu, id, Direct, slices.Concat(slices.Collect(maps.Keys(fs.Direct)), slices.Collect(maps.Keys(acct.Direct))))
	}
	return t, errors.Join(errs...)
}

// Lookup returns the view of the chat at a: its own, else the view of its
// account's chats of its kind; nil for an account the configuration does
// not have.
func (t *Table) Lookup(a Address) *View {
	if v, ok := t.views[a]; ok {
		return v
	}
	a.ID = Any
	return t.views[a]
}

// Each calls f with every view of t and its address (ID Any for the view
// of the chats without an entry).
func (t *Table) Each(f func(Address, *View)) {
	for a, v := range t.views {
		f(a, v)
	}
}

// Resolver serves the views of the configuration in force; Swap puts a
// new configuration in force for the lookups that follow.
type Resolver struct {
	t atomic.Pointer[Table]
	// onSwap are told of every new table.
	onSwap []func(*Table)
}

// NewResolver returns a Resolver serving cfg's views.
func NewResolver(cfg config.Config) (*Resolver, error) {
	t, err := NewTable(cfg)
	if err != nil {
		return nil, err
	}
	r := &Resolver{}
	r.t.Store(t)
	return r, nil
}

// Table returns the table in force.
func (r *Resolver) Table() *Table { return r.t.Load() }

// Lookup returns the view of the chat at a in the configuration in force.
func (r *Resolver) Lookup(a Address) *View { return r.t.Load().Lookup(a) }

// OnSwap registers f to learn every table Swap puts in force, to rebuild
// what it derives from the views. Register before the first Swap.
func (r *Resolver) OnSwap(f func(*Table)) { r.onSwap = append(r.onSwap, f) }

// Swap puts cfg's views in force; on error the views in force stay.
func (r *Resolver) Swap(cfg config.Config) error {
	t, err := NewTable(cfg)
	if err != nil {
		return err
	}
	for _, f := range r.onSwap {
		f(t)
	}
	r.t.Store(t)
	return nil
}
