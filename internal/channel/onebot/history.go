package onebot

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/pincerbot/pincer/internal/channel"
	"github.com/pincerbot/pincer/internal/msg"
)

var _ channel.HistoryFetcher = (*Account)(nil)

// History reads a chat's recent messages from the implementation.
func (a *Account) History(ctx context.Context, peer msg.Peer, q channel.HistoryQuery) ([]msg.Message, error) {
	return FetchHistory(ctx, a, a.opts.ID, peer, q)
}

// FetchHistory calls get_group_msg_history or get_friend_msg_history in
// the one form every implementation understands, and returns the messages
// oldest first, at most q.Count of them, the anchor itself left out.
//
// The implementations disagree on the anchor: go-cqhttp and LLOneBot read
// message_seq as a real sequence number, NapCat reads it as a message id,
// SnowLuma and Lagrange read message_id. The anchor goes out under both
// names with the same value; count goes out for all but go-cqhttp (which
// returns 20 regardless), and both spellings of the reverse flag are
// false. The answer is deduplicated by id and sorted by time here, since
// some return newest first and some repeat the anchor.
func FetchHistory(ctx context.Context, c Caller, account msg.AccountID, peer msg.Peer, q channel.HistoryQuery) ([]msg.Message, error) {
	count := max(q.Count, 1)
	params := map[string]any{"count": count, "reverse_order": false, "reverseOrder": false}
	id, err := strconv.ParseInt(peer.ID, 10, 64)
	if err != nil || id <= 0 {
		return nil, fmt.Errorf("onebot: history of %s: not a QQ or group number", peer)
	}
	var action string
	switch peer.Kind {
	case msg.Group:
		if ID(id) == PlaceholderGroup {
			return nil, fmt.Errorf("onebot: history of %s: a placeholder, not a group", peer)
		}
		action = "get_group_msg_history"
		params["group_id"] = id
	case msg.Direct:
		action = "get_friend_msg_history"
		params["user_id"] = id
	default:
		return nil, fmt.Errorf("onebot: history of %s: unknown peer kind", peer)
	}
	if q.Before != "" {
		anchor, err := strconv.ParseInt(string(q.Before), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("onebot: history anchor %q is not a message id", q.Before)
		}
		params["message_seq"] = anchor
		params["message_id"] = anchor
	}
	data, err := c.Call(ctx, action, params, 0)
	if err != nil {
		// NapCat reports an empty history as "消息X不存在".
		var ae *ActionError
		if errors.As(err, &ae) && strings.Contains(ae.Message, "不存在") {
			return nil, nil
		}
		return nil, err
	}
	return decodeHistory(data, account, peer, q.Before, count), nil
}

// decodeHistory reads {messages:[events]} (or a bare array), tolerating
// events without post_type or group_id, as SnowLuma sends them.
func decodeHistory(data json.RawMessage, account msg.AccountID, peer msg.Peer, anchor msg.MessageID, count int) []msg.Message {
	var wrapped struct {
		Messages []json.RawMessage `json:"messages"`
	}
	var raws []json.RawMessage
	if json.Unmarshal(data, &wrapped) == nil {
		raws = wrapped.Messages
	} else {
		_ = json.Unmarshal(data, &raws) // some answer a bare array
	}
	seen := map[msg.MessageID]bool{}
	out := make([]msg.Message, 0, len(raws))
	for _, raw := range raws {
		// The lenient reader of forward nodes and get_msg: SnowLuma's
		// entries lack post_type and self_id, and the bot's own messages
		// are kept, since a summary needs both sides.
		m, ok := forwardNode(raw, 0, 0)
		if !ok || m.ID == "" || m.ID == anchor || seen[m.ID] {
			continue
		}
		seen[m.ID] = true
		m.Account, m.Peer = account, peer
		out = append(out, m)
	}
	slices.SortStableFunc(out, func(a, b msg.Message) int { return cmp.Compare(a.Time.UnixNano(), b.Time.UnixNano()) })
	if len(out) > count {
		out = out[len(out)-count:]
	}
	return out
}
