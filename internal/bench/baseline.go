package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/coder/websocket"
)

// baselineEvent is what the baseline decodes of each frame: what any bot
// needs to see who said what where.
type baselineEvent struct {
	PostType    string `json:"post_type"`
	MessageType string `json:"message_type"`
	MessageID   int64  `json:"message_id"`
	GroupID     int64  `json:"group_id"`
	UserID      int64  `json:"user_id"`
	Sender      struct {
		UserID   int64  `json:"user_id"`
		Nickname string `json:"nickname"`
		Card     string `json:"card"`
	} `json:"sender"`
	Message []struct {
		Type string                     `json:"type"`
		Data map[string]json.RawMessage `json:"data"`
	} `json:"message"`
}

// Read is the baseline: the least a bot can do with the frames. It dials
// the implementation's forward WebSocket at url, reads frames, decodes
// each as an event, and answers every group message that @s self with a
// send_group_msg quoting it. It returns the number of events read when
// ctx ends or the connection closes.
func Read(ctx context.Context, url string, self int64) (int, error) {
	c, _, err := websocket.Dial(ctx, url, nil)
	if err != nil {
		return 0, fmt.Errorf("bench: baseline: dial %s: %w", url, err)
	}
	defer c.CloseNow()
	c.SetReadLimit(32 << 20)
	me := strconv.FormatInt(self, 10)
	events := 0
	for {
		_, data, err := c.Read(ctx)
		if err != nil {
			if ctx.Err() != nil || websocket.CloseStatus(err) != -1 || errors.Is(err, context.Canceled) {
				return events, nil
			}
			return events, fmt.Errorf("bench: baseline: read: %w", err)
		}
		var ev baselineEvent
		if err := json.Unmarshal(data, &ev); err != nil || ev.PostType == "" {
			continue // an action's answer
		}
		events++
		if ev.PostType != "message" || ev.MessageType != "group" || !mentions(ev, me) {
			continue
		}
		reply := fmt.Appendf(nil, `{"action":"send_group_msg","params":{"group_id":%d,"message":[{"type":"reply","data":{"id":"%d"}},{"type":"text","data":{"text":"ok"}}]},"echo":"b%d"}`,
			ev.GroupID, ev.MessageID, ev.MessageID)
		if err := c.Write(ctx, websocket.MessageText, reply); err != nil {
			return events, fmt.Errorf("bench: baseline: reply: %w", err)
		}
	}
}

// mentions reports whether an event has an at segment of the bot.
func mentions(ev baselineEvent, self string) bool {
	for _, s := range ev.Message {
		if s.Type != "at" {
			continue
		}
		var qq string
		raw := s.Data["qq"]
		if json.Unmarshal(raw, &qq) != nil {
			qq = string(raw) // a number
		}
		if qq == self {
			return true
		}
	}
	return false
}
