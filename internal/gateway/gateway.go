// Package gateway assembles a running pincer from its configuration: the
// store, the model providers, the engine, the channels and the HTTP
// listener, and shuts them down in order.
package gateway

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/robfig/cron/v3"
	"golang.org/x/sync/errgroup"

	"github.com/pincerbot/pincer/internal/agent"
	"github.com/pincerbot/pincer/internal/channel"
	"github.com/pincerbot/pincer/internal/channel/onebot"
	"github.com/pincerbot/pincer/internal/channel/webchat"
	"github.com/pincerbot/pincer/internal/command"
	"github.com/pincerbot/pincer/internal/config"
	"github.com/pincerbot/pincer/internal/engine"
	"github.com/pincerbot/pincer/internal/httpapi"
	"github.com/pincerbot/pincer/internal/llm"
	"github.com/pincerbot/pincer/internal/llm/anthropic"
	"github.com/pincerbot/pincer/internal/llm/openai"
	"github.com/pincerbot/pincer/internal/llm/preview"
	"github.com/pincerbot/pincer/internal/msg"
	"github.com/pincerbot/pincer/internal/pipeline"
	"github.com/pincerbot/pincer/internal/reply"
	"github.com/pincerbot/pincer/internal/store"
	"github.com/pincerbot/pincer/internal/store/sqlite"
)

// Options are the process-level inputs of Run.
type Options struct {
	Logger *slog.Logger
	// Ready, when set, receives a line naming the web chat URL once pincer
	// accepts requests.
	Ready io.Writer
	// Listener, when set, is used instead of listening on gateway.listen.
	Listener net.Listener
}

// Providers builds the configured model providers, plus the preview
// provider, keyed by id.
func Providers(cfg config.Models) map[string]llm.Provider {
	out := map[string]llm.Provider{preview.ID: preview.Provider{}}
	for id, p := range cfg.Providers {
		switch p.ResolvedAPI(id) {
		case config.APIAnthropic:
			out[id] = anthropic.New(id, llm.Endpoint{BaseURL: p.BaseURL, APIKey: p.APIKey.Value(), Timeout: p.Timeout(), Headers: p.Headers})
		default:
			out[id] = openai.New(id, llm.Endpoint{BaseURL: p.BaseURL, APIKey: p.APIKey.Value(), Timeout: p.Timeout(), Headers: p.Headers})
		}
	}
	return out
}

// Chain returns the model chain of the agent defaults: primary, then
// fallbacks; the preview agent when no primary is set.
func Chain(d config.AgentDefaults) ([]llm.Ref, error) {
	if d.Model.Primary == "" {
		return []llm.Ref{preview.Ref}, nil
	}
	var out []llm.Ref
	for _, s := range append([]string{d.Model.Primary}, d.Model.Fallbacks...) {
		ref, err := llm.ParseRef(s)
		if err != nil {
			return nil, err
		}
		out = append(out, ref)
	}
	return out, nil
}

// webchatBackend serves the web chat: messages go through the sink (the
// debouncer when bursts are merged), history comes from the engine.
type webchatBackend struct {
	channel.Sink
	engine *engine.Engine
}

func (b webchatBackend) History(ctx context.Context, ch msg.ChannelID, peer msg.Peer) ([]store.Turn, error) {
	return b.engine.History(ctx, ch, peer)
}

// Run runs pincer until ctx ends, then shuts down: it stops accepting
// connections, gives in-flight replies gateway.shutdownTimeoutMs to finish
// (cutting and persisting them after that), and closes the store.
func Run(ctx context.Context, cfg config.Config, o Options) (err error) {
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if err := cfg.Validate(); err != nil {
		return fmt.Errorf("config: %w", err)
	}
	chain, err := Chain(cfg.Agents.Defaults)
	if err != nil {
		return err
	}

	st, err := sqlite.Open(ctx, cfg.Store.Path, sqlite.Options{BusyTimeout: time.Duration(cfg.Store.BusyTimeoutMs) * time.Millisecond})
	if err != nil {
		return err
	}
	defer func() {
		if cerr := st.Close(); cerr != nil {
			err = errors.Join(err, fmt.Errorf("close store: %w", cerr))
		}
	}()

	reg := prometheus.NewRegistry()
	for _, c := range []prometheus.Collector{collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{})} {
		if err := reg.Register(c); err != nil {
			return fmt.Errorf("metrics: %w", err)
		}
	}
	metrics, err := engine.NewMetrics(reg)
	if err != nil {
		return err
	}
	d := cfg.Agents.Defaults
	loc, err := d.Envelope.Location()
	if err != nil {
		return fmt.Errorf("config: agents.defaults.envelope: %w", err)
	}
	lo, hi := d.HumanDelay.Range()
	var blocks *reply.ChunkOptions
	if bs := d.BlockStreaming; bs.Enabled {
		blocks = &reply.ChunkOptions{MinChars: bs.MinChars, MaxChars: bs.MaxChars, BreakOn: reply.Break(bs.BreakOn), Idle: time.Duration(bs.IdleMs) * time.Millisecond}
	}
	heartbeat := engine.Heartbeat{Every: time.Duration(d.Heartbeat.EveryMs) * time.Millisecond, Prompt: d.Heartbeat.Prompt}
	if d.Heartbeat.Cron != "" {
		sched, err := cron.ParseStandard(d.Heartbeat.Cron)
		if err != nil {
			return fmt.Errorf("config: agents.defaults.heartbeat.cron: %w", err)
		}
		heartbeat.Schedule = func(now time.Time) time.Time { return sched.Next(now.In(loc)) }
	}
	if d.Heartbeat.Model != "" {
		if heartbeat.Model, err = llm.ParseRef(d.Heartbeat.Model); err != nil {
			return fmt.Errorf("config: agents.defaults.heartbeat.model: %w", err)
		}
	}
	// The tool registry: built-in tools here, channels add theirs.
	tools := &agent.Tools{}
	if err := tools.Add(agent.CurrentTime(loc)); err != nil {
		return err
	}
	qqs, err := buildOneBot(cfg.Channels.OneBot, st, log)
	if err != nil {
		return err
	}
	var endpoints map[string]http.Handler
	if qqs != nil {
		if err := qqs.addTools(tools, loc); err != nil {
			return err
		}
		endpoints = qqs.endpoints
	}
	runner := agent.NewRunner(agent.Options{
		Providers: Providers(cfg.Models), MaxTokens: d.MaxTokens, ContextTokens: d.ContextTokens, Tools: tools,
		FirstTokenTimeout: d.FirstTokenTimeout(), Logger: log,
	})
	eng := engine.New(engine.Options{
		Store: st, Runner: runner, Models: chain, Metrics: metrics, Logger: log, DedupTTL: cfg.Messages.Inbound.DedupTTL(),
		Location: loc, ResponsePrefix: cfg.Messages.ResponsePrefix,
		HumanDelay: reply.DelayRange{Min: lo, Max: hi}, Blocks: blocks,
		Policy:  command.Policy{AllowFrom: cfg.Commands.AllowFrom, OwnerAllowFrom: cfg.Commands.OwnerAllowFrom},
		Aliases: cfg.Models.Aliases, ContextTokens: d.ContextTokens,
		Queue:             queueSettings(cfg.Messages.Queue),
		QueueByChannel:    queueByChannel(cfg.Messages.Queue),
		MaxConcurrent:     d.MaxConcurrent,
		Heartbeat:         heartbeat,
		IdleReset:         time.Duration(cfg.Session.IdleResetMs) * time.Millisecond,
		AutoCompact:       cfg.Session.AutoCompact,
		Identity:          d.Identity,
		ElevatedAllowFrom: cfg.Commands.ElevatedAllowFrom,
		System: func() string {
			s, err := agent.SystemPrompt(d.SystemPrompt, d.Workspace)
			if err != nil {
				log.Warn("system prompt incomplete", "err", err)
			}
			return s
		},
	})

	// Channels feed the debouncer when bursts are merged, else the engine.
	// The receive pipelines restore what they buffered before a restart
	// before anything arrives.
	var pipes []*pipeline.Pipeline
	var router accountRouter
	if qqs != nil {
		if router, pipes, err = qqs.pipelines(ctx, eng, st, loc, log); err != nil {
			return err
		}
	}

	var app http.Handler
	var wc *webchat.Channel
	var sink channel.Sink
	var deb *engine.Debouncer
	if cfg.Channels.Webchat.Enabled {
		if wc, err = webchat.New(webchat.Options{Title: cfg.Channels.Webchat.Title, Logger: log}); err != nil {
			return err
		}
		app = wc.Handler()
		wp, err := webchatPipeline(ctx, cfg.Channels.Webchat, wc, eng, st, loc, log)
		if err != nil {
			return err
		}
		pipes = append(pipes, wp)
		sink = wp
		// Bursts are merged before the pipeline when messages.inbound asks.
		if in := cfg.Messages.Inbound; in.Enabled() {
			deb = engine.NewDebouncer(wp, engine.DebounceOptions{
				Window:  func(ch msg.ChannelID) time.Duration { return in.Window(string(ch)) },
				MaxWait: time.Duration(in.MaxWaitMs) * time.Millisecond,
				Bypass:  func(m msg.Message) bool { return eng.Commands().IsControl(m.Text) },
				Abort:   func(m msg.Message) bool { return command.IsAbort(m.Text) },
			})
			sink = deb
		}
	}
	started := time.Now()
	srv := &http.Server{
		Handler:           httpapi.New(httpapi.Options{Token: cfg.Gateway.Token.Value(), Gatherer: reg, App: app, Endpoints: endpoints, Started: started}),
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	ln := o.Listener
	if ln == nil {
		if ln, err = net.Listen("tcp", cfg.Gateway.Listen); err != nil {
			return fmt.Errorf("gateway: %w", err)
		}
	}

	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error {
		if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			return fmt.Errorf("gateway: %w", err)
		}
		return nil
	})
	g.Go(func() error { return eng.Run(gctx) })
	g.Go(func() error {
		return eng.RunHeartbeat(gctx, func(ch msg.ChannelID) (channel.Adapter, bool) {
			if ch == webchat.ID && wc != nil {
				return wc, true
			}
			if ch == onebot.ChannelID && qqs != nil {
				return qqs.channel, true
			}
			return nil, false
		})
	})
	if wc != nil {
		g.Go(func() error { return wc.Run(gctx, webchatBackend{Sink: sink, engine: eng}) })
	}
	if qqs != nil {
		g.Go(func() error { return qqs.channel.Run(gctx, router) })
	}
	g.Go(func() error {
		<-gctx.Done()
		return shutdown(context.WithoutCancel(gctx), log, cfg.Gateway.ShutdownTimeout(), srv, pipes, deb, eng)
	})

	if wc != nil {
		// Ready means the web chat answers, not only that it listens.
		select {
		case <-wc.Ready():
		case <-gctx.Done():
			return g.Wait()
		}
	}
	url, everywhere := httpapi.OpenURL(ln.Addr().String())
	log.Info("pincer ready", "webchat", url, "listen", ln.Addr().String(), "models", fmt.Sprint(chain), "store", cfg.Store.Path)
	if o.Ready != nil {
		hint := ""
		if cfg.Gateway.Token != "" {
			hint = " (append ?token=<gateway.token> once)"
		}
		if everywhere {
			hint += " (listening on all interfaces)"
		}
		fmt.Fprintf(o.Ready, "pincer is ready: open %s%s\n", url, hint)
	}
	return g.Wait()
}

func shutdown(ctx context.Context, log *slog.Logger, grace time.Duration, srv *http.Server, pipes []*pipeline.Pipeline, deb *engine.Debouncer, eng *engine.Engine) error {
	log.Info("shutting down", "grace", grace.String())
	graceCtx, cancel := context.WithTimeout(ctx, grace)
	defer cancel()
	engineDone := make(chan error, 1)
	go func() {
		if deb != nil {
			// Held bursts are dispatched now rather than lost; the engine
			// stops taking messages only after that, or when the grace
			// period is over.
			flushed := make(chan struct{})
			go func() { deb.Close(); close(flushed) }()
			select {
			case <-flushed:
			case <-graceCtx.Done():
			}
		}
		// Open realtime windows are answered now rather than lost.
		for _, p := range pipes {
			if err := p.Close(graceCtx); err != nil {
				log.Warn("receive pipeline", "err", err)
			}
		}
		engineDone <- eng.Close(graceCtx)
	}()
	// Handlers finish once their turns do; the engine cuts turns at the end
	// of the grace period, so a few seconds past it is enough.
	httpCtx, cancelHTTP := context.WithTimeout(ctx, grace+5*time.Second)
	defer cancelHTTP()
	herr := srv.Shutdown(httpCtx)
	if herr != nil {
		herr = errors.Join(fmt.Errorf("gateway shutdown: %w", herr), srv.Close())
	}
	if eerr := <-engineDone; eerr != nil {
		log.Warn("in-flight replies were cut at the end of the grace period; their partial text is kept", "err", eerr)
	}
	log.Info("stopped")
	return herr
}

func queueSettings(q config.Queue) engine.QueueSettings {
	return engine.QueueSettings{
		Mode: engine.QueueMode(q.Mode), Cap: q.Cap, Drop: engine.DropPolicy(q.Drop),
		Debounce: time.Duration(q.DebounceMs) * time.Millisecond,
	}
}

func queueByChannel(q config.Queue) map[msg.ChannelID]engine.QueueMode {
	out := make(map[msg.ChannelID]engine.QueueMode, len(q.ByChannel))
	for ch, m := range q.ByChannel {
		out[msg.ChannelID(ch)] = engine.QueueMode(m)
	}
	return out
}
