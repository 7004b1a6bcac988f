package dashboard

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/pincerbot/pincer/internal/msg"
	"github.com/pincerbot/pincer/internal/texts"
	"github.com/pincerbot/pincer/internal/trace"
)

// StatusView is the answer of GET /api/dashboard/status.
type StatusView struct {
	Status
	Title string    `json:"title"`
	Now   time.Time `json:"now"`
	Rates Series    `json:"rates"`
}

// Records is the answer of GET /api/trace.
type Records struct {
	Records []trace.Record `json:"records"`
}

// Trace limits of GET /api/trace.
const (
	DefaultLimit = 50
	MaxLimit     = 1000
)

// EventStep names the server-sent events of GET /api/trace/stream.
const EventStep = "step"

// Heartbeat is how often an idle event stream sends a comment, so proxies
// keep it open and the browser notices a dead connection.
const Heartbeat = 15 * time.Second

// streamBuffer is how many steps a slow event stream may fall behind
// before it misses some.
const streamBuffer = 256

func (d *Dashboard) serveStatus(w http.ResponseWriter, r *http.Request) {
	var st Status
	if d.opts.Source != nil {
		st = d.opts.Source.Status(r.Context())
	}
	if len(st.Errors) == 0 && d.opts.Errors != nil {
		st.Errors = d.opts.Errors.Lines()
	}
	st.Accounts = orEmpty(st.Accounts)
	st.Queues = orEmpty(st.Queues)
	st.Errors = orEmpty(st.Errors)
	st.Config.Warnings = orEmpty(st.Config.Warnings)
	st.Config.Errors = orEmpty(st.Config.Errors)
	now := time.Now()
	writeJSON(w, http.StatusOK, StatusView{Status: st, Title: d.opts.Title, Now: now, Rates: series(d.opts.Recorder, now)})
}

func (d *Dashboard) serveChat(w http.ResponseWriter, r *http.Request) {
	chat, ok := chatParam(w, r)
	if !ok {
		return
	}
	if chat == "" {
		httpError(w, http.StatusBadRequest, "chat is missing: want ?chat=channel:account:kind:id")
		return
	}
	view := ChatView{Chat: chat}
	if d.opts.Source != nil {
		var err error
		view, err = d.opts.Source.Chat(r.Context(), chat)
		switch {
		case errors.Is(err, ErrNoChat):
			httpError(w, http.StatusNotFound, "no such chat: "+chat)
			return
		case err != nil:
			d.log.Error("chat view", "chat", chat, "err", err)
			httpError(w, http.StatusInternalServerError, d.opts.Locale.Text(texts.DashChatFailed))
			return
		}
		if view.Chat == "" {
			view.Chat = chat
		}
	}
	view.History = orEmpty(view.History)
	view.Digests = orEmpty(view.Digests)
	writeJSON(w, http.StatusOK, view)
}

func (d *Dashboard) serveTrace(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	limit := DefaultLimit
	if s := q.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > MaxLimit {
			httpError(w, http.StatusBadRequest, "limit must be a whole number from 1 to "+strconv.Itoa(MaxLimit))
			return
		}
		limit = n
	}
	chat, ok := chatParam(w, r)
	if !ok {
		return
	}
	id := msg.MessageID(q.Get("id"))
	if chat == "" {
		if id != "" {
			httpError(w, http.StatusBadRequest, "id needs chat: message ids are only unique within a chat")
			return
		}
		writeJSON(w, http.StatusOK, Records{Records: orEmpty(d.opts.Recorder.Recent(limit))})
		return
	}
	recs, err := d.opts.Recorder.Chat(r.Context(), chat, id, limit)
	if err != nil {
		d.log.Error("read trace", "chat", chat, "err", err)
		httpError(w, http.StatusInternalServerError, d.opts.Locale.Text(texts.DashTraceReadError))
		return
	}
	writeJSON(w, http.StatusOK, Records{Records: orEmpty(recs)})
}

// chatParam reads ?chat= in the form trace.ChatOf writes ("" when absent),
// answering 400 when it is malformed.
func chatParam(w http.ResponseWriter, r *http.Request) (string, bool) {
	s := r.URL.Query().Get("chat")
	if s == "" {
		return "", true
	}
	ch, acct, peer, err := ParseChat(s)
	if err != nil {
		httpError(w, http.StatusBadRequest, err.Error())
		return "", false
	}
	return trace.ChatOf(ch, acct, peer), true
}

func (d *Dashboard) serveStream(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	steps := d.opts.Recorder.Subscribe(ctx, streamBuffer)
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	write := func(s string) bool {
		if _, err := io.WriteString(w, s); err != nil {
			return false
		}
		return rc.Flush() == nil
	}
	if !write(": connected\n\n") {
		return
	}
	heartbeat := time.NewTicker(Heartbeat)
	defer heartbeat.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-d.stopped:
			return
		case ev, ok := <-steps:
			if !ok {
				// A nil recorder has no steps; wait for the end.
				steps = nil
				continue
			}
			b, err := json.Marshal(ev)
			if err != nil {
				d.log.Error("encode step", "err", err)
				continue
			}
			if !write("event: " + EventStep + "\ndata: " + string(b) + "\n\n") {
				return
			}
		case <-heartbeat.C:
			if !write(": heartbeat\n\n") {
				return
			}
		}
	}
}

func orEmpty[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func httpError(w http.ResponseWriter, status int, text string) {
	writeJSON(w, status, map[string]string{"error": text})
}
