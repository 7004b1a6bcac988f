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
	"github.com/pincerbot/pincer/internal/texts"
	"github.com/pincerbot/pincer/internal/trace"
)

// scriptTexts are the texts the page's script shows, handed to it in the
// page (its body's data-texts).
var scriptTexts = []texts.Key{
	texts.DashTraceFailed, texts.DashLive, texts.DashReconnecting,
	texts.DashVersion, texts.DashStarted, texts.DashUptime,
	texts.DashDaysHours, texts.DashHoursMinutes, texts.DashMinutesSeconds, texts.DashSeconds,
	texts.DashConfig, texts.DashConfigErrors, texts.DashConfigWarnings, texts.DashConfigOK, texts.DashConfigUnknown,
	texts.DashQueues, texts.DashNoAccounts, texts.DashStateUnknown, texts.DashBot, texts.DashImplementation,
	texts.DashLastError, texts.DashHint, texts.DashLastPong, texts.DashNone,
	texts.DashRatesSummary, texts.DashNow, texts.DashMinutesAgo, texts.DashBar, texts.DashStatusFailed,
	texts.DashSession, texts.DashSessionKey, texts.DashModel, texts.DashTurns, texts.DashUpdated, texts.DashNoSession,
	texts.DashWindow, texts.DashWindowOpen, texts.DashWindowFlush, texts.DashNoWindow,
	texts.DashHistory, texts.DashEmpty, texts.DashDigests, texts.DashSettings, texts.DashRecent, texts.DashNoTraced,
	texts.DashTokens, texts.DashTokensUsers, texts.DashTokensChats,
}

//go:embed assets
var assets embed.FS

// Options configure the dashboard.
type Options struct {
	// Title is shown in the page header; texts.DashTitle when empty.
	Title string
	// Locale is the language of the page; the zero Locale is
	// texts.Default. The trace's steps, the accounts' errors and the
	// configuration's problems show as pincer logs them.
	Locale texts.Locale
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
	page   string // rendered once: its title and locale are fixed
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
		o.Title = o.Locale.Text(texts.DashTitle)
	}
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	page, err := htmlpage.ParseFS(assets, "assets/index.html")
	if err != nil {
		return nil, fmt.Errorf("dashboard: parse page: %w", err)
	}
	html, err := page.Render(o.Locale.PageFields(map[string]string{"Title": o.Title}, scriptTexts...))
	if err != nil {
		return nil, fmt.Errorf("dashboard: %w", err)
	}
	static, err := fs.Sub(assets, "assets")
	if err != nil {
		return nil, fmt.Errorf("dashboard: assets: %w", err)
	}
	return &Dashboard{
		opts:    o,
		log:     log.With("component", "dashboard"),
		page:    html,
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
	if _, err := io.WriteString(w, d.page); err != nil {
		d.log.Error("render page", "err", err)
	}
}
