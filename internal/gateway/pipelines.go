package gateway

import (
	"context"
	"log/slog"
	"time"

	"github.com/pincerbot/pincer/internal/channel"
	"github.com/pincerbot/pincer/internal/channel/webchat"
	"github.com/pincerbot/pincer/internal/command"
	"github.com/pincerbot/pincer/internal/config"
	"github.com/pincerbot/pincer/internal/engine"
	"github.com/pincerbot/pincer/internal/msg"
	"github.com/pincerbot/pincer/internal/pipeline"
	"github.com/pincerbot/pincer/internal/store"
	"github.com/pincerbot/pincer/internal/trigger"
)

// startPipeline builds a receive pipeline, logs the settings it skipped
// (under configKey) and, when restore says, restores what it buffered
// before a restart (in a cluster, each partition's owner restores its
// chats instead).
func startPipeline(ctx context.Context, o pipeline.Options, configKey string, restore bool) (*pipeline.Pipeline, error) {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	p, warnings := pipeline.New(o)
	for _, w := range warnings {
		o.Logger.Warn("config: " + configKey + " receive.mention: " + w)
	}
	if !restore {
		return p, nil
	}
	if err := p.Restore(ctx); err != nil {
		return nil, err
	}
	return p, nil
}

// accountPipeline starts the receive pipeline of account id of channel
// ch: o holds what is the account's own (its bot, sending, history,
// quotes), the rest is the same for every chat account.
func accountPipeline(ctx context.Context, eng *engine.Engine, st store.Store, loc *time.Location, log *slog.Logger, ch msg.ChannelID, id msg.AccountID, section string, restore bool, o pipeline.Options) (*pipeline.Pipeline, error) {
	o.Engine, o.Trace = engineTurns{eng}, eng.Tracer()
	o.IsCommand, o.IsAbort = eng.Commands().IsControl, command.IsAbort
	o.Location, o.Store, o.Channel, o.Account = loc, st, ch, id
	o.LocalHistory = pipeline.LocalHistory{Log: st, Channel: ch, Account: id}
	o.Logger = log.With("channel", string(ch), "account", string(id))
	return startPipeline(ctx, o, section, restore)
}

// engineTurns runs the pipeline's turns on the engine.
type engineTurns struct{ e *engine.Engine }

func (t engineTurns) Turn(ctx context.Context, turn pipeline.Turn, r channel.Replier) error {
	return t.e.DispatchContext(ctx, engine.MsgContext{
		Message: turn.Message, Body: turn.Body, BodyForAgent: turn.BodyForAgent,
		RawBody: turn.RawBody, CommandBody: turn.CommandBody, NoCommands: turn.NoCommands,
		Standalone: turn.Standalone, Consume: turn.Consume, Delivery: turn.Delivery, Media: turn.Media,
	}, r)
}

// ReceiveSettings turns a channel account's receive configuration into
// pipeline settings.
func ReceiveSettings(r config.Receive) pipeline.Settings {
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	m, rt, d, s, h := r.Mention, r.Realtime, r.Digest, r.Summary, r.History
	return pipeline.Settings{
		Mention: trigger.Rules{
			Enabled: m.Enabled, RequireMentionInGroup: m.RequireMentionInGroup, Keywords: m.Keywords,
			KeywordMatch: trigger.Match(m.KeywordMatch), CaseSensitive: m.CaseSensitive,
			TriggerOnReplyToSelf: m.TriggerOnReplyToSelf, AlwaysReplyInDirect: m.AlwaysReplyInDirect,
		},
		Realtime: pipeline.RealtimeSettings{Enabled: rt.Enabled, Window: ms(rt.WindowMs), MaxWindow: ms(rt.MaxWindowMs), MaxMessages: rt.MaxMessages, MaxChars: rt.MaxChars},
		Digest: pipeline.DigestSettings{
			Enabled: d.Enabled, Interval: ms(d.IntervalMs), MaxMessages: d.MaxMessages, MinMessages: d.MinMessagesClamped(),
			Prompt: d.Prompt, Scope: d.Scope, Peers: d.Peers, MaxTranscriptChars: d.MaxTranscriptChars,
		},
		Summary: pipeline.SummarySettings{
			Enabled: s.Enabled, Commands: s.Commands, Count: s.Count, MaxCount: s.MaxCount,
			Prompt: s.Prompt, Scope: s.Scope, Peers: s.Peers, MaxTranscriptChars: s.MaxTranscriptChars,
		},
		History: pipeline.HistorySettings{Enabled: h.Enabled, MaxMessages: h.MaxMessages, MaxChars: h.MaxChars, MaxAge: ms(h.MaxAgeMs)},
	}
}

// webchatPipeline is the web chat's receive path: direct chats only, its
// history read from what pincer logged, restored replies sent to the
// browser's event stream.
func webchatPipeline(ctx context.Context, c config.Webchat, wc *webchat.Channel, eng *engine.Engine, st store.Store, loc *time.Location, log *slog.Logger) (*pipeline.Pipeline, error) {
	plog := log.With("channel", string(webchat.ID))
	return startPipeline(ctx, pipeline.Options{
		Receive: ReceiveSettings(c.Receive), Bot: noBot{}, Engine: engineTurns{eng}, Send: wc.Send,
		History:   pipeline.LocalHistory{Log: st, Channel: webchat.ID, Account: msg.DefaultAccount},
		IsCommand: eng.Commands().IsControl, IsAbort: command.IsAbort, Location: loc, Logger: plog,
		Store: st, Channel: webchat.ID, Account: msg.DefaultAccount, Trace: eng.Tracer(),
		ReplierFor: func(msg.Message) channel.Replier { return channel.SenderReplier{Adapter: wc} },
	}, "channels.webchat", true)
}

// noBot: the web chat has no bot user to mention or reply to.
type noBot struct{}

func (noBot) Self() msg.UserID { return "" }
func (noBot) SentByBot(context.Context, msg.Peer, msg.MessageID) (bool, bool) {
	return false, true
}
