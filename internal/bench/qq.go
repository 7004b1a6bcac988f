package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// qq is the simulated QQ side of a run: a OneBot v11 implementation on
// loopback that pushes the load's frames over its forward WebSocket and
// records the replies, by the message they quote.
type qq struct {
	ws   *wsServer
	url  string // the forward WebSocket
	self int64

	pushMu sync.Mutex
	framer framer // under pushMu
	// lossy (a cluster's runs) drops a connection a write fails on and
	// goes on, as an implementation does when its client dies, rather
	// than failing the push; the frames pushed while no connection is up
	// are not delivered, and counted in undelivered.
	lossy       bool
	undelivered int // under pushMu

	nextID atomic.Int64

	mu       sync.Mutex
	replies  map[int64][]time.Time // quoted message_id -> when each send arrived
	unquoted int                   // sends that quote nothing
	actions  map[string]int
	waiters  map[int64]chan time.Time
	// chats keeps each chat's newest sends of the bot, oldest first, for
	// its history actions: a pincer that does not know whether a send
	// went out (its connection's holder was killed) reads them.
	chats map[chatKey][]botSend
}

// chatKey is a chat the bot sent to: a group, or a person.
type chatKey struct {
	group bool
	id    int64
}

// botSend is one of the bot's sends as a history action tells it.
type botSend struct {
	id      int64
	at      time.Time
	message json.RawMessage // as the send gave it
}

// keptSends is how many of each chat's newest sends the simulator keeps.
const keptSends = 40

// botIDs are the bot's message ids, handed out from botIDs+1 on.
const botIDs = 900_000_000

// startQQ serves a simulated implementation on a loopback port. Its
// events go out whole frames at a time in writes of about batch bytes,
// each frame by itself when batch is 0 (see framer).
func startQQ(self int64, batch int) (*qq, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("bench: OneBot simulator: %w", err)
	}
	q := &qq{self: self, replies: map[int64][]time.Time{}, actions: map[string]int{}, waiters: map[int64]chan time.Time{}, chats: map[chatKey][]botSend{}}
	q.framer = framer{batch: batch, write: q.writeAll}
	q.ws = serveWS(ln, q.handle)
	q.url = q.ws.url
	return q, nil
}

func (q *qq) close() { q.ws.close() }

// connected waits for the next connection to the simulator.
func (q *qq) connected(ctx context.Context) error { return q.ws.connected(ctx) }

// expect returns a channel that receives the time the first reply quoting
// id arrives.
func (q *qq) expect(id int64) <-chan time.Time {
	q.mu.Lock()
	defer q.mu.Unlock()
	c := make(chan time.Time, 1)
	if at := q.replies[id]; len(at) > 0 {
		c <- at[0]
		return c
	}
	q.waiters[id] = c
	return c
}

// sent returns when each reply quoting id arrived.
func (q *qq) sent(id int64) []time.Time {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.replies[id]
}

// tally counts the replies to the given @s: how many were answered, how
// many answers came more than once, and sends to anything else.
func (q *qq) tally(mentions map[int64]bool) (delivered, duplicated, stray int) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for id, at := range q.replies {
		if !mentions[id] {
			stray += len(at)
			continue
		}
		delivered++
		duplicated += len(at) - 1
	}
	return delivered, duplicated, stray + q.unquoted
}

// calls counts the actions of that name the simulator answered.
func (q *qq) calls(action string) int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.actions[action]
}

// push writes frames to every connection, in writes as the batch size
// says; it returns when the last is written, or fails when ctx ends.
func (q *qq) push(ctx context.Context, frames []Frame) error {
	q.pushMu.Lock()
	defer q.pushMu.Unlock()
	conns := q.ws.open()
	if len(conns) == 0 {
		q.undelivered += len(frames)
		return nil
	}
	stop := context.AfterFunc(ctx, func() {
		for _, c := range conns {
			_ = c.nc.SetWriteDeadline(time.Unix(1, 0))
		}
	})
	defer stop()
	if err := q.framer.frames(frames); err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("bench: push: %w", ctx.Err())
		}
		return fmt.Errorf("bench: push: %w", err)
	}
	if ctx.Err() != nil {
		return fmt.Errorf("bench: push: %w", ctx.Err())
	}
	return nil
}

// pushRaw writes one frame to every connection.
func (q *qq) pushRaw(ctx context.Context, frame []byte) error {
	return q.push(ctx, []Frame{{Data: frame}})
}

// writeAll writes whole frames to every connection.
func (q *qq) writeAll(b []byte) error {
	for _, c := range q.ws.open() {
		if err := c.write(b); err != nil {
			if !q.lossy {
				return err
			}
			_ = c.nc.Close()
			q.ws.forget(c)
		}
	}
	return nil
}

// notDelivered counts the frames pushed while no connection was up.
func (q *qq) notDelivered() int {
	q.pushMu.Lock()
	defer q.pushMu.Unlock()
	return q.undelivered
}

// writes counts the writes the events went out in so far.
func (q *qq) writes() int {
	q.pushMu.Lock()
	defer q.pushMu.Unlock()
	return q.framer.writes
}

// handle answers one action a client sent, with its echo, as an
// implementation does over its forward WebSocket.
func (q *qq) handle(c *wsConn, data []byte) {
	var req struct {
		Action string          `json:"action"`
		Params json.RawMessage `json:"params"`
		Echo   json.RawMessage `json:"echo"`
	}
	if json.Unmarshal(data, &req) != nil || req.Action == "" {
		return
	}
	d, retcode, message := q.answer(req.Action, req.Params)
	resp := response{Status: "ok", Retcode: retcode, Data: d, Message: message, Echo: req.Echo}
	if retcode != 0 {
		resp.Status, resp.Data = "failed", nil
	}
	b, err := json.Marshal(resp)
	if err != nil {
		b, _ = json.Marshal(response{Status: "failed", Retcode: 100, Message: err.Error(), Echo: req.Echo})
	}
	_ = c.writeMessage(opText, b)
}

// response is an action's answer, its fields in the order NapCat writes
// them.
type response struct {
	Status  string          `json:"status"`
	Retcode int             `json:"retcode"`
	Data    any             `json:"data"`
	Message string          `json:"message"`
	Echo    json.RawMessage `json:"echo,omitempty"`
}

// lifecycle is the meta event an implementation sends first on a forward
// WebSocket.
func (q *qq) lifecycle() []byte {
	return fmt.Appendf(nil, `{"time":%d,"self_id":%d,"post_type":"meta_event","meta_event_type":"lifecycle","sub_type":"connect"}`, time.Now().Unix(), q.self)
}

// answer plays the implementation's side of each action; sends are
// recorded before they are answered.
func (q *qq) answer(action string, params json.RawMessage) (any, int, string) {
	at := time.Now()
	q.mu.Lock()
	q.actions[action]++
	q.mu.Unlock()
	switch action {
	case "get_login_info":
		return map[string]any{"user_id": q.self, "nickname": "pincer"}, 0, ""
	case "get_version_info":
		return map[string]any{"app_name": "NapCat.Onebot", "app_version": "4.8.0", "protocol_version": "v11"}, 0, ""
	case "send_group_msg", "send_private_msg", "send_msg":
		id := botIDs + q.nextID.Add(1)
		q.record(at, id, params)
		return map[string]any{"message_id": id}, 0, ""
	case "set_msg_emoji_like":
		return nil, 0, ""
	case "get_group_member_list":
		return []any{}, 0, ""
	case "get_group_msg_history", "get_friend_msg_history":
		return q.history(action == "get_group_msg_history", params)
	case "get_msg":
		return q.message(params)
	}
	return nil, 1404, "the bench simulator does not implement " + action
}

// message answers get_msg at once, as NapCat does for a message in its
// cache: the bot's own sends are the bot's, any other id (a frame of the
// run, a message from before pincer started) someone else's. The answer
// is encoded by hand: the simulator shares the machine with pincer, and
// its CPU is not pincer's.
func (q *qq) message(params json.RawMessage) (any, int, string) {
	var p struct {
		MessageID json.Number `json:"message_id"`
	}
	if json.Unmarshal(params, &p) != nil {
		return nil, 100, "message_id is required"
	}
	id, err := p.MessageID.Int64()
	if err != nil {
		return nil, 100, "message_id is not a number"
	}
	sender := int64(firstSender)
	if id > botIDs && id <= botIDs+q.nextID.Load() {
		sender = q.self
	}
	b := make([]byte, 0, 512)
	b = append(b, `{"time":`...)
	b = strconv.AppendInt(b, time.Now().Unix(), 10)
	b = append(b, `,"self_id":`...)
	b = strconv.AppendInt(b, q.self, 10)
	b = append(b, `,"post_type":"message","message_type":"group","sub_type":"normal","message_id":`...)
	b = strconv.AppendInt(b, id, 10)
	b = append(b, `,"message_seq":`...)
	b = strconv.AppendInt(b, id, 10)
	b = append(b, `,"real_id":`...)
	b = strconv.AppendInt(b, id, 10)
	b = append(b, `,"user_id":`...)
	b = strconv.AppendInt(b, sender, 10)
	b = append(b, `,"sender":{"user_id":`...)
	b = strconv.AppendInt(b, sender, 10)
	b = append(b, `,"nickname":"`...)
	b = append(b, nickname(0)...)
	b = append(b, `","card":"","role":"member"},"message":[{"type":"text","data":{"text":"之前的一条消息"}}],"raw_message":"之前的一条消息","message_format":"array","font":14}`...)
	return json.RawMessage(b), 0, ""
}

// record notes a send, sent as message sent, by the message its reply
// segment quotes, and keeps it in its chat's history.
func (q *qq) record(at time.Time, sent int64, params json.RawMessage) {
	var p struct {
		MessageType string          `json:"message_type"`
		GroupID     int64           `json:"group_id"`
		UserID      int64           `json:"user_id"`
		Message     json.RawMessage `json:"message"`
	}
	_ = json.Unmarshal(params, &p)
	id, ok := quoted(p.Message)
	q.mu.Lock()
	defer q.mu.Unlock()
	chat := chatKey{group: p.GroupID != 0 && p.MessageType != "private", id: p.GroupID}
	if !chat.group {
		chat.id = p.UserID
	}
	kept := append(q.chats[chat], botSend{id: sent, at: at, message: p.Message})
	if len(kept) > keptSends {
		kept = kept[len(kept)-keptSends:]
	}
	q.chats[chat] = kept
	if !ok {
		q.unquoted++
		return
	}
	q.replies[id] = append(q.replies[id], at)
	if c := q.waiters[id]; c != nil {
		c <- at
		delete(q.waiters, id)
	}
}

// history answers a history action with the bot's sends to the chat, as
// NapCat does: the newest count (older than the anchor message_id when
// one is given), oldest first. The chat's other messages are not kept:
// what reads history here looks for the bot's own.
func (q *qq) history(group bool, params json.RawMessage) (any, int, string) {
	var p struct {
		GroupID   int64 `json:"group_id"`
		UserID    int64 `json:"user_id"`
		Count     int   `json:"count"`
		MessageID int64 `json:"message_id"`
	}
	if json.Unmarshal(params, &p) != nil {
		return nil, 100, "bad params"
	}
	chat := chatKey{group: group, id: p.GroupID}
	if !group {
		chat.id = p.UserID
	}
	q.mu.Lock()
	sends := q.chats[chat]
	q.mu.Unlock()
	if p.MessageID != 0 {
		i := 0
		for i < len(sends) && sends[i].id < p.MessageID {
			i++
		}
		sends = sends[:i]
	}
	if p.Count <= 0 {
		p.Count = 20
	}
	sends = sends[max(len(sends)-p.Count, 0):]
	out := make([]json.RawMessage, 0, len(sends))
	for _, m := range sends {
		out = append(out, q.sendEvent(chat, m))
	}
	return map[string]any{"messages": out}, 0, ""
}

// sendEvent is a send of the bot as a message event of its chat.
func (q *qq) sendEvent(chat chatKey, m botSend) json.RawMessage {
	format := "array"
	if len(m.message) > 0 && m.message[0] == '"' {
		format = "string"
	}
	b := make([]byte, 0, 256+len(m.message))
	b = fmt.Appendf(b, `{"time":%d,"self_id":%d,"post_type":"message",`, m.at.Unix(), q.self)
	if chat.group {
		b = fmt.Appendf(b, `"message_type":"group","sub_type":"normal","group_id":%d,`, chat.id)
	} else {
		b = fmt.Appendf(b, `"message_type":"private","sub_type":"friend","target_id":%d,`, chat.id)
	}
	b = fmt.Appendf(b, `"message_id":%d,"message_seq":%d,"real_id":%d,"user_id":%d,"sender":{"user_id":%d,"nickname":"pincer","card":"","role":"member"},"message":`,
		m.id, m.id, m.id, q.self, q.self)
	if len(m.message) == 0 {
		b = append(b, `[]`...)
	} else {
		b = append(b, m.message...)
	}
	b = fmt.Appendf(b, `,"raw_message":"","message_format":%q,"font":14}`, format)
	return b
}

// quoted finds the id of a send's reply segment, in the array or the CQ
// string form.
func quoted(message json.RawMessage) (int64, bool) {
	var segs []struct {
		Type string `json:"type"`
		Data struct {
			ID json.RawMessage `json:"id"`
		} `json:"data"`
	}
	if json.Unmarshal(message, &segs) == nil {
		for _, s := range segs {
			if s.Type == "reply" {
				id, err := strconv.ParseInt(strings.Trim(string(s.Data.ID), `"`), 10, 64)
				return id, err == nil
			}
		}
		return 0, false
	}
	var cq string
	if json.Unmarshal(message, &cq) != nil {
		return 0, false
	}
	_, rest, found := strings.Cut(cq, "[CQ:reply,id=")
	if !found {
		return 0, false
	}
	end := strings.IndexAny(rest, ",]")
	if end < 0 {
		return 0, false
	}
	id, err := strconv.ParseInt(rest[:end], 10, 64)
	return id, err == nil
}
