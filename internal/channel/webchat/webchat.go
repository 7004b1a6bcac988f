// Package webchat is pincer's built-in web chat: a page served from embedded
// assets where a person talks to the agent and watches replies stream. Each
// browser gets its own session, identified by a cookie.
package webchat

import (
	"context"
	"crypto/rand"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"regexp"
	"sync"
	"time"

	"github.com/pincerbot/pincer/internal/channel"
	"github.com/pincerbot/pincer/internal/htmlpage"
	"github.com/pincerbot/pincer/internal/msg"
	"github.com/pincerbot/pincer/internal/store"
	"github.com/pincerbot/pincer/internal/texts"
)

// ID is the web chat's channel id.
const ID msg.ChannelID = "webchat"

// CookieName holds the browser id.
const CookieName = "pincer_browser"

// MaxMessageBytes bounds one posted message.
const MaxMessageBytes = 64 << 10

//go:embed assets
var assets embed.FS

// Backend is what the web chat needs from the rest of pincer.
type Backend interface {
	channel.Sink
	// History returns the peer's current transcript.
	History(ctx context.Context, ch msg.ChannelID, peer msg.Peer) ([]store.Turn, error)
}

// ModelNamer is a Backend that can name the model answering a peer; the
// page shows it in its header (SessionView.Model).
type ModelNamer interface {
	// Model returns the model ref answering peer, e.g. "openai/gpt-4o",
	// or "" when it is not known.
	Model(peer msg.Peer) string
}

// Previewer is a ModelNamer that can tell the preview agent, which
// answers when no model is configured, by the model it names: the page
// then says so before the first message (SessionView.NoModel).
type Previewer interface {
	IsPreview(model string) bool
}

// Options configure the web chat.
type Options struct {
	// Title is shown in the page header.
	Title string
	// Locale is the language of the page and of the API's refusals; the
	// zero Locale is texts.Default.
	Locale texts.Locale
	// Secure marks the browser cookie Secure (set when served over TLS).
	Secure bool
	Logger *slog.Logger
}

// Channel is the web chat adapter and its HTTP handler.
type Channel struct {
	opts    Options
	log     *slog.Logger
	page    string // rendered once: its title and locale are fixed
	static  http.Handler
	backend Backend

	// stopped is closed when Run returns, ending open event streams so a
	// server shutdown does not wait for them.
	stopped chan struct{}
	ready   chan struct{}

	mu   sync.Mutex
	subs map[string]map[chan msg.Outbound]struct{}
}

var _ channel.Adapter = (*Channel)(nil)

// New returns the web chat. It serves requests once Run has been given a
// backend; until then /api answers 503.
func New(o Options) (*Channel, error) {
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	page, err := htmlpage.ParseFS(assets, "assets/index.html")
	if err != nil {
		return nil, fmt.Errorf("webchat: %w", err)
	}
	loc := o.Locale
	html, err := page.Render(loc.PageFields(map[string]string{
		"Title": o.Title,
		"Hello": loc.Format(texts.WebchatHello, o.Title),
	}, scriptTexts...))
	if err != nil {
		return nil, fmt.Errorf("webchat: %w", err)
	}
	static, err := fs.Sub(assets, "assets")
	if err != nil {
		return nil, fmt.Errorf("webchat: %w", err)
	}
	return &Channel{
		opts:    o,
		log:     log.With("component", "channel", "channel", string(ID)),
		page:    html,
		static:  http.StripPrefix("/static/", http.FileServerFS(static)),
		subs:    map[string]map[chan msg.Outbound]struct{}{},
		stopped: make(chan struct{}),
		ready:   make(chan struct{}),
	}, nil
}

// Name implements channel.Adapter.
func (c *Channel) Name() msg.ChannelID { return ID }

// Run implements channel.Adapter: the web chat has no connection of its own;
// it serves through Handler until ctx ends. Run must be called once.
func (c *Channel) Run(ctx context.Context, sink channel.Sink) error {
	b, ok := sink.(Backend)
	if !ok {
		return errors.New("webchat: the sink cannot serve history")
	}
	c.mu.Lock()
	c.backend = b
	c.mu.Unlock()
	close(c.ready)
	<-ctx.Done()
	close(c.stopped)
	return nil
}

// Ready is closed once Run serves messages; before that, posts are
// answered "starting up".
func (c *Channel) Ready() <-chan struct{} { return c.ready }

// Send implements channel.Adapter: it pushes out to the browser's open
// event streams. The reply is also in the session transcript, so a browser
// that is not connected sees it on its next visit.
func (c *Channel) Send(_ context.Context, out msg.Outbound) (msg.MessageID, error) {
	if out.Peer.Kind != msg.Direct {
		return "", fmt.Errorf("webchat: send to %s: only direct peers exist", out.Peer)
	}
	if !browserIDPattern.MatchString(out.Peer.ID) {
		return "", fmt.Errorf("webchat: send to %s: not a browser id (32 hex digits)", out.Peer)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for ch := range c.subs[out.Peer.ID] {
		select {
		case ch <- out:
		default:
			c.log.Warn("event stream is full; message dropped from the live view", "peer", out.Peer.String())
		}
	}
	return msg.MessageID(newID()), nil
}

func (c *Channel) subscribe(browser string) (chan msg.Outbound, func()) {
	ch := make(chan msg.Outbound, 16)
	c.mu.Lock()
	if c.subs[browser] == nil {
		c.subs[browser] = map[chan msg.Outbound]struct{}{}
	}
	c.subs[browser][ch] = struct{}{}
	c.mu.Unlock()
	return ch, func() {
		c.mu.Lock()
		delete(c.subs[browser], ch)
		if len(c.subs[browser]) == 0 {
			delete(c.subs, browser)
		}
		c.mu.Unlock()
	}
}

func (c *Channel) getBackend() Backend {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.backend
}

// scriptTexts are the texts the page's script shows, handed to it in the
// page (its body's data-texts).
var scriptTexts = []texts.Key{
	texts.WebchatCopy, texts.WebchatCopyCode, texts.WebchatCopied, texts.WebchatCopyFailed,
	texts.WebchatLoadFailed, texts.WebchatNewFailed, texts.WebchatWriting,
	texts.WebchatConnectionLost, texts.WebchatOffline, texts.WebchatStoppedMark,
}

// Handler serves the page, its assets and the chat API.
func (c *Channel) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", c.servePage)
	mux.Handle("GET /static/", c.static)
	mux.HandleFunc("GET /api/session", c.serveSession)
	mux.HandleFunc("POST /api/messages", c.servePost)
	mux.HandleFunc("GET /api/events", c.serveEvents)
	return http.NewCrossOriginProtection().Handler(mux)
}

func (c *Channel) servePage(w http.ResponseWriter, r *http.Request) {
	c.browser(w, r)
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Content-Security-Policy", "default-src 'self'; style-src 'self'; script-src 'self'; connect-src 'self'")
	if _, err := io.WriteString(w, c.page); err != nil {
		c.log.Error("render page", "err", err)
	}
}

var browserIDPattern = regexp.MustCompile(`^[0-9a-f]{32}$`)

// browser returns the browser id from the cookie, issuing one when absent
// or malformed.
func (c *Channel) browser(w http.ResponseWriter, r *http.Request) string {
	if ck, err := r.Cookie(CookieName); err == nil && browserIDPattern.MatchString(ck.Value) {
		return ck.Value
	}
	id := newID()
	http.SetCookie(w, &http.Cookie{
		Name: CookieName, Value: id, Path: "/", HttpOnly: true, Secure: c.opts.Secure,
		SameSite: http.SameSiteStrictMode, MaxAge: int((365 * 24 * time.Hour).Seconds()),
	})
	return id
}

// newID returns 128 random bits in hex.
func newID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b) // crypto/rand.Read never returns an error
	return hex.EncodeToString(b)
}
