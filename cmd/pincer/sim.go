package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pincerbot/pincer/internal/channel/onebot/onebotsim"
)

// onebotSim runs a simulated OneBot v11 implementation: pincer connects to
// it as to NapCat, lines typed on in become QQ messages, and what the bot
// sends is printed to out.
func onebotSim(args []string, in io.Reader, out, stderr io.Writer) int {
	fs := newFlags("dev onebot-sim", "dev onebot-sim [flags]", `A simulated QQ (OneBot v11) implementation: point channels.onebot.wsUrl at
it, run pincer serve, and type lines to say them in a group (@… mentions the
bot, /dm … is private, /reply #<id> … quotes message <id>).
`, stderr)
	listen := fs.String("listen", "127.0.0.1:3001", "address of the simulated forward WebSocket and HTTP API")
	self := fs.Int64("self", 3300000001, "the bot's QQ number")
	group := fs.Int64("group", 700000001, "the group lines are sent to")
	user := fs.Int64("user", 10001, "the QQ number lines are sent as")
	name := fs.String("name", "测试用户", "the sender's nickname")
	if code, ok := parseFlags(fs, args, out); !ok {
		return code
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		fmt.Fprintf(stderr, "pincer dev onebot-sim: %v\n", err)
		return 1
	}
	s := &sim{out: out, self: *self, group: *group, user: *user, name: *name}
	peer := onebotsim.Serve(ln, s.answer)
	defer peer.Close()
	s.printf("OneBot v11 simulator: forward WebSocket %s, HTTP API %s\n", peer.URL, peer.HTTPURL)
	s.printf("Point pincer at it: channels: { onebot: { wsUrl: '%s' } }\n", peer.URL)
	s.printf("Type a line to say it in group %d as %s(%d); start it with @ to mention the bot,\n", *group, *name, *user)
	s.printf("with /reply <id> to quote message <id> (the bot's replies show theirs as #<id>),\n")
	s.printf("or with /dm to say it privately. Ctrl-D quits.\n")
	lines := bufio.NewScanner(in)
	for lines.Scan() {
		text := strings.TrimSpace(lines.Text())
		if text == "" {
			continue
		}
		if peer.Conns() == 0 {
			s.printf("(pincer is not connected yet)\n")
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		err := peer.Push(ctx, s.event(text))
		cancel()
		if err != nil {
			s.printf("(could not deliver: %v)\n", err)
		}
	}
	return 0
}

// sim is the simulator's state: who speaks where, every message said
// (for get_msg), and the output.
type sim struct {
	self, group, user int64
	name              string
	next              atomic.Int64

	mu   sync.Mutex
	out  io.Writer
	said map[int64]simMessage // by message id
}

// simMessage is a message as get_msg tells it.
type simMessage struct {
	by       int64
	nickname string
	private  bool
	at       int64 // unix seconds
	segments any   // as sent
}

// sent remembers message id.
func (s *sim) sent(id int64, m simMessage) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.said == nil {
		s.said = map[int64]simMessage{}
	}
	s.said[id] = m
}

// told is message id as get_msg and the history actions tell it, as
// NapCat does: its time, its sender with a nickname, and its segments.
func (s *sim) told(id int64, m simMessage) map[string]any {
	msg := map[string]any{
		"post_type": "message", "message_id": id, "real_id": id, "time": m.at, "message_type": "group", "group_id": s.group,
		"user_id": m.by, "sender": map[string]any{"user_id": m.by, "nickname": m.nickname}, "message": m.segments,
	}
	if m.private {
		msg["message_type"] = "private"
		delete(msg, "group_id")
	}
	return msg
}

// history is the newest count messages said in the group (private: to
// the user), older than message before when it is set, oldest first.
func (s *sim) history(private bool, count int, before int64) []map[string]any {
	if count <= 0 {
		count = 20
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var ids []int64
	for id, m := range s.said {
		if m.private == private && (before == 0 || id < before) {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	ids = ids[max(len(ids)-count, 0):]
	out := make([]map[string]any, 0, len(ids))
	for _, id := range ids {
		out = append(out, s.told(id, s.said[id]))
	}
	return out
}

func (s *sim) printf(format string, args ...any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	fmt.Fprintf(s.out, format, args...)
}

// event turns a typed line into a message event.
func (s *sim) event(text string) map[string]any {
	id, now := 100000+s.next.Add(1), time.Now().Unix()
	ev := map[string]any{
		"time": now, "self_id": s.self, "post_type": "message", "message_id": id,
		"user_id": s.user, "sender": map[string]any{"user_id": s.user, "nickname": s.name}, "font": 14,
	}
	var segs []any
	if rest, ok := strings.CutPrefix(text, "/reply "); ok {
		// A quote as the QQ client sends it when the @ of the quoted
		// message's author is removed: its author only get_msg tells.
		quoted, rest, _ := strings.Cut(strings.TrimSpace(rest), " ")
		segs = append(segs, simSeg("reply", "id", strings.TrimPrefix(quoted, "#")))
		text = rest
	}
	if rest, ok := strings.CutPrefix(text, "/dm "); ok {
		ev["message_type"], ev["sub_type"] = "private", "friend"
		segs = append(segs, simSeg("text", "text", rest))
	} else {
		ev["message_type"], ev["sub_type"], ev["group_id"] = "group", "normal", s.group
		if rest, ok := strings.CutPrefix(text, "@"); ok {
			segs = append(segs, simSeg("at", "qq", strconv.FormatInt(s.self, 10)))
			text = " " + strings.TrimSpace(rest)
		}
		segs = append(segs, simSeg("text", "text", text))
	}
	ev["message"] = segs
	s.sent(id, simMessage{by: s.user, nickname: s.name, private: ev["message_type"] == "private", at: now, segments: segs})
	return ev
}

func simSeg(kind, key, value string) map[string]any {
	return map[string]any{"type": kind, "data": map[string]any{key: value}}
}

// answer plays the implementation's side of each action.
func (s *sim) answer(action string, params json.RawMessage) (any, int, string) {
	switch action {
	case "get_login_info":
		return map[string]any{"user_id": s.self, "nickname": "pincer"}, 0, ""
	case "get_version_info":
		return map[string]any{"app_name": "pincer-onebot-sim", "protocol_version": "v11"}, 0, ""
	case "send_group_msg", "send_private_msg":
		var p struct {
			GroupID int64 `json:"group_id"`
			UserID  int64 `json:"user_id"`
			Message []struct {
				Type string         `json:"type"`
				Data map[string]any `json:"data"`
			} `json:"message"`
		}
		_ = json.Unmarshal(params, &p)
		var sent struct {
			Message json.RawMessage `json:"message"`
		}
		_ = json.Unmarshal(params, &sent)
		var b strings.Builder
		for _, m := range p.Message {
			switch m.Type {
			case "text":
				fmt.Fprint(&b, m.Data["text"])
			case "at":
				fmt.Fprintf(&b, "@%v", m.Data["qq"])
			case "reply":
				fmt.Fprintf(&b, "↪#%v ", m.Data["id"])
			default:
				b.WriteString("[" + m.Type + "]")
			}
		}
		where := fmt.Sprintf("group %d", p.GroupID)
		if action == "send_private_msg" {
			where = fmt.Sprintf("private %d", p.UserID)
		}
		id := 200000 + s.next.Add(1)
		s.sent(id, simMessage{by: s.self, nickname: "pincer", private: action == "send_private_msg", at: time.Now().Unix(), segments: sent.Message})
		s.printf("[%s] bot #%d: %s\n", where, id, b.String())
		return map[string]any{"message_id": id}, 0, ""
	case "get_msg":
		var p struct {
			MessageID int64 `json:"message_id"`
		}
		_ = json.Unmarshal(params, &p)
		s.mu.Lock()
		m, ok := s.said[p.MessageID]
		s.mu.Unlock()
		if !ok {
			return nil, 100, "message not found"
		}
		return s.told(p.MessageID, m), 0, ""
	case "set_msg_emoji_like":
		s.printf("(bot reacted: %s)\n", params)
		return nil, 0, ""
	case "get_group_member_list":
		return []any{map[string]any{"user_id": s.user, "nickname": s.name, "role": "member"}}, 0, ""
	case "get_group_msg_history", "get_friend_msg_history":
		var p struct {
			Count     int   `json:"count"`
			MessageID int64 `json:"message_id"`
		}
		_ = json.Unmarshal(params, &p)
		return map[string]any{"messages": s.history(action == "get_friend_msg_history", p.Count, p.MessageID)}, 0, ""
	}
	return nil, 1404, "the simulator does not implement " + action
}
