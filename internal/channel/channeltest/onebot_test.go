package channeltest_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pincerbot/pincer/internal/channel"
	"github.com/pincerbot/pincer/internal/channel/channeltest"
	"github.com/pincerbot/pincer/internal/channel/onebot"
	"github.com/pincerbot/pincer/internal/channel/onebot/onebottest"
	"github.com/pincerbot/pincer/internal/channel/onebot/wire"
	"github.com/pincerbot/pincer/internal/msg"
)

// TestOneBot runs the suite against a QQ account over OneBot v11: the
// account dials the simulated implementation's forward WebSocket, which
// pushes message events and answers the account's actions.
func TestOneBot(t *testing.T) { channeltest.Run(t, oneBotHarness{}) }

// The simulated QQ: the bot, and where groups, their members and friends
// are numbered from.
const (
	qqBot       = 3300000001
	qqFirstGrp  = 700000001
	qqFirstUser = 10001
	qqChunk     = 40
	qqAccount   = msg.AccountID("qq")
)

type oneBotHarness struct{}

// qqPlatform is a plain OneBot v11 implementation, as a QQ client would
// run it: it knows its groups and friends and sends only to them, and has
// none of the history extensions (get_group_msg_history and
// get_friend_msg_history answer 1404, the spec's unknown action).
type qqPlatform struct {
	acct *onebot.Account
	peer *onebottest.Peer
	sent *board

	mu      sync.Mutex
	groups  map[int64]bool
	friends map[int64]bool
	chats   int64
	msgID   int64
}

func (oneBotHarness) Start(t *testing.T, sink channel.Taker) channeltest.Platform {
	q := &qqPlatform{sent: newBoard(), groups: map[int64]bool{}, friends: map[int64]bool{}, msgID: 5000}
	q.peer = onebottest.New(t, q.answer)
	q.acct = onebot.NewAccount(onebot.AccountOptions{ID: qqAccount, WSURL: q.peer.URL, ChunkLimit: qqChunk})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- q.acct.Run(ctx, sink) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("onebot Run: %v", err)
		}
	})
	wctx, wcancel := context.WithTimeout(ctx, 30*time.Second)
	defer wcancel()
	if err := q.peer.Connected(wctx); err != nil {
		t.Fatalf("the account never connected: %v", err)
	}
	return q
}

func (q *qqPlatform) Adapter() channel.Adapter { return q.acct }
func (q *qqPlatform) Account() msg.AccountID   { return qqAccount }
func (q *qqPlatform) Bot() msg.UserID          { return msg.UserID(strconv.Itoa(qqBot)) }
func (q *qqPlatform) ChunkLimit() int          { return qqChunk }

// Chats makes groups with one member who speaks, or friends.
func (q *qqPlatform) Chats(_ context.Context, kind msg.PeerKind, n int) ([]channeltest.Chat, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	var out []channeltest.Chat
	for range n {
		q.chats++
		user := qqFirstUser + q.chats
		switch kind {
		case msg.Group:
			group := qqFirstGrp + q.chats
			q.groups[group] = true
			out = append(out, channeltest.Chat{Peer: msg.Peer{Kind: msg.Group, ID: strconv.FormatInt(group, 10)}, User: msg.UserID(strconv.FormatInt(user, 10))})
		case msg.Direct:
			q.friends[user] = true
			out = append(out, channeltest.Chat{Peer: msg.Peer{Kind: msg.Direct, ID: strconv.FormatInt(user, 10)}, User: msg.UserID(strconv.FormatInt(user, 10))})
		default:
			return nil, fmt.Errorf("%w: QQ has no %q chats", channeltest.ErrUnsupported, kind)
		}
	}
	return out, nil
}

// Inject pushes a message event over the WebSocket: one connection, read
// in order.
func (q *qqPlatform) Inject(ctx context.Context, in channeltest.Inbound) (channeltest.Posted, error) {
	user, err := strconv.ParseInt(string(in.Chat.User), 10, 64)
	if err != nil {
		return channeltest.Posted{}, fmt.Errorf("user %q: %w", in.Chat.User, err)
	}
	q.mu.Lock()
	q.msgID++
	id := q.msgID
	q.mu.Unlock()
	ev := map[string]any{
		"time": time.Now().Unix(), "self_id": qqBot, "post_type": "message", "message_id": id,
		"user_id": user, "sender": map[string]any{"user_id": user, "nickname": "user" + string(in.Chat.User)}, "font": 14,
	}
	switch in.Chat.Peer.Kind {
	case msg.Group:
		ev["message_type"], ev["sub_type"], ev["group_id"] = "group", "normal", json.Number(in.Chat.Peer.ID)
	default:
		ev["message_type"], ev["sub_type"] = "private", "friend"
	}
	segs := []any{segment("text", "text", in.Text)}
	raw := cqEscape(in.Text)
	if in.MentionBot {
		segs = []any{segment("at", "qq", strconv.Itoa(qqBot)), segment("text", "text", " "+in.Text)}
		raw = fmt.Sprintf("[CQ:at,qq=%d] %s", qqBot, raw)
	}
	ev["message"], ev["raw_message"] = segs, raw
	frame, err := json.Marshal(ev)
	if err != nil {
		return channeltest.Posted{}, fmt.Errorf("encode event: %w", err)
	}
	if err := q.peer.PushRaw(ctx, frame); err != nil {
		return channeltest.Posted{}, err
	}
	return channeltest.Posted{Inbound: in, ID: msg.MessageID(strconv.FormatInt(id, 10)), Ref: frame}, nil
}

// Redeliver pushes the same frame again, as a second transport or a
// reconnect's backfill would bring it.
func (q *qqPlatform) Redeliver(ctx context.Context, p channeltest.Posted) error {
	return q.peer.PushRaw(ctx, p.Ref.([]byte))
}

func (q *qqPlatform) Sent(chat channeltest.Chat) ([]string, <-chan struct{}) {
	return q.sent.get(chat.Peer)
}

func (q *qqPlatform) Unreachable() []msg.Peer {
	return []msg.Peer{
		{Kind: msg.Group, ID: "799999999"},                    // a group the bot is not in
		{Kind: msg.Direct, ID: "99999"},                       // nobody the bot knows
		{Kind: msg.Group, ID: "not-a-number"},                 // no QQ group id
		{Kind: msg.Direct, ID: "-5"},                          // no QQ number
		{Kind: msg.Group, ID: wire.PlaceholderGroup.String()}, // the placeholder of forwarded messages
		{Kind: msg.Group, ID: ""},                             // nothing at all
	}
}

// answer plays the implementation's side of each action. Sends are
// recorded before they are answered, so a send the account saw succeed
// is on the board.
func (q *qqPlatform) answer(action string, params json.RawMessage) (any, int, string) {
	switch action {
	case "get_login_info":
		return map[string]any{"user_id": qqBot, "nickname": "pincer"}, 0, ""
	case "send_group_msg", "send_private_msg":
		var p struct {
			GroupID int64 `json:"group_id"`
			UserID  int64 `json:"user_id"`
			Message []struct {
				Type string         `json:"type"`
				Data map[string]any `json:"data"`
			} `json:"message"`
		}
		if err := json.Unmarshal(params, &p); err != nil {
			return nil, 100, "bad params: " + err.Error()
		}
		var peer msg.Peer
		q.mu.Lock()
		if action == "send_group_msg" {
			if !q.groups[p.GroupID] {
				q.mu.Unlock()
				return nil, 100, fmt.Sprintf("群%d不存在", p.GroupID)
			}
			peer = msg.Peer{Kind: msg.Group, ID: strconv.FormatInt(p.GroupID, 10)}
		} else {
			if !q.friends[p.UserID] {
				q.mu.Unlock()
				return nil, 100, fmt.Sprintf("用户%d不存在", p.UserID)
			}
			peer = msg.Peer{Kind: msg.Direct, ID: strconv.FormatInt(p.UserID, 10)}
		}
		q.msgID++
		id := q.msgID
		q.mu.Unlock()
		var b strings.Builder
		for _, s := range p.Message {
			switch s.Type {
			case "text":
				fmt.Fprint(&b, s.Data["text"])
			case "at":
				fmt.Fprintf(&b, "@%v", s.Data["qq"])
			case "reply":
				// A quote shows above the message, not in its text.
			default:
				b.WriteString("[" + s.Type + "]")
			}
		}
		q.sent.add(peer, b.String())
		return map[string]any{"message_id": id}, 0, ""
	}
	return nil, wire.RetcodeUnsupported, "unsupported action " + action
}

func segment(typ, key, value string) map[string]any {
	return map[string]any{"type": typ, "data": map[string]any{key: value}}
}

// cqEscape escapes text outside CQ codes, as raw_message carries it.
func cqEscape(s string) string {
	return strings.NewReplacer("&", "&amp;", "[", "&#91;", "]", "&#93;").Replace(s)
}
