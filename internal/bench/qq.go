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
}

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
	q := &qq{self: self, replies: map[int64][]time.Time{}, actions: map[string]int{}, waiters: map[int64]chan time.Time{}}
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
		q.record(at, params)
		return map[string]any{"message_id": botIDs + q.nextID.Add(1)}, 0, ""
	case "set_msg_emoji_like":
		return nil, 0, ""
	case "get_group_member_list":
		return []any{}, 0, ""
	case "get_group_msg_history", "get_friend_msg_history":
		return map[string]any{"messages": []any{}}, 0, ""
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

// record notes a send by the message its reply segment quotes.
func (q *qq) record(at time.Time, params json.RawMessage) {
	var p struct {
		Message json.RawMessage `json:"message"`
	}
	_ = json.Unmarshal(params, &p)
	id, ok := quoted(p.Message)
	q.mu.Lock()
	defer q.mu.Unlock()
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
