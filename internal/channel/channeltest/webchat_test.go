package channeltest_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/pincerbot/pincer/internal/channel"
	"github.com/pincerbot/pincer/internal/channel/channeltest"
	"github.com/pincerbot/pincer/internal/channel/webchat"
	"github.com/pincerbot/pincer/internal/channel/webchat/webchattest"
	"github.com/pincerbot/pincer/internal/msg"
	"github.com/pincerbot/pincer/internal/store"
)

// TestWebchat runs the suite against the web chat over its HTTP API:
// each chat is a browser with its own cookie, posting messages and
// reading replies from the post's event stream and from /api/events.
func TestWebchat(t *testing.T) { channeltest.Run(t, webchatHarness{}) }

type webchatHarness struct{}

// webPlatform is the web chat's server with browsers talking to it.
type webPlatform struct {
	ch   *webchat.Channel
	srv  *httptest.Server
	sent *board
	// readers are the goroutines reading event streams.
	readers sync.WaitGroup

	mu       sync.Mutex
	browsers map[string]*webchattest.Client
	taken    map[msg.MessageID]chan struct{}
	posts    int
}

// webBackend is the sink as the gateway hands it to the web chat: a
// Dispatch that takes the message in and waits for its outcome. It tells
// the platform when a post has been taken in, which is when the web chat
// has handed it over.
type webBackend struct {
	next channel.Taker
	took func(msg.MessageID)
}

func (b webBackend) Dispatch(ctx context.Context, m msg.Message, r channel.Replier) error {
	outcome := make(chan error, 1)
	b.next.Take(ctx, m, r, func(err error) {
		select {
		case outcome <- err:
		default:
		}
	})
	b.took(m.ID)
	select {
	case err := <-outcome:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// History implements webchat.Backend: the suite keeps no transcripts.
func (webBackend) History(context.Context, msg.ChannelID, msg.Peer) ([]store.Turn, error) {
	return nil, nil
}

func (webchatHarness) Start(t *testing.T, sink channel.Taker) channeltest.Platform {
	ch, err := webchat.New(webchat.Options{Title: "conformance"})
	if err != nil {
		t.Fatal(err)
	}
	w := &webPlatform{ch: ch, sent: newBoard(), browsers: map[string]*webchattest.Client{}, taken: map[msg.MessageID]chan struct{}{}}
	w.srv = httptest.NewServer(ch.Handler())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- ch.Run(ctx, webBackend{next: sink, took: w.took}) }()
	t.Cleanup(func() {
		cancel() // ends the /api/events streams
		if err := <-done; err != nil {
			t.Errorf("webchat Run: %v", err)
		}
		w.srv.Close()
		w.readers.Wait()
	})
	<-ch.Ready()
	return w
}

func (w *webPlatform) took(id msg.MessageID) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if c, ok := w.taken[id]; ok {
		close(c)
		delete(w.taken, id)
	}
}

func (w *webPlatform) Adapter() channel.Adapter { return w.ch }
func (w *webPlatform) Account() msg.AccountID   { return msg.DefaultAccount }

// Bot is empty: in the web chat every message speaks to the bot.
func (w *webPlatform) Bot() msg.UserID { return "" }

// ChunkLimit is 0: the page shows a reply of any length.
func (w *webPlatform) ChunkLimit() int { return 0 }

// Chats opens browsers: each gets its cookie from /api/session and keeps
// /api/events open, where the adapter's Send reaches it.
func (w *webPlatform) Chats(ctx context.Context, kind msg.PeerKind, n int) ([]channeltest.Chat, error) {
	if kind != msg.Direct {
		return nil, fmt.Errorf("%w: the web chat has only direct chats, one per browser", channeltest.ErrUnsupported)
	}
	var out []channeltest.Chat
	for range n {
		c := webchattest.New(w.srv.URL)
		if _, err := c.Session(); err != nil {
			return nil, err
		}
		id, err := browserID(c)
		if err != nil {
			return nil, err
		}
		peer := msg.Peer{Kind: msg.Direct, ID: id}
		if err := w.listen(ctx, c, peer); err != nil {
			return nil, err
		}
		w.mu.Lock()
		w.browsers[id] = c
		w.mu.Unlock()
		out = append(out, channeltest.Chat{Peer: peer, User: msg.UserID(id)})
	}
	return out, nil
}

// browserID is the id the server put in the browser's cookie.
func browserID(c *webchattest.Client) (string, error) {
	u, err := url.Parse(c.Base)
	if err != nil {
		return "", err
	}
	for _, ck := range c.HTTP.Jar.Cookies(u) {
		if ck.Name == webchat.CookieName {
			return ck.Value, nil
		}
	}
	return "", errors.New("the web chat set no browser cookie")
}

// listen opens the browser's /api/events stream and returns once the
// server has subscribed it; the stream's replies go on the board.
func (w *webPlatform) listen(ctx context.Context, c *webchattest.Client, peer msg.Peer) error {
	req, err := http.NewRequestWithContext(context.WithoutCancel(ctx), http.MethodGet, c.Base+"/api/events", nil)
	if err != nil {
		return err
	}
	res, err := c.HTTP.Do(req)
	if err != nil {
		return fmt.Errorf("open /api/events: %w", err)
	}
	if res.StatusCode != http.StatusOK {
		res.Body.Close()
		return fmt.Errorf("open /api/events: %s", res.Status)
	}
	br := bufio.NewReader(res.Body)
	// The server writes ": connected" once it has subscribed the stream.
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			res.Body.Close()
			return fmt.Errorf("read /api/events: %w", err)
		}
		if strings.HasPrefix(line, ": connected") {
			break
		}
	}
	w.readers.Go(func() { w.read(res.Body, br, peer) })
	return nil
}

// read puts the replies of an event stream on the board until it ends.
func (w *webPlatform) read(body io.ReadCloser, r io.Reader, peer msg.Peer) {
	defer body.Close()
	_ = webchattest.Read(r, func(e webchattest.Event) bool {
		if e.Name == webchat.EventReply {
			text, _ := e.Data["text"].(string)
			w.sent.add(peer, text)
		}
		return true
	})
}

// Inject posts the message as the page does, with an id of its own, and
// returns once the web chat has handed it to the sink: a browser's posts
// have no order of their own until then (the page sends the next one only
// after the reply).
func (w *webPlatform) Inject(ctx context.Context, in channeltest.Inbound) (channeltest.Posted, error) {
	if in.MentionBot {
		return channeltest.Posted{}, fmt.Errorf("%w: the web chat has no mentions; every message speaks to the bot", channeltest.ErrUnsupported)
	}
	w.mu.Lock()
	c := w.browsers[in.Chat.Peer.ID]
	if c == nil {
		w.mu.Unlock()
		return channeltest.Posted{}, fmt.Errorf("no browser %q", in.Chat.Peer.ID)
	}
	w.posts++
	id := msg.MessageID(fmt.Sprintf("post-%d", w.posts))
	taken := make(chan struct{})
	w.taken[id] = taken
	w.mu.Unlock()
	res, _, err := c.Post(in.Text, string(id))
	if err != nil {
		return channeltest.Posted{}, fmt.Errorf("post: %w", err)
	}
	if res.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		return channeltest.Posted{}, fmt.Errorf("post: %s: %s", res.Status, b)
	}
	w.readers.Go(func() { w.read(res.Body, res.Body, in.Chat.Peer) })
	select {
	case <-taken:
		return channeltest.Posted{Inbound: in, ID: id}, nil
	case <-ctx.Done():
		return channeltest.Posted{}, fmt.Errorf("post %s was never handed to the sink: %w", id, ctx.Err())
	}
}

// Redeliver: nothing delivers a web chat message twice. A browser that
// retries a post sends its id again, and the engine's dedup refuses it.
func (w *webPlatform) Redeliver(context.Context, channeltest.Posted) error {
	return fmt.Errorf("%w: the web chat never redelivers a message (a retried post keeps its id, which the engine deduplicates)", channeltest.ErrUnsupported)
}

func (w *webPlatform) Sent(chat channeltest.Chat) ([]string, <-chan struct{}) {
	return w.sent.get(chat.Peer)
}

// Unreachable: the web chat has no groups, and a browser id is 32
// lower-case hex digits; an id of that form may belong to a browser that
// is not connected, which the transcript then serves.
func (w *webPlatform) Unreachable() []msg.Peer {
	return []msg.Peer{
		{Kind: msg.Group, ID: "0123456789abcdef0123456789abcdef"},
		{Kind: msg.Direct, ID: ""},
		{Kind: msg.Direct, ID: "not-a-browser"},
	}
}
