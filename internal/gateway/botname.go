package gateway

import (
	"context"
	"encoding/json"
	"sync"
	"time"

	"github.com/pincerbot/pincer/internal/channel/onebot"
	"github.com/pincerbot/pincer/internal/channel/onebot/wire"
	"github.com/pincerbot/pincer/internal/msg"
)

// botNameTimeout bounds a get_login_info asked for the dashboard;
// botNameRetry is how long an implementation that gave no name is not
// asked again.
const (
	botNameTimeout = 2 * time.Second
	botNameRetry   = time.Minute
)

// botNames keeps the QQ bots' nicknames for the dashboard and pincer
// status, asked of each account's implementation with get_login_info
// (as pincer doctor asks it) the first time the account is shown
// connected, and again when it is logged in as another QQ number.
type botNames struct {
	mu    sync.Mutex
	known map[msg.AccountID]botName
}

// botName is the nickname of the QQ number self, "" while unknown.
type botName struct {
	self  wire.ID
	name  string
	asked time.Time
}

// of returns the nickname of account id's bot, logged in as self, asking
// a's implementation when it is not known yet; "" when it cannot tell.
func (b *botNames) of(ctx context.Context, id msg.AccountID, a *onebot.Account, self wire.ID) string {
	b.mu.Lock()
	k, ok := b.known[id]
	b.mu.Unlock()
	if ok && k.self == self && (k.name != "" || time.Since(k.asked) < botNameRetry) {
		return k.name
	}
	name := ""
	if data, err := a.Call(ctx, "get_login_info", nil, botNameTimeout); err == nil {
		var info struct {
			UserID   wire.ID `json:"user_id"`
			Nickname string  `json:"nickname"`
		}
		if json.Unmarshal(data, &info) == nil && info.UserID == self {
			name = info.Nickname
		}
	}
	b.mu.Lock()
	if b.known == nil {
		b.known = map[msg.AccountID]botName{}
	}
	b.known[id] = botName{self: self, name: name, asked: time.Now()}
	b.mu.Unlock()
	return name
}
