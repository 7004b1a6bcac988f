package onebot

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/pincerbot/pincer/internal/channel"
	"github.com/pincerbot/pincer/internal/channel/onebot/wire"
	"github.com/pincerbot/pincer/internal/msg"
)

var _ channel.Acker = (*Account)(nil)

// reactor knows which reaction action the implementation has:
// set_msg_emoji_like (NapCat, LLOneBot, SnowLuma) or set_group_reaction
// (Lagrange.OneBot).
type reactor struct {
	lagrange atomic.Bool
	// impl is the implementation's name and version, once known.
	impl atomic.Pointer[[2]string]
}

// learn asks the implementation its name once per connection.
func (r *reactor) learn(ctx context.Context, c caller, log *slog.Logger) {
	data, err := c.Call(ctx, "get_version_info", nil, 10*time.Second)
	if err != nil {
		return
	}
	var info struct {
		AppName    string `json:"app_name"`
		AppVersion string `json:"app_version"`
	}
	if json.Unmarshal(data, &info) == nil && info.AppName != "" {
		r.lagrange.Store(strings.Contains(strings.ToLower(info.AppName), "lagrange"))
		r.impl.Store(&[2]string{info.AppName, info.AppVersion})
		log.Info("implementation", "app_name", info.AppName, "app_version", info.AppVersion)
	}
}

// Implementation returns the name and version the OneBot implementation
// gave for itself (get_version_info); empty until it answered.
func (a *Account) Implementation() (name, version string) {
	if p := a.reactor.impl.Load(); p != nil {
		return p[0], p[1]
	}
	return "", ""
}

// Ack acknowledges a group message the bot is going to answer, with the
// configured reaction, when groupAutoReact is on. It is best-effort:
// failures are logged at debug level and not returned.
func (a *Account) Ack(ctx context.Context, peer msg.Peer, id msg.MessageID) {
	if !a.opts.AutoReact || peer.Kind != msg.Group {
		return
	}
	if err := a.react(ctx, peer, id, a.opts.ReactEmoji); err != nil {
		a.log.Debug("reaction failed", "peer", peer.String(), "msg_id", string(id), "err", err)
	}
}

// react puts emoji (a QQ face id, or a Unicode code point in decimal) on a
// message.
func (a *Account) react(ctx context.Context, peer msg.Peer, id msg.MessageID, emoji string) error {
	mid, err := strconv.ParseInt(string(id), 10, 64)
	if err != nil {
		return fmt.Errorf("onebot: react: message id %q is not a number", id)
	}
	if !a.reactor.lagrange.Load() {
		_, err = a.Call(ctx, "set_msg_emoji_like", map[string]any{"message_id": mid, "emoji_id": emoji, "set": true}, 0)
		var ae *wire.ActionError
		if err == nil || !errors.As(err, &ae) || ae.Retcode != 1404 || peer.Kind != msg.Group {
			return err
		}
		// An implementation without it, found out without get_version_info.
		a.reactor.lagrange.Store(true)
	}
	if peer.Kind != msg.Group {
		return errors.New("onebot: react: this implementation reacts in groups only")
	}
	gid, err := strconv.ParseInt(peer.ID, 10, 64)
	if err != nil {
		return fmt.Errorf("onebot: react: group id %q is not a number", peer.ID)
	}
	_, err = a.Call(ctx, "set_group_reaction", map[string]any{"group_id": gid, "message_id": mid, "code": emoji, "is_add": true}, 0)
	return err
}
