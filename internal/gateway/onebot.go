package gateway

import (
	"context"
	"fmt"
	"github.com/pincerbot/pincer/internal/trace"
	"log/slog"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/pincerbot/pincer/internal/agent"
	"github.com/pincerbot/pincer/internal/channel"
	"github.com/pincerbot/pincer/internal/channel/onebot"
	"github.com/pincerbot/pincer/internal/channel/onebot/wire"
	"github.com/pincerbot/pincer/internal/config"
	"github.com/pincerbot/pincer/internal/engine"
	"github.com/pincerbot/pincer/internal/msg"
	"github.com/pincerbot/pincer/internal/outbox"
	"github.com/pincerbot/pincer/internal/pipeline"
	"github.com/pincerbot/pincer/internal/quote"
	"github.com/pincerbot/pincer/internal/store"
)

// OneBotOptions turns one account's settings into adapter options.
func OneBotOptions(id string, a config.OneBotAccount, in config.Inbound, log *slog.Logger) (onebot.AccountOptions, error) {
	filter, err := onebot.NewPeerFilter(a.AllowFrom, a.DenyFrom)
	if err != nil {
		return onebot.AccountOptions{}, fmt.Errorf("config: channels.onebot account %s: %w", id, err)
	}
	if a.WSURL != "" && log != nil {
		log = slog.New(dialHints{log.Handler(), forwardOf(id, a)})
	}
	r := a.Reconnect
	// One gap spaces every message to a chat: separate replies (Pace) and
	// the parts of one long reply (ChunkGap) alike.
	gap := time.Duration(a.SendGapMs) * time.Millisecond
	setting := "channels.onebot.sendGapMs"
	if msg.AccountID(id) != msg.DefaultAccount {
		setting = "channels.onebot.accounts." + id + ".sendGapMs"
	}
	return onebot.AccountOptions{
		ID: msg.AccountID(id), WSURL: a.WSURL, HTTPURL: a.HTTPURL, Token: a.AccessToken.Value(),
		SelfID: wire.ID(a.SelfQQ()), Filter: filter,
		Reverse: a.ReverseWS.Enabled, Post: a.HTTPPost.Enabled, PostSecret: a.PostSecret(),
		ReplyToTrigger: a.ReplyToTrigger, AutoReact: a.GroupAutoReact, ReactEmoji: strconv.Itoa(a.GroupAutoReactEmojiID),
		ChunkLimit: a.TextChunkLimit, ChunkGap: gap, Pace: &onebot.Pacer{Gap: gap, Setting: setting},
		RequestTimeout: time.Duration(a.RequestTimeoutMs) * time.Millisecond,
		Reconnect: onebot.Reconnect{
			Enabled: r.Enabled, Retries: r.Retries,
			MinDelay: time.Duration(r.MinDelayMs) * time.Millisecond, MaxDelay: time.Duration(r.MaxDelayMs) * time.Millisecond,
		},
		Inbound:          onebot.Inbound{MaxChars: in.MaxCharsOrDefault()},
		InlineLocalMedia: a.InlineLocalMedia,
		Debug:            a.Debug, Logger: log,
	}, nil
}

// qq is the QQ channel as the gateway runs it.
type qq struct {
	channel   *onebot.Channel
	endpoints map[string]http.Handler
	tools     map[msg.AccountID]*onebot.Account
	receive   map[msg.AccountID]config.Receive
	quote     map[msg.AccountID]config.Quote
	// forward is the forward WebSocket of each account.
	forward map[msg.AccountID]forwardWS
	// chats are the settings of the accounts' chats.
	chats *chats
}

// forwardWS is an account's forward WebSocket: its URL ("" for none) and
// the key path of the settings it is in ("channels.onebot.").
type forwardWS struct{ url, key string }

// forwardOf is the forward WebSocket of account id.
func forwardOf(id string, a config.OneBotAccount) forwardWS {
	key := "channels.onebot."
	if id != string(msg.DefaultAccount) {
		key += "accounts." + id + "."
	}
	return forwardWS{url: a.WSURL, key: key}
}

// buildOneBot builds the active QQ accounts; nil when there are none.
// in bounds inbound messages; sent keeps the ids of the bot's messages
// across restarts; the accounts deliver through out and are its senders.
func buildOneBot(cfg config.OneBot, in config.Inbound, gw config.Gateway, kit *mediaKit, sent store.SentLog, out *outbox.Outbox, tr *trace.Recorder, cs *chats, remote func(msg.AccountID) onebot.Caller, log *slog.Logger) (*qq, error) {
	all := cfg.All()
	var accounts []*onebot.Account
	q := &qq{endpoints: map[string]http.Handler{}, tools: map[msg.AccountID]*onebot.Account{}, receive: map[msg.AccountID]config.Receive{}, quote: map[msg.AccountID]config.Quote{}, forward: map[msg.AccountID]forwardWS{}, chats: cs}
	for _, id := range slices.Sorted(maps.Keys(all)) {
		c := all[id]
		if !c.Active() {
			continue
		}
		o, err := OneBotOptions(id, c, in, log)
		o.Trace = tr
		if err != nil {
			return nil, err
		}
		o.Sent, o.Outbox = sent, out
		if remote != nil {
			o.Remote = remote(msg.AccountID(id))
		}
		if cs != nil {
			o.Pace.For = cs.gapFor(msg.AccountID(id))
		}
		// Attachment URLs come from the implementation, which may serve
		// them itself: its host is trusted, the rest of the network not.
		o.Fetch = kit.fetchFrom(oneBotHosts(c, gw)...)
		a := onebot.NewAccount(o)
		if out != nil {
			out.Register(onebot.ChannelID, a.ID(), a)
		}
		accounts = append(accounts, a)
		q.receive[a.ID()] = c.Receive
		q.quote[a.ID()] = c.Quote
		q.forward[a.ID()] = forwardOf(id, c)
		if c.ReverseWS.Enabled {
			q.endpoints[c.ReverseWS.Path] = http.HandlerFunc(a.ServeReverse)
		}
		if c.HTTPPost.Enabled {
			q.endpoints[c.HTTPPost.Path] = http.HandlerFunc(a.ServePost)
		}
		if c.Tools.Enabled {
			q.tools[a.ID()] = a
		}
		if c.SelfID == "" && c.WSURL == "" && !c.ReverseWS.Enabled && c.HTTPURL == "" {
			log.Warn("QQ account without a way to learn its QQ number: set selfId", "account", id)
		}
	}
	if len(accounts) == 0 {
		return nil, nil
	}
	ch, err := onebot.NewChannel(accounts...)
	if err != nil {
		return nil, err
	}
	q.channel = ch
	return q, nil
}

// addTools registers the QQ agent tools for the accounts that enable them.
// accounts lists the running accounts by id; none when q is nil.
func (q *qq) accounts() map[msg.AccountID]*onebot.Account {
	out := map[msg.AccountID]*onebot.Account{}
	if q == nil {
		return out
	}
	for id := range q.receive {
		if a, ok := q.channel.Account(id); ok {
			out[id] = a
		}
	}
	return out
}

func (q *qq) addTools(tools *agent.Tools, loc *time.Location) error {
	if len(q.tools) == 0 {
		return nil
	}
	lookup := func(id msg.AccountID) (*onebot.Account, bool) {
		a, ok := q.tools[id]
		return a, ok
	}
	if err := tools.Add(onebot.HistoryTool(lookup, loc)); err != nil {
		return err
	}
	return tools.Add(onebot.MembersTool(lookup))
}

// pipelines builds the receive pipeline of every account, routed by
// account id.
func (q *qq) pipelines(ctx context.Context, eng *engine.Engine, st store.Store, loc *time.Location, log *slog.Logger, restore bool) (accountRouter, []*pipeline.Pipeline, error) {
	router := accountRouter{}
	var all []*pipeline.Pipeline
	for id, r := range q.receive {
		a, _ := q.channel.Account(id)
		qc := q.quote[id]
		// A quoted message its sender recalls is asked for again.
		cache := quote.Cached(a, 2*time.Minute, 1000)
		a.OnRecall(cache.Forget)
		resolver := quote.New(cache, quote.Settings{
			Enabled: qc.Enabled, ResolveForward: qc.ResolveForward, MaxDepth: qc.MaxDepth, MaxNodes: qc.MaxNodes, MaxChars: qc.MaxChars,
			Timeout: time.Duration(qc.TimeoutMs) * time.Millisecond,
		}, loc)
		p, err := accountPipeline(ctx, eng, st, loc, log, onebot.ChannelID, id, "channels.onebot", restore, pipeline.Options{
			Quote: resolver.Resolved, Receive: ReceiveSettings(r), Chat: q.chats.rulesFor(onebot.ChannelID, id), PlainText: true,
			Bot: qqBot{a}, Send: a.Send, History: a, Ack: a, ReplierFor: a.ReplierFor,
		})
		if err != nil {
			return nil, nil, err
		}
		router[id] = p
		all = append(all, p)
	}
	return router, all, nil
}

// qqBot tells the pipeline who the bot is on a QQ account.
type qqBot struct{ a *onebot.Account }

var _ pipeline.Asker = qqBot{}

func (b qqBot) Self() msg.UserID {
	if s := b.a.Self(); s != 0 {
		return msg.UserID(s.String())
	}
	return ""
}

func (b qqBot) SentByBot(ctx context.Context, peer msg.Peer, id msg.MessageID) (bool, bool) {
	return b.a.SentByBot(ctx, peer, id)
}

// AskSentByBot implements pipeline.Asker: get_msg, off the chat's lane.
func (b qqBot) AskSentByBot(ctx context.Context, id msg.MessageID, then func(bool, error)) {
	b.a.AskSentByBot(ctx, id, then)
}

// accountRouter hands each message to its account's pipeline.
type accountRouter map[msg.AccountID]channel.Taker

var _ channel.Taker = accountRouter(nil)

func (r accountRouter) Dispatch(ctx context.Context, m msg.Message, rep channel.Replier) error {
	s, ok := r[m.Account]
	if !ok {
		return fmt.Errorf("gateway: no pipeline for account %q", m.Account)
	}
	return s.Dispatch(ctx, m, rep)
}

func (r accountRouter) Take(ctx context.Context, m msg.Message, rep channel.Replier, done func(error)) {
	s, ok := r[m.Account]
	if !ok {
		if done != nil {
			done(fmt.Errorf("gateway: no pipeline for account %q", m.Account))
		}
		return
	}
	s.Take(ctx, m, rep, done)
}
