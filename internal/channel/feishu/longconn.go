package feishu

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"

	larkcore "github.com/larksuite/oapi-sdk-go/v3/core"
	sdkevent "github.com/larksuite/oapi-sdk-go/v3/event"
	"github.com/larksuite/oapi-sdk-go/v3/event/dispatcher"
	larkws "github.com/larksuite/oapi-sdk-go/v3/ws"

	"github.com/pincerbot/pincer/internal/channel/feishu/larkevent"
)

// quietTypes are event types an app commonly subscribes to that pincer
// does not act on: each gets a handler that takes it, because an event
// without one is answered with an error and delivered again.
var quietTypes = []string{
	"im.message.message_read_v1",
	"im.message.reaction.created_v1",
	"im.message.reaction.deleted_v1",
	"im.chat.member.bot.added_v1",
	"im.chat.member.bot.deleted_v1",
	"im.chat.member.user.added_v1",
	"im.chat.member.user.deleted_v1",
	"im.chat.updated_v1",
	"im.chat.disbanded_v1",
	"application.bot.menu_v6",
	"p2p_chat_create",
}

// runLongConnection receives events over Feishu's long connection. The
// SDK's client has no way to stop (its Start never returns), so it runs
// in a goroutine of its own; when ctx ends pincer stops taking its events
// (they are answered with an error and redelivered to the next run) and
// the process exit closes the socket.
func (a *Account) runLongConnection(ctx context.Context) error {
	var stopped atomic.Bool
	d := a.dispatcher(&stopped)
	cli := larkws.NewClient(a.opts.AppID, a.opts.AppSecret,
		larkws.WithEventHandler(d), larkws.WithDomain(a.opts.BaseURL), larkws.WithAutoReconnect(true),
		larkws.WithLogger(sdkLogger{a}), larkws.WithLogLevel(larkcore.LogLevelWarn))
	failed := make(chan error, 1)
	go func() {
		// Start returns only when the platform refused the app for good
		// (bad credentials, too many connections).
		failed <- cli.Start(context.WithoutCancel(ctx))
	}()
	a.log.Info("Feishu long connection starting")
	select {
	case <-ctx.Done():
		stopped.Store(true)
		return nil
	case err := <-failed:
		stopped.Store(true)
		a.log.Error("Feishu long connection refused; check appId, appSecret and that the app has at most 50 connections", "err", err)
		return nil
	}
}

// dispatcher is the long connection's event dispatcher: message events
// go to deliver, the other common ones are taken and dropped. Once
// stopped is set every event is refused, so the platform delivers it
// again (to the next run).
func (a *Account) dispatcher(stopped *atomic.Bool) *dispatcher.EventDispatcher {
	take := func(hctx context.Context, ev *sdkevent.EventReq) error {
		if stopped.Load() {
			return errShuttingDown
		}
		env, err := larkevent.DecodeEnvelope(ev.Body)
		if err != nil {
			a.log.Warn("Feishu long connection: an event does not decode", "err", err)
			return nil
		}
		return a.deliver(hctx, env)
	}
	d := dispatcher.NewEventDispatcher("", "").
		OnCustomizedEvent(larkevent.EventMessageReceive, take).
		OnCustomizedEvent(larkevent.EventMessageRecalled, take)
	for _, t := range quietTypes {
		d.OnCustomizedEvent(t, func(context.Context, *sdkevent.EventReq) error { return nil })
	}
	return d
}

// errShuttingDown refuses the long connection's events after Run.
var errShuttingDown = errors.New("feishu: shutting down")

// sdkLogger passes the long connection's warnings and errors on.
type sdkLogger struct{ a *Account }

func (l sdkLogger) Debug(context.Context, ...any) {}
func (l sdkLogger) Info(context.Context, ...any)  {}
func (l sdkLogger) Warn(_ context.Context, args ...any) {
	l.a.log.Warn("Feishu long connection", "detail", fmt.Sprint(args...))
}
func (l sdkLogger) Error(_ context.Context, args ...any) {
	l.a.log.Error("Feishu long connection", "detail", fmt.Sprint(args...))
}
