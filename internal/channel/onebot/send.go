package onebot

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/pincerbot/pincer/internal/channel/onebot/wire"
	"github.com/pincerbot/pincer/internal/msg"
)

// chunkSender delivers outbound payloads over a OneBot connection, chunk by
// chunk.
type chunkSender struct {
	Caller     caller
	ChunkLimit int
	// OnSent, when set, is told the id of every message sent (each
	// chunk's).
	OnSent func(ctx context.Context, id msg.MessageID)
	// ChunkGap waits between the chunks of one payload: QQ treats a rapid
	// run of long messages as risky.
	ChunkGap time.Duration
}

// Send delivers out: its text split into chunks that never break a CQ code,
// the reply segment on the first chunk only, mentions rewritten per opts.
// It returns the id of the first message sent; whitespace-only text sends
// nothing.
func (s *chunkSender) Send(ctx context.Context, out msg.Outbound, opts outboundOptions) (msg.MessageID, error) {
	var first msg.MessageID
	err := s.SendFrom(ctx, out, opts, 0, func(part int, id msg.MessageID) {
		if part == 0 {
			first = id
		}
	})
	return first, err
}

// SendFrom is Send from chunk from on (the chunks before it were sent
// already), telling confirmed of each chunk the implementation accepted,
// with the message id it gave (empty when it gave none).
func (s *chunkSender) SendFrom(ctx context.Context, out msg.Outbound, opts outboundOptions, from int, confirmed func(part int, id msg.MessageID)) error {
	if out.Peer.Kind == msg.Direct {
		opts.Mentions = false // no rewriting in direct chats
	}
	if out.IsError || out.NoMentions {
		opts.Mentions = false // notices, digests and summaries never ping anyone
	}
	action, target, err := sendAction(out.Peer)
	if err != nil {
		return err
	}
	for i, chunk := range chunkText(out.Text, s.ChunkLimit) {
		if i < from {
			continue
		}
		if i > from && s.ChunkGap > 0 {
			t := time.NewTimer(s.ChunkGap)
			select {
			case <-ctx.Done():
				t.Stop()
				return ctx.Err()
			case <-t.C:
			}
		}
		segs := outboundSegments(chunk, opts)
		if i == 0 && out.ReplyTo != "" {
			segs = append([]wire.Segment{wire.NewSegment("reply", "id", string(out.ReplyTo))}, segs...)
		}
		params := map[string]any{"message": segs}
		for k, v := range target {
			params[k] = v
		}
		data, err := s.Caller.Call(ctx, action, params, 0)
		if err != nil {
			return fmt.Errorf("onebot: send to %s (chunk %d): %w", out.Peer, i+1, err)
		}
		var res struct {
			MessageID wire.ID `json:"message_id"`
		}
		var id msg.MessageID
		if err := json.Unmarshal(data, &res); err == nil && res.MessageID != 0 {
			id = msg.MessageID(res.MessageID.String())
			if s.OnSent != nil {
				s.OnSent(ctx, id)
			}
		}
		if confirmed != nil {
			confirmed(i, id)
		}
	}
	return nil
}

// errNoTarget: a payload's chat cannot be sent to at all.
var errNoTarget = errors.New("onebot: no such chat to send to")

func sendAction(p msg.Peer) (string, map[string]any, error) {
	n, err := strconv.ParseInt(p.ID, 10, 64)
	if err != nil || n <= 0 {
		return "", nil, fmt.Errorf("%w: peer %s has no QQ number", errNoTarget, p)
	}
	switch p.Kind {
	case msg.Group:
		if wire.ID(n) == wire.PlaceholderGroup {
			return "", nil, fmt.Errorf("%w: %d is a placeholder, not a group", errNoTarget, n)
		}
		return "send_group_msg", map[string]any{"group_id": n}, nil
	case msg.Direct:
		return "send_private_msg", map[string]any{"user_id": n}, nil
	}
	return "", nil, fmt.Errorf("%w: peer kind %q", errNoTarget, p.Kind)
}
