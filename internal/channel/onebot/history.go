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
	"time"

	"github.com/pincerbot/pincer/internal/channel"
	"github.com/pincerbot/pincer/internal/channel/onebot/wire"
	"github.com/pincerbot/pincer/internal/msg"
)

var _ channel.HistoryFetcher = (*Account)(nil)

// History paging. Implementations return a page of history per call:
// go-cqhttp always 20 whatever count says, SnowLuma at most 200, others
// count (default 20). A longer history is read page by page, back from the
// oldest message so far, with a pause between calls: SnowLuma serialises
// history fetches, and fast paging looks risky to QQ.
const (
	// defaultHistoryGap is the pause between two pages.
	defaultHistoryGap = 300 * time.Millisecond
	// historyPage is the page size every implementation manages.
	historyPage = 20
	// maxHistoryPage is the largest count any implementation takes.
	maxHistoryPage = 200
	// maxHistoryPages bounds the calls of one read.
	maxHistoryPages = 12
)

// History reads a chat's recent messages from the implementation, paging
// back as far as q.Count needs.
func (a *Account) History(ctx context.Context, peer msg.Peer, q channel.HistoryQuery) ([]msg.Message, error) {
	r := historyReader{Caller: a, Account: a.opts.ID, Self: a.Self(), Gap: a.opts.historyGap}
	return r.Read(ctx, peer, q)
}

// historyReader reads a chat's history with get_group_msg_history or
// get_friend_msg_history, page by page.
type historyReader struct {
	Caller  caller
	Account msg.AccountID
	// Self is the bot's QQ number, for reading mentions; 0 when unknown.
	Self wire.ID
	// Gap is the pause between pages; defaultHistoryGap when zero.
	Gap time.Duration
	// MaxPages bounds the calls; when zero, enough for q.Count in pages
	// of 20 and two more, at most 12.
	MaxPages int
	// Since, when set, ends the paging once a page reaches a message sent
	// at or before it: older messages are not wanted (a backfill).
	Since time.Time
}

// Read returns the newest q.Count messages (older than q.Before when it is
// set, the anchor itself left out), oldest first.
//
// Every call is the one form all implementations understand. The anchor
// goes out as message_seq and message_id: go-cqhttp and LLOneBot read
// message_seq as a real sequence number, NapCat reads it as a message id
// (its message_seq is the message id), SnowLuma and Lagrange read
// message_id. A page anchored on a message of an earlier page sends that
// message's message_seq (its id when it had none) and its id. An anchored
// page sets reverse_order and reverseOrder: NapCat then goes from the
// anchor to older messages (without, to newer), LLOneBot only reverses the
// array, the others ignore them. Pages are deduplicated by id and sorted
// by time here, since some come newest first and some repeat the anchor.
//
// Paging stops once q.Count messages are read, when a page brings nothing
// new or nothing older, or after MaxPages calls. A failing first call is
// an error (wrapping channel.ErrHistoryUnsupported when the implementation
// has no history action); a failing later page ends the paging with what
// was read.
func (h historyReader) Read(ctx context.Context, peer msg.Peer, q channel.HistoryQuery) ([]msg.Message, error) {
	count := max(q.Count, 1)
	action, target, err := historyAction(peer)
	if err != nil {
		return nil, err
	}
	var anchor *historyEntry
	seen := map[msg.MessageID]bool{}
	if q.Before != "" {
		n, err := strconv.ParseInt(string(q.Before), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("onebot: history anchor %q is not a message id", q.Before)
		}
		anchor = &historyEntry{id: wire.ID(n)}
		seen[q.Before] = true // some include the anchor; it is left out
	}
	pages := h.MaxPages
	if pages <= 0 {
		pages = min((count+historyPage-1)/historyPage+2, maxHistoryPages)
	}
	gap := h.Gap
	if gap <= 0 {
		gap = defaultHistoryGap
	}
	var got []historyEntry // oldest first
	for page := range pages {
		if page > 0 {
			if err := waitGap(ctx, gap); err != nil {
				return nil, fmt.Errorf("onebot: %s: %w", action, err)
			}
		}
		want := count - len(got)
		if page > 0 {
			want++ // the anchor usually comes back too
		}
		params := map[string]any{"count": min(want, maxHistoryPage)}
		for k, v := range target {
			params[k] = v
		}
		reverse := anchor != nil
		params["reverse_order"], params["reverseOrder"] = reverse, reverse
		if anchor != nil {
			params["message_seq"], params["message_id"] = int64(anchor.anchorSeq()), int64(anchor.id)
		}
		data, err := h.Caller.Call(ctx, action, params, 0)
		if err != nil {
			if page > 0 {
				if ctx.Err() != nil {
					return nil, fmt.Errorf("onebot: %s: %w", action, ctx.Err())
				}
				break // the end of the history, or a failure: keep what was read
			}
			return nil, historyError(action, err)
		}
		fresh := h.decode(data, peer, seen)
		if len(fresh) == 0 {
			break
		}
		older := len(got) == 0 || !fresh[0].m.Time.After(got[0].m.Time)
		got = append(fresh, got...)
		slices.SortStableFunc(got, func(a, b historyEntry) int { return cmp.Compare(a.m.Time.UnixNano(), b.m.Time.UnixNano()) })
		if len(got) >= count || !older {
			break // enough, or the page brought only newer messages
		}
		if !h.Since.IsZero() && !got[0].m.Time.After(h.Since) {
			break // back as far as wanted
		}
		next := got[0]
		anchor = &next
	}
	out := make([]msg.Message, 0, min(len(got), count))
	for _, e := range got[max(len(got)-count, 0):] {
		out = append(out, e.m)
	}
	return out, nil
}

// historyEntry is a history message with the sequence number it came
// with (0 when none).
type historyEntry struct {
	m   msg.Message
	id  wire.ID
	seq wire.ID
}

// anchorSeq is what goes out as message_seq for a page before e.
func (e historyEntry) anchorSeq() wire.ID {
	if e.seq != 0 {
		return e.seq
	}
	return e.id
}

func historyAction(peer msg.Peer) (string, map[string]any, error) {
	id, err := strconv.ParseInt(peer.ID, 10, 64)
	if err != nil || id <= 0 {
		return "", nil, fmt.Errorf("onebot: history of %s: not a QQ or group number", peer)
	}
	switch peer.Kind {
	case msg.Group:
		if wire.ID(id) == wire.PlaceholderGroup {
			return "", nil, fmt.Errorf("onebot: history of %s: a placeholder, not a group", peer)
		}
		return "get_group_msg_history", map[string]any{"group_id": id}, nil
	case msg.Direct:
		return "get_friend_msg_history", map[string]any{"user_id": id}, nil
	}
	return "", nil, fmt.Errorf("onebot: history of %s: unknown peer kind", peer)
}

// historyError reads a failed first call: NapCat reports an empty history
// as "消息X不存在" (nothing to read, not an error), and an implementation
// without the action answers retcode 1404 (or HTTP 404).
func historyError(action string, err error) error {
	var ae *wire.ActionError
	if !errors.As(err, &ae) {
		return err
	}
	switch {
	case napcatEmpty(ae.Message):
		return nil
	case ae.Retcode == wire.RetcodeUnsupported:
		return fmt.Errorf("onebot: %s: %w: %w", action, channel.ErrHistoryUnsupported, err)
	}
	return err
}

// napcatEmpty reports NapCat's answer for a history with nothing to read:
// "消息X不存在" (X the anchor it did not find, or nothing). Another thing
// that does not exist ("群X不存在") is a failure.
func napcatEmpty(m string) bool {
	m = strings.TrimSpace(m)
	return strings.HasPrefix(m, "消息") && strings.HasSuffix(m, "不存在")
}

// waitGap waits d, or until ctx ends.
func waitGap(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// decode reads {messages:[events]} (or a bare array), tolerating events
// without post_type or group_id, as SnowLuma sends them, and returns the
// messages not in seen, adding them to it, oldest first.
func (h historyReader) decode(data json.RawMessage, peer msg.Peer, seen map[msg.MessageID]bool) []historyEntry {
	var wrapped struct {
		Messages []json.RawMessage `json:"messages"`
	}
	var raws []json.RawMessage
	if json.Unmarshal(data, &wrapped) == nil {
		raws = wrapped.Messages
	} else {
		_ = json.Unmarshal(data, &raws) // some answer a bare array
	}
	out := make([]historyEntry, 0, len(raws))
	for _, raw := range raws {
		// The lenient reader of forward nodes and get_msg: SnowLuma's
		// entries lack post_type and self_id, and the bot's own messages
		// are kept, since a summary needs both sides.
		m, ok := wire.ForwardNode(raw, h.Self)
		if !ok || m.ID == "" || seen[m.ID] {
			continue
		}
		seen[m.ID] = true
		m.Account, m.Peer = h.Account, peer
		e := historyEntry{m: m}
		var ids struct {
			MessageID  json.RawMessage `json:"message_id"`
			MessageSeq json.RawMessage `json:"message_seq"`
		}
		if json.Unmarshal(raw, &ids) == nil {
			e.id, e.seq = wire.LenientID(ids.MessageID), wire.LenientID(ids.MessageSeq)
		}
		out = append(out, e)
	}
	// Some send newest first (LLOneBot with reverseOrder).
	if n := len(out); n > 1 && out[0].m.Time.After(out[n-1].m.Time) {
		slices.Reverse(out)
	}
	slices.SortStableFunc(out, func(a, b historyEntry) int { return cmp.Compare(a.m.Time.UnixNano(), b.m.Time.UnixNano()) })
	return out
}
