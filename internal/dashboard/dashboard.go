// Package dashboard is pincer's operator page: it answers "why did it (not)
// reply?" by showing the decision trace of every message live, next to the
// state of the accounts, a chat's buffers and session, the message and
// reply rates of the last minutes, recent errors and the configuration
// check.
//
// The page and its JSON and event-stream API are served by Handler under
// /dashboard, /api/dashboard/ and /api/trace. The dashboard does no
// authentication: it is mounted behind the gateway token and host rules.
package dashboard

import (
	"context"
	"embed"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"sync"

	"github.com/pincerbot/pincer/internal/htmlpage"
	"github.com/pincerbot/pincer/internal/trace"
)

//go:embed assets
var assets embed.FS

// Options configure the dashboard.
type Options struct {
	// Title is shown in the page header; "pincer dashboard" when empty.
	Title string
	// Recorder is the decision trace shown; a nil recorder shows none.
	Recorder *trace.Recorder
	// Source gives the accounts, queues, configuration check and chat
	// state; nil shows none.
	Source Source
	// Errors, when set, fills Status.Errors when the Source leaves them
	// empty.
	Errors *ErrorLog
	Logger *slog.Logger
}

// Dashboard serves the operator page.
type Dashboard struct {
	opts   Options
	log    *slog.Logger
	page   htmlpage.Page
	static http.Handler

	// stopped is closed when Run returns, ending open event streams so a
	// server shutdown does not wait for them.
	stopped  chan struct{}
	stopOnce sync.Once
}

// Paths are the patterns the dashboard serves, for mounting Handler on a
// mux (see Register).
var Paths = []string{"/dashboard", "/dashboard/", "/api/dashboard/", "/api/trace", "/api/trace/"}

// New returns the dashboard.
func New(o Options) (*Dashboard, error) {
	if o.Title == "" {
		o.Title = "pincer dashboard"
	}
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	page, err := htmlpage.ParseFS(assets, "assets/index.html")
	if err != nil {
		return nil, fmt.Errorf("dashboard: parse page: %w", err)
	}
	static, err := fs.Sub(assets, "assets")
	if err != nil {
		return nil, fmt.Errorf("dashboard: assets: %w", err)
	}
	return &Dashboard{
		opts:    o,
		log:     log.With("component", "dashboard"),
		page:    page,
		static:  http.StripPrefix("/dashboard/static/", http.FileServerFS(static)),
		stopped: make(chan struct{}),
	}, nil
}

// Run serves until ctx ends, then ends the open event streams (so a
// server shutdown does not wait for them). Call it once.
func (d *Dashboard) Run(ctx context.Context) error {
	defer d.stopOnce.Do(func() { close(d.stopped) })
	<-ctx.Done()
	return nil
}

// Register mounts Handler on mux at Paths.
func (d *Dashboard) Register(mux *http.ServeMux) {
	h := d.Handler()
	for _, p := range Paths {
		mux.Handle(p, h)
	}
}

// Handler serves the page, its assets and the API:
//
//	GET /dashboard               the page
//	GET /dashboard/static/…      its script and style sheet
//	GET /api/dashboard/status    Source.Status and the rate series (StatusView)
//	GET /api/dashboard/chat      ?chat=channel:account:peer: Source.Chat
//	GET /api/trace               ?chat=…&id=…&limit=N: trace records (Records)
//	GET /api/trace/stream        server-sent events "step", one trace.Event each
func (d *Dashboard) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /dashboard", d.servePage)
	mux.HandleFunc("GET /dashboard/{$}", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "../dashboard", http.StatusMovedPermanently)
	})
	mux.Handle("GET /dashboard/static/", d.static)
	mux.HandleFunc("GET /api/dashboard/status", d.serveStatus)
	mux.HandleFunc("GET /api/dashboard/chat", d.serveChat)
	mux.HandleFunc("GET /api/trace", d.serveTrace)
	mux.HandleFunc("GET /api/trace/stream", d.serveStream)
	return mux
}

// csp allows the page only its own script, style sheet and API.
const csp = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

func (d *Dashboard) servePage(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Content-Security-Policy", csp)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cache-Control", "no-store")
	if _, err := io.WriteString(w, d.page.Render(d.opts.Title)); err != nil {
		d.log.Error("render page", "err", err)
	}
}
