package onebot

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/pincerbot/pincer/internal/channel"
	"github.com/pincerbot/pincer/internal/channel/onebot/wire"
	"github.com/pincerbot/pincer/internal/msg"
)

var _ channel.Fetcher = (*Account)(nil)

// errUnreadable: an answer had nothing that could be read as a message.
var errUnreadable = errors.New("onebot: unreadable answer")

// errCallLimit: the caller's budget of calls ran out before the call.
var errCallLimit = errors.New("onebot: no calls left")

// errInlineForward: the forward id was made up for inline content (see
// wire.IsInlineForward); its messages came with the message that carried
// it and cannot be fetched.
var errInlineForward = errors.New("onebot: inline forward, nothing to fetch")

// FetchMessage gets a message with get_msg. The answer is read
// defensively: fields that are missing or mis-shaped stay unknown.
func (a *Account) FetchMessage(ctx context.Context, id msg.MessageID) (msg.Message, error) {
	n, err := strconv.ParseInt(string(id), 10, 64)
	if err != nil {
		return msg.Message{}, fmt.Errorf("onebot: get_msg: message id %q is not a number", id)
	}
	data, err := a.Call(ctx, "get_msg", map[string]any{"message_id": n}, 0)
	if err != nil {
		return msg.Message{}, err
	}
	m, ok := wire.ForwardNode(data, a.Self())
	if !ok || m.Sender.ID == "" && m.Text == "" && len(m.Segments) == 0 {
		// An answer of no message (data null or {}) is as unreadable as a
		// mis-shaped one: the quote shows the failure, not an empty text.
		return msg.Message{}, fmt.Errorf("get_msg %s: %w", id, errUnreadable)
	}
	if m.ID == "" {
		m.ID = id
	}
	m.Account = a.opts.ID
	return m, nil
}

// FetchForward gets a merged forward's messages with get_forward_msg. It
// asks with "id" (the spec, SnowLuma) and, when that fails, once more
// with "message_id" (go-cqhttp), and reads any of the three answer shapes.
// Ids made up for inline content are refused without a call.
func (a *Account) FetchForward(ctx context.Context, id msg.ForwardID) ([]msg.Message, error) {
	return a.FetchForwardLimited(ctx, id, nil)
}

// FetchForwardLimited is FetchForward asking take, when it is not nil,
// before each get_forward_msg: the retry with "message_id" counts, and
// once take says no, no more calls are made and the fetch fails with
// errCallLimit (or with the first call's error, if there was one).
func (a *Account) FetchForwardLimited(ctx context.Context, id msg.ForwardID, take func() bool) ([]msg.Message, error) {
	if wire.IsInlineForward(id) {
		// Made up for content that came inline; no implementation knows it.
		return nil, fmt.Errorf("onebot: get_forward_msg %s: %w", id, errInlineForward)
	}
	call := func(params map[string]any) (json.RawMessage, error) {
		if take != nil && !take() {
			return nil, fmt.Errorf("onebot: get_forward_msg %s: %w", id, errCallLimit)
		}
		return a.Call(ctx, "get_forward_msg", params, 0)
	}
	data, err := call(map[string]any{"id": string(id)})
	if err != nil {
		var ae *wire.ActionError
		if !errors.As(err, &ae) {
			return nil, err
		}
		var again error
		if data, again = call(map[string]any{"message_id": string(id)}); again != nil {
			return nil, err
		}
	}
	msgs := wire.ForwardMessages(data, a.Self())
	for i := range msgs {
		msgs[i].Account = a.opts.ID
	}
	return msgs, nil
}
