package webchat

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/pincerbot/pincer/internal/channel"
	"github.com/pincerbot/pincer/internal/msg"
	"github.com/pincerbot/pincer/internal/reply"
	"github.com/pincerbot/pincer/internal/store"
	"github.com/pincerbot/pincer/internal/texts"
)

// TurnView is one transcript entry as the page shows it.
type TurnView struct {
	Role string `json:"role"`
	Text string `json:"text"`
	// HTML is Text rendered from Markdown (RenderMarkdown), set for
	// complete assistant replies.
	HTML    string    `json:"html,omitempty"`
	At      time.Time `json:"at"`
	Partial bool      `json:"partial,omitempty"`
}

// SessionView is the answer of GET /api/session.
type SessionView struct {
	Title string `json:"title"`
	// Model is the model answering this browser, when the Backend is a
	// ModelNamer.
	Model string `json:"model,omitempty"`
	// NoModel says that no model is configured, so the preview agent
	// answers, when the Backend is a Previewer too.
	NoModel    bool       `json:"noModel,omitempty"`
	Transcript []TurnView `json:"transcript"`
}

// PostRequest is the body of POST /api/messages.
type PostRequest struct {
	Text string `json:"text"`
	// ID, when given, makes a retried post idempotent: a second post with
	// the same id is not answered again.
	ID string `json:"id,omitempty"`
}

// Server-sent event names of POST /api/messages and GET /api/events.
const (
	EventDelta = "delta" // {"text": "..."}: streamed reply text
	EventReply = "reply" // {"text": "...", "html": "...", "error": bool}: one whole reply, html rendered from Markdown
	EventDone  = "done"  // {}: the turn is over
	EventFail  = "fail"  // {"error": "..."}: the message was not handled
)

var clientIDPattern = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

func (c *Channel) peer(id string) msg.Peer { return msg.Peer{Kind: msg.Direct, ID: id} }

func (c *Channel) serveSession(w http.ResponseWriter, r *http.Request) {
	b := c.getBackend()
	if b == nil {
		httpError(w, http.StatusServiceUnavailable, c.opts.Locale.Text(texts.WebchatStartingUp))
		return
	}
	browser := c.browser(w, r)
	tr, err := b.History(r.Context(), ID, c.peer(browser))
	if err != nil {
		c.log.Error("load history", "err", err)
		httpError(w, http.StatusInternalServerError, c.opts.Locale.Text(texts.WebchatLoadFailed))
		return
	}
	view := SessionView{Title: c.opts.Title, Transcript: []TurnView{}}
	if n, ok := b.(ModelNamer); ok {
		view.Model = n.Model(c.peer(browser))
		if p, ok := b.(Previewer); ok {
			view.NoModel = p.IsPreview(view.Model)
		}
	}
	for _, t := range tr {
		text := t.Text
		if t.Role == store.RoleAssistant {
			rest, found := reply.StripTokens(text)
			if rest == "" && found != (reply.Found{}) {
				continue // the agent chose silence or acknowledged a heartbeat; nothing was said
			}
			text = rest
		}
		if t.Role == store.RoleUser || t.Role == store.RoleAssistant {
			v := TurnView{Role: string(t.Role), Text: text, At: t.At, Partial: t.Partial}
			if t.Role == store.RoleAssistant && !t.Partial {
				v.HTML = RenderMarkdown(text)
			}
			view.Transcript = append(view.Transcript, v)
		}
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(view)
}

func (c *Channel) servePost(w http.ResponseWriter, r *http.Request) {
	b := c.getBackend()
	if b == nil {
		httpError(w, http.StatusServiceUnavailable, c.opts.Locale.Text(texts.WebchatStartingUp))
		return
	}
	if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt != "application/json" {
		httpError(w, http.StatusUnsupportedMediaType, "want application/json")
		return
	}
	var req PostRequest
	if err := json.NewDecoder(io.LimitReader(r.Body, MaxMessageBytes)).Decode(&req); err != nil {
		httpError(w, http.StatusBadRequest, "malformed JSON body")
		return
	}
	if strings.TrimSpace(req.Text) == "" {
		httpError(w, http.StatusBadRequest, "text is empty")
		return
	}
	if req.ID == "" {
		req.ID = newID()
	} else if !clientIDPattern.MatchString(req.ID) {
		httpError(w, http.StatusBadRequest, "id must be 1-64 letters, digits, '-' or '_'")
		return
	}
	browser := c.browser(w, r)
	m := msg.Message{
		ID: msg.MessageID(req.ID), Channel: ID, Account: msg.DefaultAccount, Peer: c.peer(browser),
		Sender: msg.Sender{ID: msg.UserID(browser), Name: "user"}, Time: time.Now(),
		Segments: []msg.Segment{msg.Text(req.Text)}, Text: req.Text,
	}
	// The message is handed in before the reply stream opens, so a page
	// that posts its next message once the stream opened posts it after
	// this one is held.
	sse := preparedSSE(w)
	var err error
	if t, ok := b.(channel.Taker); ok {
		answered := make(chan error, 1)
		t.Take(r.Context(), m, sse, func(err error) {
			select {
			case answered <- err:
			default: // told once already
			}
		})
		sse.open()
		select {
		case err = <-answered:
		case <-r.Context().Done():
			err = r.Context().Err()
		}
	} else {
		sse.open()
		err = b.Dispatch(r.Context(), m, sse)
	}
	switch {
	case err == nil:
		sse.send(EventDone, struct{}{})
	default:
		c.log.Warn("dispatch", "err", err)
		sse.send(EventFail, map[string]string{"error": c.failText(err)})
	}
}

// failText says why a message got no answer.
func (c *Channel) failText(err error) string {
	t := c.opts.Locale
	switch {
	case errors.Is(err, channel.ErrDuplicate):
		return t.Text(texts.WebchatAlreadySent)
	case errors.Is(err, channel.ErrClosed):
		return t.Text(texts.WebchatShuttingDown)
	case errors.Is(err, channel.ErrMerged):
		return t.Text(texts.WebchatMerged)
	case errors.Is(err, channel.ErrStopped):
		return t.Text(texts.WebchatStoppedEarly)
	}
	return t.Text(texts.WebchatNotHandled)
}

func (c *Channel) serveEvents(w http.ResponseWriter, r *http.Request) {
	browser := c.browser(w, r)
	ch, unsubscribe := c.subscribe(browser)
	defer unsubscribe()
	sse := newSSE(w)
	sse.comment("connected")
	keepAlive := time.NewTicker(25 * time.Second)
	defer keepAlive.Stop()
	for {
		select {
		case <-r.Context().Done():
			return
		case <-c.stopped:
			return
		case out := <-ch:
			sse.send(EventReply, replyView(out))
		case <-keepAlive.C:
			sse.comment("keep-alive")
		}
	}
}

// replyView is the data of a reply event: the text, and unless it is an
// error notice, the text rendered from Markdown.
//
// The page cannot show the reply's media files (they are on the
// gateway's disk), so each is named on a line of its own after the text,
// a link for an http(s) URL, and listed under media.
func replyView(out msg.Outbound) map[string]any {
	text := out.Text
	var media []map[string]string
	for _, m := range out.Media {
		line := "[" + string(m.Kind) + ": " + m.Name + "]"
		if strings.HasPrefix(m.URL, "https://") || strings.HasPrefix(m.URL, "http://") {
			line = "[" + string(m.Kind) + ": " + m.Name + "](" + m.URL + ")"
		}
		text = strings.TrimSpace(text + "\n\n" + line)
		media = append(media, map[string]string{"kind": string(m.Kind), "name": m.Name})
	}
	v := map[string]any{"text": text, "error": out.IsError}
	if len(media) > 0 {
		v["media"] = media
	}
	if !out.IsError {
		v["html"] = RenderMarkdown(text)
	}
	return v
}

// sse writes server-sent events and is the channel.Replier of one post.
// Write errors (a browser that went away) are ignored: the turn goes on and
// its reply is kept in the transcript.
type sse struct {
	mu     sync.Mutex
	w      http.ResponseWriter
	rc     *http.ResponseController
	opened bool
}

// newSSE opens an event stream on w.
func newSSE(w http.ResponseWriter) *sse {
	s := preparedSSE(w)
	s.open()
	return s
}

// preparedSSE is an event stream on w that opens (sends its headers) on
// open or its first event, whichever comes first.
func preparedSSE(w http.ResponseWriter) *sse {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	return &sse{w: w, rc: http.NewResponseController(w)}
}

// open sends the stream's headers, once.
func (s *sse) open() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.openLocked()
}

func (s *sse) openLocked() {
	if s.opened {
		return
	}
	s.opened = true
	s.w.WriteHeader(http.StatusOK)
	_ = s.rc.Flush()
}

func (s *sse) send(event string, data any) {
	b, err := json.Marshal(data)
	if err != nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.openLocked()
	_, _ = io.WriteString(s.w, "event: "+event+"\ndata: ")
	_, _ = s.w.Write(b)
	_, _ = io.WriteString(s.w, "\n\n")
	_ = s.rc.Flush()
}

func (s *sse) comment(text string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.openLocked()
	_, _ = io.WriteString(s.w, ": "+text+"\n\n")
	_ = s.rc.Flush()
}

// ShowsPartial implements channel.PartialViewer: the page renders deltas.
func (s *sse) ShowsPartial() bool { return true }

// Partial implements channel.Replier.
func (s *sse) Partial(delta string) { s.send(EventDelta, map[string]string{"text": delta}) }

// Deliver implements channel.Replier.
func (s *sse) Deliver(_ context.Context, out msg.Outbound) (msg.MessageID, error) {
	s.send(EventReply, replyView(out))
	return msg.MessageID(newID()), nil
}

func httpError(w http.ResponseWriter, status int, text string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]string{"error": text})
}
