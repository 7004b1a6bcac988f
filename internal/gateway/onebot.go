package gateway

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/pincerbot/pincer/internal/agent"
	"github.com/pincerbot/pincer/internal/channel"
	"github.com/pincerbot/pincer/internal/channel/onebot"
	"github.com/pincerbot/pincer/internal/config"
	"github.com/pincerbot/pincer/internal/msg"
)

// OneBotOptions turns one account's settings into adapter options.
func OneBotOptions(id string, a config.OneBotAccount, log *slog.Logger) (onebot.AccountOptions, error) {
	filter, err := onebot.NewPeerFilter(a.AllowFrom, a.DenyFrom)
	if err != nil {
		return onebot.AccountOptions{}, fmt.Errorf("config: channels.onebot account %s: %w", id, err)
	}
	r := a.Reconnect
	return onebot.AccountOptions{
		ID: msg.AccountID(id), WSURL: a.WSURL, HTTPURL: a.HTTPURL, Token: a.AccessToken.Value(),
		SelfID: onebot.ID(a.SelfQQ()), Filter: filter,
		Reverse: a.ReverseWS.Enabled, Post: a.HTTPPost.Enabled, PostSecret: a.PostSecret(),
		ReplyToTrigger: a.ReplyToTrigger, AutoReact: a.GroupAutoReact, ReactEmoji: strconv.Itoa(a.GroupAutoReactEmojiID),
		ChunkLimit: a.TextChunkLimit, ChunkGap: time.Second,
		RequestTimeout: time.Duration(a.RequestTimeoutMs) * time.Millisecond,
		Reconnect: onebot.Reconnect{
			Enabled: r.Enabled, Retries: r.Retries,
			MinDelay: time.Duration(r.MinDelayMs) * time.Millisecond, MaxDelay: time.Duration(r.MaxDelayMs) * time.Millisecond,
		},
		Debug: a.Debug, Logger: log,
	}, nil
}

// qq is the QQ channel as the gateway runs it.
type qq struct {
	channel   *onebot.Channel
	endpoints map[string]http.Handler
	tools     map[msg.AccountID]*onebot.Account
}

// buildOneBot builds the active QQ accounts; nil when there are none.
func buildOneBot(cfg config.OneBot, log *slog.Logger) (*qq, error) {
	all := cfg.All()
	var accounts []*onebot.Account
	q := &qq{endpoints: map[string]http.Handler{}, tools: map[msg.AccountID]*onebot.Account{}}
	for _, id := range slices.Sorted(maps.Keys(all)) {
		c := all[id]
		if !c.Active() {
			continue
		}
		o, err := OneBotOptions(id, c, log)
		if err != nil {
			return nil, err
		}
		a := onebot.NewAccount(o)
		accounts = append(accounts, a)
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

// mentionGate lets group messages through only when they mention the bot
// or reply to one of its messages, and acknowledges those; direct
// messages always pass. The receive pipeline (keywords, windows, digests)
// takes its place when it exists.
type mentionGate struct {
	next channel.Sink
	ch   *onebot.Channel
}

func (g mentionGate) Dispatch(ctx context.Context, m msg.Message, r channel.Replier) error {
	if m.Peer.Kind == msg.Group {
		a, ok := g.ch.Account(m.Account)
		if !ok {
			return nil
		}
		self := a.Self()
		mentioned := self != 0 && m.Mentioned(msg.UserID(self.String()))
		if !mentioned && (m.ReplyTo == "" || !a.SentByBot(m.ReplyTo)) {
			return nil
		}
		a.Ack(ctx, m.Peer, m.ID)
	}
	return g.next.Dispatch(ctx, m, r)
}
