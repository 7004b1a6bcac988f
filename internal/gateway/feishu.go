package gateway

import (
	"context"
	"fmt"
	"github.com/pincerbot/pincer/internal/trace"
	"log/slog"
	"maps"
	"net/http"
	"slices"
	"time"

	"github.com/pincerbot/pincer/internal/channel"
	"github.com/pincerbot/pincer/internal/channel/feishu"
	"github.com/pincerbot/pincer/internal/config"
	"github.com/pincerbot/pincer/internal/engine"
	"github.com/pincerbot/pincer/internal/msg"
	"github.com/pincerbot/pincer/internal/outbox"
	"github.com/pincerbot/pincer/internal/pipeline"
	"github.com/pincerbot/pincer/internal/quote"
	"github.com/pincerbot/pincer/internal/store"
)

// lark is the Feishu channel as the gateway runs it.
type lark struct {
	accounts  map[msg.AccountID]*feishu.Account
	receive   map[msg.AccountID]config.Receive
	botChain  map[msg.AccountID]int
	quote     map[msg.AccountID]config.FeishuQuote
	endpoints map[string]http.Handler
	// chats are the settings of the apps' chats.
	chats *chats
}

// FeishuOptions turns one app's settings into account options; chat
// workspaces are under workspace.
func FeishuOptions(id string, a config.FeishuAccount, workspace string, log *slog.Logger) (feishu.Options, error) {
	filter, err := feishu.NewPeerFilter(a.AllowFrom, a.DenyFrom)
	if err != nil {
		return feishu.Options{}, fmt.Errorf("config: channels.feishu account %s: %w", id, err)
	}
	mf := a.MergeForward
	return feishu.Options{
		ID: msg.AccountID(id), AppID: a.AppID, AppSecret: a.AppSecret.Value(), BaseURL: a.BaseURL(), Mode: a.Mode,
		VerificationToken: a.VerificationToken.Value(), EncryptKey: a.EncryptKey.Value(), Filter: filter,
		ChunkLimit: a.TextChunkLimit, TypingReaction: a.TypingReaction, Streaming: a.Streaming,
		MergeForward: feishu.MergeForward{Enabled: mf.Enabled, MaxDepth: mf.MaxDepth, MaxLines: mf.MaxLines, MaxChars: mf.MaxChars},
		Workspace:    feishu.ChatWorkspace(workspace, msg.AccountID(id)),
		Logger:       log,
	}, nil
}

// buildFeishu builds the active Feishu apps; nil when there are none. The
// store remembers redeliveries and the bot's messages; the apps deliver
// through out.
func buildFeishu(cfg config.Feishu, workspace string, kit *mediaKit, st store.Store, out *outbox.Outbox, tr *trace.Recorder, cs *chats, log *slog.Logger) (*lark, error) {
	all := cfg.All()
	l := &lark{
		accounts: map[msg.AccountID]*feishu.Account{}, receive: map[msg.AccountID]config.Receive{}, botChain: map[msg.AccountID]int{},
		quote: map[msg.AccountID]config.FeishuQuote{}, endpoints: map[string]http.Handler{}, chats: cs,
	}
	for _, id := range slices.Sorted(maps.Keys(all)) {
		c := all[id]
		if !c.Active() {
			continue
		}
		o, err := FeishuOptions(id, c, workspace, log)
		o.Fetch = kit.fetch
		o.Trace = tr
		if err != nil {
			return nil, err
		}
		o.Dedup, o.Sent, o.Outbox = st, st, out
		a := feishu.New(o)
		if out != nil {
			out.Register(feishu.ChannelID, a.ID(), a)
		}
		if c.Mode == config.FeishuWebhookMode {
			h, err := a.WebhookHandler()
			if err != nil {
				return nil, fmt.Errorf("config: channels.feishu account %s: %w", id, err)
			}
			l.endpoints[c.Webhook.Path] = h
		}
		l.accounts[a.ID()] = a
		l.receive[a.ID()] = c.Receive
		l.botChain[a.ID()] = c.MaxBotReplyChain
		l.quote[a.ID()] = c.Quote
	}
	if len(l.accounts) == 0 {
		return nil, nil
	}
	return l, nil
}

// quoteLogWithin is how far back in a chat's log a quoted message is
// looked for before Feishu is asked.
const quoteLogWithin = 500

// pipelines builds the receive pipeline of every app, routed by account.
func (l *lark) pipelines(ctx context.Context, eng *engine.Engine, st store.Store, loc *time.Location, log *slog.Logger, restore bool) (accountRouter, []*pipeline.Pipeline, error) {
	router := accountRouter{}
	var all []*pipeline.Pipeline
	for _, id := range slices.Sorted(maps.Keys(l.accounts)) {
		a := l.accounts[id]
		qc := l.quote[id]
		resolver := quote.New(a, quote.Settings{
			Enabled: qc.Enabled, MaxNodes: 1, MaxChars: 8000,
			Timeout: time.Duration(qc.TimeoutMs) * time.Millisecond,
		}, loc).LogFirst(func(ctx context.Context, src msg.Message, id msg.MessageID) (msg.Message, bool) {
			// A quoted forward the log holds expanded, and in a group any
			// other message it holds complete, is read from it.
			lm, ok, err := st.FindInbound(ctx, src.Channel, src.Account, src.Peer, id, quoteLogWithin)
			if err != nil || !ok || lm.Pending || !a.QuotesFromLog(lm.Message, src.Peer.Kind == msg.Group) {
				return msg.Message{}, false
			}
			return lm.Message, true
		})
		settings := ReceiveSettings(l.receive[id])
		settings.MaxBotReplyChain = l.botChain[id]
		p, err := accountPipeline(ctx, eng, st, loc, log, feishu.ChannelID, id, "channels.feishu", restore, pipeline.Options{
			Quote: resolver.Resolved, Enrich: a.Enrich, Receive: settings, Chat: l.chats.rulesFor(feishu.ChannelID, id),
			Bot: a, Send: a.Send, History: a, ReplierFor: a.ReplierFor,
		})
		if err != nil {
			return nil, nil, err
		}
		router[id] = p
		all = append(all, p)
	}
	return router, all, nil
}

// lookup finds a running app by account id.
func (l *lark) lookup(id msg.AccountID) (*feishu.Account, bool) {
	a, ok := l.accounts[id]
	return a, ok
}

// adapter is the Feishu channel for heartbeats and operator sends: it
// routes a payload to its account.
func (l *lark) adapter() channel.Adapter { return larkAdapter{l} }

type larkAdapter struct{ l *lark }

func (larkAdapter) Name() msg.ChannelID { return feishu.ChannelID }

func (a larkAdapter) Run(ctx context.Context, sink channel.Sink) error {
	return a.l.run(ctx, sink)
}

func (a larkAdapter) Send(ctx context.Context, out msg.Outbound) (msg.MessageID, error) {
	acct, ok := a.l.accounts[out.Account]
	if !ok {
		return "", fmt.Errorf("feishu: no account %q", out.Account)
	}
	return acct.Send(ctx, out)
}

// run runs every app until ctx ends.
func (l *lark) run(ctx context.Context, sink channel.Sink) error {
	done := make(chan error, len(l.accounts))
	for _, a := range l.accounts {
		go func() { done <- a.Run(ctx, sink) }()
	}
	var first error
	for range l.accounts {
		if err := <-done; err != nil && first == nil {
			first = err
		}
	}
	return first
}
