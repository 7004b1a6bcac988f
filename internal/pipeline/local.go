package pipeline

import (
	"context"
	"fmt"
	"strings"

	"github.com/pincerbot/pincer/internal/channel"
	"github.com/pincerbot/pincer/internal/msg"
	"github.com/pincerbot/pincer/internal/store"
)

// InboundLog reads the messages pincer has accepted; store.Store is one.
type InboundLog interface {
	RecentInbound(ctx context.Context, ch msg.ChannelID, acct msg.AccountID, peer msg.Peer, limit int) ([]store.LoggedMessage, error)
}

// LocalHistory is the history of a chat as pincer saw it, for channels
// whose platform keeps none (the web chat), or as a fallback.
type LocalHistory struct {
	Log     InboundLog
	Channel msg.ChannelID
	Account msg.AccountID
}

var _ channel.HistoryFetcher = LocalHistory{}

// History implements channel.HistoryFetcher.
func (l LocalHistory) History(ctx context.Context, peer msg.Peer, q channel.HistoryQuery) ([]msg.Message, error) {
	logged, err := l.Log.RecentInbound(ctx, l.Channel, l.Account, peer, max(q.Count, 1))
	if err != nil {
		return nil, fmt.Errorf("local history of %s: %w", peer, err)
	}
	out := make([]msg.Message, 0, len(logged))
	for _, lm := range logged {
		if strings.HasPrefix(string(lm.Message.ID), digestPrefix) {
			continue // a digest turn, not something anyone said
		}
		out = append(out, lm.Message)
	}
	return out, nil
}
