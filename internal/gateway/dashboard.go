package gateway

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/pincerbot/pincer/internal/channel/feishu"
	"github.com/pincerbot/pincer/internal/channel/onebot"
	"github.com/pincerbot/pincer/internal/channel/webchat"
	"github.com/pincerbot/pincer/internal/dashboard"
	"github.com/pincerbot/pincer/internal/engine"
	"github.com/pincerbot/pincer/internal/lanes"
	"github.com/pincerbot/pincer/internal/limits"
	"github.com/pincerbot/pincer/internal/msg"
	"github.com/pincerbot/pincer/internal/outbox"
	"github.com/pincerbot/pincer/internal/pipeline"
	"github.com/pincerbot/pincer/internal/store"
)

// dashboardSource is what the gateway shows on the dashboard besides the
// decision trace.
type dashboardSource struct {
	version  string
	started  time.Time
	qq       *qq
	lark     *lark
	ingest   *lanes.Lanes
	capacity int
	out      *outbox.Outbox
	st       store.Store
	eng      *engine.Engine
	warnings []string
	pipes    []*pipeline.Pipeline
	chats    *chats
	names    botNames
	limiter  *limits.Limiter
}

// topTokens is how many people and chats the dashboard lists by today's
// token use.
const topTokens = 10

var _ dashboard.Source = (*dashboardSource)(nil)

// Status implements dashboard.Source.
func (s *dashboardSource) Status(ctx context.Context) dashboard.Status {
	// The configuration passed its check to start at all; what the check
	// warned of stays true while pincer runs.
	st := dashboard.Status{Version: s.version, Started: s.started,
		Config: dashboard.ConfigCheck{OK: true, Warnings: append([]string{}, s.warnings...), Errors: []string{}}}
	if s.qq != nil {
		for _, id := range slices.Sorted(maps.Keys(s.qq.tools)) {
			a := s.qq.tools[id]
			state, live, err := a.Health()
			acct := dashboard.Account{Channel: string(onebot.ChannelID), ID: string(id), State: string(state)}
			if state == onebot.StateListening && !live {
				acct.State = dashboard.StateWaiting
			}
			if self := a.Self(); self != 0 {
				acct.Self = self.String()
				if state == onebot.StateConnected && live {
					acct.Name = s.names.of(ctx, id, a, self)
				}
			}
			acct.Implementation, acct.Version = a.Implementation()
			if err != nil {
				acct.LastError, acct.Hint = s.qq.explain(id, err)
			}
			st.Accounts = append(st.Accounts, acct)
		}
	}
	if s.lark != nil {
		for _, id := range slices.Sorted(maps.Keys(s.lark.accounts)) {
			a := s.lark.accounts[id]
			h := a.Health()
			acct := dashboard.Account{Channel: string(feishu.ChannelID), ID: string(id), State: string(h.State), Self: string(a.Self()), Hint: h.Hint, LastPong: h.LastPong}
			if h.State == feishu.StateRefused {
				acct.State = dashboard.StateRefused
			}
			if h.Err != nil {
				acct.LastError, acct.LastErrorAt = h.Err.Error(), h.Since
			}
			st.Accounts = append(st.Accounts, acct)
		}
	}
	st.Queues = append(st.Queues, dashboard.Queue{Name: "ingest", Depth: s.ingest.Len(), Capacity: s.capacity})
	if s.out != nil {
		st.Queues = append(st.Queues, dashboard.Queue{Name: "outbox (replies not yet confirmed)", Depth: s.out.Pending()})
	}
	if s.limiter != nil {
		if day, users, chats, err := s.limiter.Top(ctx, topTokens); err == nil {
			st.Tokens = &dashboard.Tokens{Day: day, Users: tokenCounts(users), Chats: tokenCounts(chats)}
		}
	}
	return st
}

// tokenCounts converts the store's counts for the dashboard.
func tokenCounts(cs []store.TokenCount) []dashboard.TokenCount {
	out := make([]dashboard.TokenCount, len(cs))
	for i, c := range cs {
		out[i] = dashboard.TokenCount{Key: c.Key, Tokens: c.Tokens}
	}
	return out
}

// Chat implements dashboard.Source: the chat's logged messages (the
// history its buffers draw on) and its agent session.
func (s *dashboardSource) Chat(ctx context.Context, chat string) (dashboard.ChatView, error) {
	ch, acct, peer, err := dashboard.ParseChat(chat)
	if err != nil {
		return dashboard.ChatView{}, fmt.Errorf("%w: %w", dashboard.ErrNoChat, err)
	}
	view := dashboard.ChatView{Chat: chat, History: []dashboard.Line{}, Digests: []dashboard.Digest{}, Settings: []dashboard.Setting{}}
	if cs := s.chats.of(ch, acct, peer); cs != nil {
		for _, set := range cs.view.Settings() {
			view.Settings = append(view.Settings, dashboard.Setting{Path: set.Path, Value: set.Value, Layer: set.Layer})
		}
	}
	known := false
	for _, p := range s.pipes {
		if !p.Serves(ch, acct) {
			continue
		}
		held := p.Holds(peer)
		for _, m := range held.History {
			view.History = append(view.History, dashboard.Line{At: m.Time, Sender: senderName(m.Sender), Text: m.Text})
		}
		for _, w := range held.Windows {
			if view.Window == nil {
				view.Window = &dashboard.Window{Opened: w.Opened}
			}
			view.Window.Messages += w.Messages
			if w.Opened.Before(view.Window.Opened) {
				view.Window.Opened = w.Opened
			}
		}
		known = len(held.History) > 0 || len(held.Windows) > 0
	}
	if !known {
		// Nothing buffered: pincer's log of the chat, if it has one.
		logged, err := s.st.RecentInbound(ctx, ch, acct, peer, 1)
		if err != nil {
			return view, err
		}
		known = len(logged) > 0
	}
	key := s.eng.SessionKey(msg.Message{Channel: ch, Account: acct, Peer: peer})
	if sess, err := s.st.Session(ctx, key); err == nil {
		view.Session = &dashboard.Session{Key: key, Model: sess.ModelOverride, Updated: sess.UpdatedAt}
		if tr, err := s.st.Transcript(ctx, key); err == nil {
			view.Session.Turns = len(tr)
		}
	}
	if !known && view.Session == nil && ch != webchat.ID {
		return view, fmt.Errorf("%w: %s", dashboard.ErrNoChat, chat)
	}
	return view, nil
}

func senderName(s msg.Sender) string {
	if s.Name == "" {
		return string(s.ID)
	}
	return s.Name + " (" + string(s.ID) + ")"
}

// explain says what an account's connection error means and what to do,
// as pincer doctor says it of the account's forward WebSocket: "nothing
// listens at 127.0.0.1:3001" rather than the whole nested dial error.
// Other errors are given as they are, with no hint.
func (q *qq) explain(id msg.AccountID, err error) (detail, hint string) {
	if d, h, ok := q.forward[id].explain(err); ok {
		return d, h
	}
	return err.Error(), ""
}
