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
	"github.com/pincerbot/pincer/internal/outbox"
)

// chunkSender delivers outbound payloads over a OneBot connection, part
// by part: the chunks of the text, then each media item.
type chunkSender struct {
	Caller     caller
	ChunkLimit int
	// OnSent, when set, is told the id of every message sent (each
	// chunk's and each media message's), after its part was confirmed.
	OnSent func(ctx context.Context, id msg.MessageID)
	// ChunkGap waits between the parts of one payload: QQ treats a rapid
	// run of long messages as risky.
	ChunkGap time.Duration
	// Media says how local media files reach the implementation.
	Media mediaOptions
}

// Send delivers out: its text split into chunks that never break a CQ code,
// mentions rewritten per opts, then its media, one message (or upload)
// each. The reply segment goes on the first message only. It returns the
// id of the first message sent; whitespace-only text without media sends
// nothing.
func (s *chunkSender) Send(ctx context.Context, out msg.Outbound, opts outboundOptions) (msg.MessageID, error) {
	var first msg.MessageID
	err := s.SendFrom(ctx, out, opts, 0, func(part int, id msg.MessageID, _ bool) {
		if part == 0 {
			first = id
		}
	})
	return first, err
}

// SendFrom is Send from part from on (the parts before it were sent
// already), telling confirmed of each part the implementation accepted,
// with the message id it gave (empty when it gave none, as for uploads).
// The parts are numbered in a fixed order: the text's chunks first, then
// the media in order, so a resumed payload never sends a part twice.
//
// Media go as an image, record or video segment, each in a message of its
// own, or as an upload (upload_group_file, upload_private_file) for other
// files; see mediaSegmentType. A caption is the text, sent before them.
// The reply segment goes on the first text chunk, or, for a payload with
// no text, on its first image: QQ's voice, video and file messages cannot
// quote.
func (s *chunkSender) SendFrom(ctx context.Context, out msg.Outbound, opts outboundOptions, from int, confirmed outbox.Confirmed) error {
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
	chunks := chunkText(out.Text, s.ChunkLimit)
	replyAt := replyPart(out, len(chunks))
	from = max(from, 0)
	// A medium the implementation refuses, or a file that cannot be sent,
	// is logged and passed over: the parts after it still go out, and the
	// payload then fails for good, naming what was not sent.
	var refused []error
	parts := len(chunks) + len(out.Media)
	for i := from; i < parts; i++ {
		if i > from && s.ChunkGap > 0 {
			t := time.NewTimer(s.ChunkGap)
			select {
			case <-ctx.Done():
				t.Stop()
				return ctx.Err()
			case <-t.C:
			}
		}
		var id msg.MessageID
		if i < len(chunks) {
			id, err = s.sendMessage(ctx, action, target, out.ReplyTo, i == replyAt, outboundSegments(chunks[i], opts), 0)
			if err != nil {
				return fmt.Errorf("onebot: send to %s (chunk %d): %w", out.Peer, i+1, err)
			}
		} else {
			m := out.Media[i-len(chunks)]
			id, err = s.sendMedia(ctx, out, m, action, target, i == replyAt)
			if err != nil {
				err = fmt.Errorf("onebot: send to %s (media %d, %s): %w", out.Peer, i-len(chunks)+1, describeMedia(m), err)
				if !refusedForGood(err) {
					return err
				}
				if s.Media.Log != nil {
					s.Media.Log.Warn("a medium of the reply was not sent; the rest goes on", "peer", out.Peer.String(), "err", err)
				}
				refused = append(refused, err)
			}
		}
		if confirmed != nil {
			confirmed(i, id, i+1 < parts)
		}
		// After the confirmation: the outbox stores that the part went
		// before the id is recorded as the bot's (see outbox.Confirmed).
		if id != "" && s.OnSent != nil {
			s.OnSent(ctx, id)
		}
	}
	return errors.Join(refused...)
}

// refusedForGood reports a failure no retry mends: the implementation
// refused the action (risk control aside, which passes), or the medium
// cannot be sent at all.
func refusedForGood(err error) bool {
	var ae *wire.ActionError
	return errors.Is(err, errBadMedia) || errors.As(err, &ae) && !errors.Is(err, wire.ErrRiskControl)
}

// replyPart is the part of out that carries its reply segment: the first
// text chunk, else the first image; -1 for none.
func replyPart(out msg.Outbound, chunks int) int {
	switch {
	case out.ReplyTo == "":
		return -1
	case chunks > 0:
		return 0
	}
	for j, m := range out.Media {
		if carriesReply(mediaSegmentType(m)) {
			return chunks + j
		}
	}
	return -1
}

// sendMessage sends one message of segs, after a reply segment quoting
// replyTo when reply is set, and returns the id the implementation gave.
// timeout 0 is the connection's own.
func (s *chunkSender) sendMessage(ctx context.Context, action string, target chatTarget, replyTo msg.MessageID, reply bool, segs []wire.Segment, timeout time.Duration) (msg.MessageID, error) {
	if reply && replyTo != "" {
		segs = append([]wire.Segment{wire.NewSegment("reply", "id", string(replyTo))}, segs...)
	}
	data, err := s.Caller.Call(ctx, action, messageParams{target: target, message: segs}, timeout)
	if err != nil {
		return "", err
	}
	var res struct {
		MessageID wire.ID `json:"message_id"`
	}
	if err := json.Unmarshal(data, &res); err != nil || res.MessageID == 0 {
		return "", nil
	}
	return msg.MessageID(res.MessageID.String()), nil
}

// mediaSegment is the segment of one media item.
func mediaSegment(typ, file string) []wire.Segment {
	return []wire.Segment{wire.NewSegment(typ, "file", file)}
}

// errNoTarget: a payload's chat cannot be sent to at all.
var errNoTarget = errors.New("onebot: no such chat to send to")

// chatTarget is the param that names the chat of a send: group_id or
// user_id.
type chatTarget struct {
	key string
	id  int64
}

func sendAction(p msg.Peer) (string, chatTarget, error) {
	n, err := strconv.ParseInt(p.ID, 10, 64)
	if err != nil || n <= 0 {
		return "", chatTarget{}, fmt.Errorf("%w: peer %s has no QQ number", errNoTarget, p)
	}
	switch p.Kind {
	case msg.Group:
		if wire.ID(n) == wire.PlaceholderGroup {
			return "", chatTarget{}, fmt.Errorf("%w: %d is a placeholder, not a group", errNoTarget, n)
		}
		return "send_group_msg", chatTarget{"group_id", n}, nil
	case msg.Direct:
		return "send_private_msg", chatTarget{"user_id", n}, nil
	}
	return "", chatTarget{}, fmt.Errorf("%w: peer kind %q", errNoTarget, p.Kind)
}
