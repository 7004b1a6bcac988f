package channeltest_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pincerbot/pincer/internal/channel"
	"github.com/pincerbot/pincer/internal/channel/channeltest"
	"github.com/pincerbot/pincer/internal/channel/feishu"
	"github.com/pincerbot/pincer/internal/channel/feishu/feishusim"
	"github.com/pincerbot/pincer/internal/msg"
)

// TestFeishu runs the suite against a Feishu app in webhook mode: the
// simulated open platform posts encrypted, signed events to the app's
// handler over HTTP, and serves the API the app sends through.
func TestFeishu(t *testing.T) { channeltest.Run(t, feishuHarness{}) }

// TestFeishuLongConnection runs the suite against a Feishu app on the
// long connection: the official SDK's client connects to the simulated
// open platform, which pushes events in the SDK's frames and waits for
// its acknowledgements.
func TestFeishuLongConnection(t *testing.T) { channeltest.Run(t, feishuHarness{longConn: true}) }

const (
	larkAccount    = msg.AccountID("lark")
	larkEncryptKey = "conformance-encrypt-key"
	larkChunk      = 60
)

// feishuHarness runs the app in webhook mode, or on the long connection.
type feishuHarness struct{ longConn bool }

// larkAdapter is one app as a channel.Adapter; the account's other
// methods (History, FetchMessage…) show through.
type larkAdapter struct{ *feishu.Account }

func (larkAdapter) Name() msg.ChannelID { return feishu.ChannelID }

// larkPlatform is the simulated open platform with the app's webhook.
type larkPlatform struct {
	sim  *feishusim.Sim
	acct *feishu.Account
	hook string // the webhook; empty on the long connection

	mu sync.Mutex
	n  int
	// chatOf is the platform's chat_id of each chat, by peer.
	chatOf map[msg.Peer]string
	// more is closed when the platform has answered another request.
	more chan struct{}
}

// larkLongConn has the SDK reconnect at once and ping once, at connect;
// the configuration is handed out once (feishusim.LongConn.ConfigOnce).
var larkLongConn = feishusim.LongConn{
	Config:     &feishusim.ClientConfig{ReconnectCount: -1, ReconnectInterval: 1, PingInterval: 3600},
	ConfigOnce: true,
	AckTimeout: 10 * time.Second,
	Retry:      []time.Duration{50 * time.Millisecond, 100 * time.Millisecond, 200 * time.Millisecond},
}

func (h feishuHarness) Start(t *testing.T, sink channel.Taker) channeltest.Platform {
	l := &larkPlatform{
		sim:    feishusim.New(feishusim.Options{EncryptKey: larkEncryptKey, LongConn: larkLongConn}),
		chatOf: map[msg.Peer]string{},
		more:   make(chan struct{}),
	}
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		l.sim.Handler().ServeHTTP(w, r)
		// What the request changed is recorded before it is answered.
		l.mu.Lock()
		close(l.more)
		l.more = make(chan struct{})
		l.mu.Unlock()
	}))
	t.Cleanup(api.Close)
	mode := feishu.ModeWebhook
	if h.longConn {
		mode = feishu.ModeWebSocket
		// After the app stops and before the server closes, the app goes
		// off the long connection, which ends the SDK's reconnecting.
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := l.sim.CloseLongConn(ctx); err != nil {
				t.Errorf("CloseLongConn: %v", err)
			}
		})
	}
	l.acct = feishu.New(feishu.Options{
		ID: larkAccount, AppID: feishusim.DefaultAppID, AppSecret: feishusim.DefaultAppSecret,
		BaseURL: api.URL, Mode: mode,
		VerificationToken: feishusim.DefaultVerificationToken, EncryptKey: larkEncryptKey,
		ChunkLimit: larkChunk,
	})
	if !h.longConn {
		handler, err := l.acct.WebhookHandler()
		if err != nil {
			t.Fatal(err)
		}
		hook := httptest.NewServer(handler)
		t.Cleanup(hook.Close)
		l.hook = hook.URL
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- l.acct.Run(ctx, sink) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("feishu Run: %v", err)
		}
	})
	// The app refuses events (503, for the platform to push again) until
	// it has asked the platform who the bot is; wait for that answer.
	wctx, wcancel := context.WithTimeout(ctx, 30*time.Second)
	defer wcancel()
	for l.acct.Self() == "" {
		l.mu.Lock()
		more := l.more
		l.mu.Unlock()
		if wctx.Err() != nil {
			t.Fatal("the app never learnt the bot's identity")
		}
		if len(l.sim.Calls("/open-apis/bot/v3/info")) > 0 {
			runtime.Gosched() // answered: the app stores it as it reads the answer
			continue
		}
		select {
		case <-more:
		case <-wctx.Done():
		}
	}
	if h.longConn {
		// Connected, and its first ping answered: the client is serving,
		// and may be dropped (the v3.7.5 SDK reads its connection id for
		// its ping's log lines without synchronization, so a drop before
		// them is a data race).
		for l.acct.Health().LastPong.IsZero() {
			if wctx.Err() != nil {
				t.Fatalf("the app's long connection never completed a ping: %+v", l.acct.Health())
			}
			time.Sleep(10 * time.Millisecond)
		}
		return larkDropper{l}
	}
	return l
}

// Adapter is the app as the gateway runs it: feishu.Account has every
// method of a channel.Adapter but Name, which the gateway's wrapper adds.
func (l *larkPlatform) Adapter() channel.Adapter { return larkAdapter{l.acct} }
func (l *larkPlatform) Account() msg.AccountID   { return larkAccount }
func (l *larkPlatform) Bot() msg.UserID          { return feishusim.DefaultBotOpenID }
func (l *larkPlatform) ChunkLimit() int          { return larkChunk }

// Chats makes group chats with a member who speaks, or users with their
// private chat with the bot. The app reads the history of both (a direct
// chat's once a message from it told the app its chat_id).
func (l *larkPlatform) Chats(_ context.Context, kind msg.PeerKind, n int) ([]channeltest.Chat, error) {
	var out []channeltest.Chat
	for range n {
		l.mu.Lock()
		l.n++
		i := l.n
		l.mu.Unlock()
		user := fmt.Sprintf("ou_user%025d", i)
		if err := l.sim.AddUser(user, fmt.Sprintf("用户%d", i)); err != nil {
			return nil, err
		}
		var peer msg.Peer
		chatID := fmt.Sprintf("oc_chat%025d", i)
		switch kind {
		case msg.Group:
			if err := l.sim.AddChat(chatID, feishusim.ChatGroup); err != nil {
				return nil, err
			}
			peer = msg.Peer{Kind: msg.Group, ID: chatID}
		case msg.Direct:
			if err := l.sim.AddP2PChat(chatID, user); err != nil {
				return nil, err
			}
			peer = msg.Peer{Kind: msg.Direct, ID: user}
		default:
			return nil, fmt.Errorf("%w: Feishu has no %q chats", channeltest.ErrUnsupported, kind)
		}
		l.mu.Lock()
		l.chatOf[peer] = chatID
		l.mu.Unlock()
		out = append(out, channeltest.Chat{Peer: peer, User: msg.UserID(user), History: true})
	}
	return out, nil
}

// Inject has the platform store the message and post its receive event
// to the webhook, or push it over the long connection; the app takes it
// in before it answers (acknowledges).
func (l *larkPlatform) Inject(ctx context.Context, in channeltest.Inbound) (channeltest.Posted, error) {
	l.mu.Lock()
	l.n++
	id := fmt.Sprintf("om_msg%026d", l.n)
	chatID, ok := l.chatOf[in.Chat.Peer]
	l.mu.Unlock()
	if !ok {
		return channeltest.Posted{}, fmt.Errorf("no chat %s", in.Chat.Peer)
	}
	text, mentions := in.Text, []feishusim.Mention(nil)
	if in.MentionBot {
		text = "@_user_1 " + text
		mentions = []feishusim.Mention{{Key: "@_user_1", ID: feishusim.DefaultBotOpenID, Name: feishusim.DefaultBotName}}
	}
	content, err := json.Marshal(map[string]string{"text": text})
	if err != nil {
		return channeltest.Posted{}, err
	}
	m := feishusim.Message{ID: id, ChatID: chatID, MsgType: "text", SenderID: string(in.Chat.User), Content: string(content), Mentions: mentions}
	d, err := l.post(ctx, m, feishusim.EventOptions{})
	if err != nil {
		return channeltest.Posted{}, err
	}
	return channeltest.Posted{Inbound: in, ID: msg.MessageID(id), Ref: d.EventID}, nil
}

// Redeliver posts the event again, as the platform retries an event it
// thinks was not taken, and the message again under a fresh event id, as
// the platform sometimes pushes one message twice.
func (l *larkPlatform) Redeliver(ctx context.Context, p channeltest.Posted) error {
	if _, err := l.post(ctx, string(p.ID), feishusim.EventOptions{EventID: p.Ref.(string)}); err != nil {
		return err
	}
	_, err := l.post(ctx, string(p.ID), feishusim.EventOptions{})
	return err
}

// post delivers an event to the webhook, or pushes it over the long
// connection and waits for the app's acknowledgement.
func (l *larkPlatform) post(ctx context.Context, ev any, opts feishusim.EventOptions) (*feishusim.Delivery, error) {
	if l.hook == "" {
		d, err := l.sim.PushEvent(ctx, ev, opts)
		if err != nil {
			return nil, err
		}
		if d.Status != http.StatusOK {
			return nil, fmt.Errorf("the long connection acknowledged %d after %d deliveries: %s", d.Status, d.Attempts, d.Response)
		}
		return d, nil
	}
	d, err := l.sim.PostEvent(ctx, l.hook, ev, opts)
	if err != nil {
		return nil, err
	}
	if d.Status != http.StatusOK {
		return nil, fmt.Errorf("the webhook answered %d: %s", d.Status, d.Response)
	}
	return d, nil
}

// Sent reads the messages the bot created or replied in the chat.
func (l *larkPlatform) Sent(chat channeltest.Chat) ([]string, <-chan struct{}) {
	l.mu.Lock()
	chatID, more := l.chatOf[chat.Peer], l.more
	l.mu.Unlock()
	var texts []string
	for _, s := range l.sim.Sent() {
		if s.ChatID == chatID {
			texts = append(texts, larkText(s))
		}
	}
	return texts, more
}

// larkText is the text of a sent message: a text message's text, a post's
// paragraphs, else the content as sent.
func larkText(s feishusim.SentMessage) string {
	switch s.MsgType {
	case "text":
		var c struct {
			Text string `json:"text"`
		}
		if json.Unmarshal([]byte(s.Content), &c) == nil {
			return c.Text
		}
	case "post":
		var c map[string]struct {
			Content [][]struct {
				Text string `json:"text"`
			} `json:"content"`
		}
		if json.Unmarshal([]byte(s.Content), &c) == nil {
			for _, post := range c {
				var paras []string
				for _, row := range post.Content {
					var b strings.Builder
					for _, el := range row {
						b.WriteString(el.Text)
					}
					paras = append(paras, b.String())
				}
				return strings.Join(paras, "\n\n")
			}
		}
	}
	return s.Content
}

func (l *larkPlatform) Unreachable() []msg.Peer {
	return []msg.Peer{
		{Kind: msg.Group, ID: "oc_nosuchchat0000000000000000000"}, // a chat the bot is not in
		{Kind: msg.Direct, ID: "ou_nosuchuser000000000000000000"}, // nobody in the tenant
		{Kind: msg.Group, ID: ""},
		{Kind: msg.Direct, ID: ""},
	}
}

// larkDropper is the long connection's platform: it can drop the app's
// connection.
type larkDropper struct{ *larkPlatform }

// Drop closes the app's long connection and waits until the SDK's client
// has connected again.
func (l larkDropper) Drop(ctx context.Context) error {
	if n := l.sim.DropConnections(); n != 1 {
		return fmt.Errorf("dropped %d connections, want 1", n)
	}
	return l.sim.WaitLongConn(ctx, func(conns, _, _ int) bool { return conns == 1 })
}
