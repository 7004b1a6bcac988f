package onebot

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/pincerbot/pincer/internal/channel"
	"github.com/pincerbot/pincer/internal/msg"
	"github.com/pincerbot/pincer/internal/outbox"
)

var _ outbox.Finder = (*Account)(nil)

// findWithin is how many of a chat's newest messages FindSent reads.
const findWithin = 20

// findSkew is how much earlier than the reply was stored the platform's
// clock may date a message that part became.
const findSkew = time.Minute

// FindSent implements outbox.Finder: it reads the chat's newest messages
// (get_group_msg_history or get_friend_msg_history) and looks for the
// bot's own message with the text of part (a chunk of the reply's text;
// media are not looked for), dated since since (less findSkew, for the
// platform's clock), quoting what the part quotes, and not among the ids
// recorded as sent: a message recorded as sent was confirmed for some
// part, and this part's was not. An implementation without history finds
// nothing, and the part is sent again, as before; so does one whose
// history does not answer in time. With no connection to ask over (in a
// cluster, no process holding it), or one that drops while asked, the
// error says so, and the outbox asks again before it sends.
func (a *Account) FindSent(ctx context.Context, out msg.Outbound, part int, since time.Time) (msg.MessageID, bool, error) {
	chunks := chunkText(out.Text, a.opts.ChunkLimit)
	self := a.Self()
	if part < 0 || part >= len(chunks) || self == 0 {
		return "", false, nil
	}
	want := strings.TrimSpace(chunks[part])
	if want == "" {
		return "", false, nil
	}
	quotes := part == replyPart(out, len(chunks))
	ms, err := a.History(ctx, out.Peer, channel.HistoryQuery{Count: findWithin})
	if errors.Is(err, errNotConnected) || errors.Is(err, errDisconnected) {
		return "", false, err
	}
	if err != nil {
		a.log.Debug("the chat's history cannot tell whether a part was sent; sending it", "peer", out.Peer.String(), "err", err)
		return "", false, nil
	}
	me := msg.UserID(self.String())
	for i := len(ms) - 1; i >= 0; i-- { // the newest first
		m := ms[i]
		if m.Sender.ID != me || m.Time.Before(since.Add(-findSkew)) || !strings.Contains(m.Text, want) {
			continue
		}
		if quotes && m.ReplyTo != out.ReplyTo {
			continue
		}
		if a.sentBefore(ctx, m.ID) {
			continue
		}
		return m.ID, true, nil
	}
	return "", false, nil
}

// sentBefore reports whether id is recorded as a message the bot sent
// (and the platform confirmed).
func (a *Account) sentBefore(ctx context.Context, id msg.MessageID) bool {
	if a.sent.Has(id) {
		return true
	}
	if a.opts.Sent == nil {
		return false
	}
	ok, err := a.opts.Sent.WasSent(ctx, ChannelID, a.opts.ID, id)
	return err == nil && ok
}
