package feishu

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

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

// Waits before the long connection is tried again after the platform
// refused it: the first, and the longest.
const (
	refusedRetry    = time.Minute
	refusedRetryMax = 10 * time.Minute
)

// runLongConnection receives events over Feishu's long connection until
// ctx ends. The SDK's client reconnects by itself; it has no way to stop
// (its Start never returns), so it runs in a goroutine of its own, and
// when ctx ends pincer stops taking its events (they are answered with
// an error and redelivered to the next run) and the process exit closes
// the socket. When the platform refuses the app (Start returns, or the
// client gives up reconnecting) the account is StateRefused, logged with
// what to do, and a new client tries again after a while.
func (a *Account) runLongConnection(ctx context.Context) error {
	var stopped atomic.Bool
	defer stopped.Store(true)
	d := a.dispatcher(&stopped)
	wait := a.refusedRetry
	if wait <= 0 {
		wait = refusedRetry
	}
	for {
		if a.conn.health().State != StateRefused {
			a.conn.set(StateConnecting, nil)
		}
		l := &sdkLogger{a: a, gaveUp: make(chan error, 1)}
		cli := larkws.NewClient(a.opts.AppID, a.opts.AppSecret,
			larkws.WithEventHandler(d), larkws.WithDomain(a.opts.BaseURL), larkws.WithAutoReconnect(true),
			larkws.WithLogger(l), larkws.WithLogLevel(larkcore.LogLevelWarn))
		failed := make(chan error, 1)
		go func() {
			// Start returns only when the platform refused the app for
			// good (bad credentials, too many connections).
			failed <- cli.Start(context.WithoutCancel(ctx))
		}()
		a.log.Info("Feishu long connection starting")
		var err error
		select {
		case <-ctx.Done():
			return nil
		case err = <-failed:
		case err = <-l.gaveUp:
		}
		a.log.Error("Feishu long connection refused", "err", err, "hint", refusalHint(err, a.opts.AppID), "retry_in", wait.String())
		a.conn.set(StateRefused, err)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(wait):
		}
		wait = min(2*wait, refusedRetryMax)
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

// sdkLogger reads the long connection's state from its client's log
// lines and passes its warnings and errors on. gaveUp has the error of a
// client that stopped reconnecting (refused, or out of retries): it logs
// that error, alone, and never connects again.
type sdkLogger struct {
	a      *Account
	gaveUp chan error
}

func (l *sdkLogger) line(level string, args []any) {
	msg, keep := l.a.conn.observe(level, args)
	if len(args) == 1 {
		if err, ok := args[0].(error); ok && level == "error" {
			select {
			case l.gaveUp <- err:
			default:
			}
			return
		}
	}
	switch keep {
	case "info":
		l.a.log.Info(msg)
	case "warn":
		l.a.log.Warn(msg, "detail", fmt.Sprint(args...))
	case "error":
		l.a.log.Error(msg, "detail", fmt.Sprint(args...))
	}
}

func (l *sdkLogger) Debug(_ context.Context, args ...any) { l.line("debug", args) }
func (l *sdkLogger) Info(_ context.Context, args ...any)  { l.line("info", args) }
func (l *sdkLogger) Warn(_ context.Context, args ...any)  { l.line("warn", args) }
func (l *sdkLogger) Error(_ context.Context, args ...any) { l.line("error", args) }
