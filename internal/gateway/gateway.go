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
	"maps"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/robfig/cron/v3"
	"golang.org/x/sync/errgroup"

	"github.com/pincerbot/pincer/internal/agent"
	"github.com/pincerbot/pincer/internal/channel"
	"github.com/pincerbot/pincer/internal/channel/feishu"
	"github.com/pincerbot/pincer/internal/channel/onebot"
	"github.com/pincerbot/pincer/internal/channel/webchat"
	"github.com/pincerbot/pincer/internal/command"
	"github.com/pincerbot/pincer/internal/config"
	"github.com/pincerbot/pincer/internal/dashboard"
	"github.com/pincerbot/pincer/internal/engine"
	"github.com/pincerbot/pincer/internal/httpapi"
	"github.com/pincerbot/pincer/internal/lanes"
	"github.com/pincerbot/pincer/internal/limits"
	"github.com/pincerbot/pincer/internal/llm"
	"github.com/pincerbot/pincer/internal/llm/anthropic"
	"github.com/pincerbot/pincer/internal/llm/openai"
	"github.com/pincerbot/pincer/internal/llm/preview"
	"github.com/pincerbot/pincer/internal/media"
	"github.com/pincerbot/pincer/internal/msg"
	"github.com/pincerbot/pincer/internal/outbox"
	"github.com/pincerbot/pincer/internal/pipeline"
	"github.com/pincerbot/pincer/internal/reply"
	"github.com/pincerbot/pincer/internal/store"
	"github.com/pincerbot/pincer/internal/trace"
)

// Options are the process-level inputs of Run.
type Options struct {
	Logger *slog.Logger
	// Ready, when set, receives a line naming the web chat URL once pincer
	// accepts requests.
	Ready io.Writer
	// Listener, when set, is used instead of listening on gateway.listen.
	Listener net.Listener
	// StoreProbeInterval spaces the store's write probes (/healthz, and an
	// error in the log when it stops being writable);
	// DefaultStoreProbeInterval when zero.
	StoreProbeInterval time.Duration
	// Version is pincer's version, shown on the dashboard.
	Version string
	// Errors, when set, is the log's record of recent warnings and errors
	// the dashboard shows.
	Errors *dashboard.ErrorLog
	// Reload, when set, delivers configs that passed the checks, read
	// anew from the file while pincer runs (see package reload); the
	// running gateway applies what it can (see live).
	Reload <-chan config.Config
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

// Take implements channel.Taker when the sink does, as the web chat
// hands a message in before its reply stream opens.
func (b webchatBackend) Take(ctx context.Context, m msg.Message, r channel.Replier, done func(error)) {
	if t, ok := b.Sink.(channel.Taker); ok {
		t.Take(ctx, m, r, done)
		return
	}
	go func() {
		err := b.Sink.Dispatch(ctx, m, r)
		if done != nil {
			done(err)
		}
	}()
}

func (b webchatBackend) History(ctx context.Context, ch msg.ChannelID, peer msg.Peer) ([]store.Turn, error) {
	return b.engine.History(ctx, ch, peer)
}

var _ webchat.ModelNamer = webchatBackend{}

// Model implements webchat.ModelNamer: the page shows the model that
// answers the browser.
func (b webchatBackend) Model(peer msg.Peer) string {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	return b.engine.Model(ctx, webchat.ID, peer)
}

var _ webchat.Previewer = webchatBackend{}

// IsPreview implements webchat.Previewer: model is the preview agent's,
// which answers when no model is configured.
func (webchatBackend) IsPreview(model string) bool { return model == preview.Ref.String() }

// Run runs pincer until ctx ends, then shuts down: it stops accepting
// connections, gives in-flight replies gateway.shutdownTimeoutMs to finish
// (cutting and persisting them after that), and closes the store.
//
// With SQLite, before it writes anything it locks the data directory,
// the directory of store.path, until it returns: while another process
// holds it, Run returns an error that wraps dirlock.ErrHeld and names the
// directory and its holder.
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

	// With SQLite, one pincer at a time on a data directory (see
	// openStore).
	st, release, err := openStore(ctx, cfg.Store, o.Version, log)
	if err != nil {
		return err
	}
	defer func() {
		if rerr := release(); rerr != nil {
			err = errors.Join(err, rerr)
		}
	}()
	defer func() {
		if cerr := st.Close(); cerr != nil {
			err = errors.Join(err, fmt.Errorf("close store: %w", cerr))
		}
	}()

	// In a cluster, the instances meet on NATS and share the store.
	mem, err := joinCluster(ctx, cfg.Cluster, st, log)
	if err != nil {
		return err
	}
	if mem != nil {
		defer func() {
			if cerr := mem.node.Close(); cerr != nil {
				err = errors.Join(err, fmt.Errorf("leave the cluster: %w", cerr))
			}
		}()
	}

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
	// Replies to chat platforms go through the outbox: stored before they
	// are sent, retried until confirmed.
	outboxMetrics, err := outbox.NewMetrics(reg)
	if err != nil {
		return err
	}
	oo := outbox.Options{Store: st, MaxAge: cfg.Messages.Outbox.MaxAge(), Metrics: outboxMetrics, Logger: log}
	var remote func(msg.AccountID) onebot.Caller
	if mem != nil {
		// A reply goes out only while its chat is this instance's.
		oo.MaySend, remote = mem.owns, mem.remoteQQ
	}
	out := outbox.New(oo)
	defer out.Close()
	// Every inbound message is taken in on its chat's lane, in arrival
	// order, by a bounded set of workers shared by all chats; a full queue
	// holds the channels' readers back.
	ingest := lanes.New(lanes.Options{
		Workers: max(8, 4*runtime.GOMAXPROCS(0)), Capacity: cfg.Messages.Inbound.QueueOrDefault(),
		OnPanic: func(v any) { log.Error("taking a message in panicked", "panic", fmt.Sprint(v)) },
	})
	defer ingest.Close()
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
	// Why each message was (not) answered: kept per account in memory,
	// and in the store for the messages something happened to.
	topts := trace.Options{PerAccount: cfg.Trace.PerAccount}
	if keep := cfg.Trace.Keep(); keep > 0 {
		topts.Store, topts.Keep = st, keep
	}
	tracer := trace.New(topts)
	kit := newMediaKit(cfg.Media)
	// Every chat's settings, from the layers of the configuration.
	providers := Providers(cfg.Models)
	// The agent's workspace exists from the start: its bootstrap files
	// (SYSTEM.md, AGENTS.md) are looked for there, and media saved there.
	if err := os.MkdirAll(d.Workspace, 0o700); err != nil {
		return fmt.Errorf("agents.defaults.workspace: %w", err)
	}
	prompt := agent.NewPrompt(d.SystemPrompt, d.Workspace)
	system := systemPrompt(prompt, log)
	chatSet, err := newChats(cfg, system, func(choice config.ModelChoice) (*media.Describer, error) {
		abs, err := filepath.Abs(d.Workspace)
		if err != nil {
			return nil, err
		}
		// Each chain keeps its own descriptions.
		dir := filepath.Join(abs, ".cache", "vision", strings.NewReplacer("/", "_", ",", "+").Replace(chainKey(choice)))
		return newDescriber(kit, choice, providers, dir)
	}, log)
	if err != nil {
		return err
	}
	qqs, err := buildOneBot(cfg.Channels.OneBot, cfg.Messages.Inbound, cfg.Gateway, kit, st, out, tracer, chatSet, remote, log)
	if err != nil {
		return err
	}
	endpoints := map[string]http.Handler{}
	if qqs != nil {
		if err := qqs.addTools(tools, loc); err != nil {
			return err
		}
		maps.Copy(endpoints, qqs.endpoints)
	}
	larks, err := buildFeishu(cfg.Channels.Feishu, d.Workspace, kit, st, out, tracer, chatSet, log)
	if err != nil {
		return err
	}
	if larks != nil {
		if err := tools.Add(feishu.DownloadTool(larks.lookup)); err != nil {
			return err
		}
		for path, h := range larks.endpoints {
			if _, clash := endpoints[path]; clash {
				return fmt.Errorf("config: channels.feishu webhook path %s is also a QQ endpoint", path)
			}
			endpoints[path] = h
		}
	}
	// Pictures, voice notes and links are read before the agent runs;
	// files the agent names are sent from its workspace.
	reader, err := newMediaReader(kit, cfg.Models, d.ImageModel, providers, d.Workspace, log)
	if err != nil {
		return err
	}
	reader.describerFor = chatSet.describerFor
	reader.source = func(ch msg.ChannelID, acct msg.AccountID) (channel.Downloader, bool) {
		_, d, ok := attachments(qqs, larks)(ch, acct)
		return d, ok
	}
	if qqs != nil {
		reader.fileTool[onebot.ChannelID] = downloadToolName
		if err := tools.Add(downloadTool(attachments(qqs, larks), func(m msg.Message) string { return chatWorkspace(reader.root, m) }, cfg.Media.MaxBytes)); err != nil {
			return err
		}
	}
	runner := agent.NewRunner(agent.Options{
		Providers: providers, MaxTokens: d.MaxTokens, ContextTokens: d.ContextTokens, Tools: tools,
		FirstTokenTimeout: d.FirstTokenTimeout(), SeesImages: cfg.Models.SeesImages, Describe: reader.describe(), Logger: log,
	})
	// The limits hold turns over a person's or a chat's caps; tokens are
	// counted per day whether caps are set or not, for /status and the
	// dashboard.
	hot := newLive(cfg, prompt, chatSet, log)
	limiter := limits.New(limits.Options{Settings: hot.limitSettings, Store: st, Location: loc, Logger: log})
	eng := engine.New(engine.Options{
		Store: st, Runner: runner, Trace: tracer, Models: chain, Metrics: metrics, Logger: log, DedupTTL: cfg.Messages.Inbound.DedupTTL(),
		Location: loc, ResponsePrefix: cfg.Messages.ResponsePrefix,
		HumanDelay: reply.DelayRange{Min: lo, Max: hi}, Blocks: blocks,
		Policy:  command.Policy{AllowFrom: cfg.Commands.AllowFrom, OwnerAllowFrom: cfg.Commands.OwnerAllowFrom},
		Aliases: cfg.Models.Aliases, ContextTokens: d.ContextTokens,
		Queue:             queueSettings(cfg.Messages.Queue),
		QueueByChannel:    queueByChannel(cfg.Messages.Queue),
		MaxConcurrent:     d.MaxConcurrent,
		TurnTimeout:       d.TurnTimeout(),
		Heartbeat:         heartbeat,
		IdleReset:         time.Duration(cfg.Session.IdleResetMs) * time.Millisecond,
		AutoCompact:       cfg.Session.AutoCompact,
		Identity:          d.Identity,
		ElevatedAllowFrom: cfg.Commands.ElevatedAllowFrom,
		Media:             reader,
		SeesImages:        cfg.Models.SeesImages,
		ChatDir:           func(m msg.Message) string { return chatWorkspace(reader.root, m) },
		ChatsDirs:         chatsDirs(reader.root),
		Workspace:         reader.root,
		MediaRoots:        sendRoots(cfg.Media),
		MediaURL:          kit.publicURL,
		System:            system,
		Chat:              chatSet.engineChat,
		Locale:            cfg.UI.TextLocale(),
		Limits:            limiter,
	})

	// Every channel feeds its receive pipeline; the web chat goes through
	// the debouncer first when its bursts are merged. The receive
	// pipelines restore what they buffered before a restart before
	// anything arrives.
	var pipes []*pipeline.Pipeline
	var router accountRouter
	if qqs != nil {
		if router, pipes, err = qqs.pipelines(ctx, eng, st, loc, log, mem == nil); err != nil {
			return err
		}
	}
	var larkRouter accountRouter
	if larks != nil {
		var lp []*pipeline.Pipeline
		if larkRouter, lp, err = larks.pipelines(ctx, eng, st, loc, log, mem == nil); err != nil {
			return err
		}
		pipes = append(pipes, lp...)
	}

	var app http.Handler
	var wc *webchat.Channel
	var wp *pipeline.Pipeline
	var sink channel.Sink
	var deb *engine.Debouncer
	if cfg.Channels.Webchat.Enabled {
		if wc, err = webchat.New(webchat.Options{Title: cfg.Channels.Webchat.Title, Locale: cfg.UI.TextLocale(), Logger: log}); err != nil {
			return err
		}
		app = wc.Handler()
		if wp, err = webchatPipeline(ctx, cfg.Channels.Webchat, wc, eng, st, loc, log); err != nil {
			return err
		}
		pipes = append(pipes, wp)
		sink = lanes.Sink{Lanes: ingest, Next: wp}
		// The web chat's bursts are merged before its pipeline when
		// messages.inbound asks; commands, /summary among them, never wait.
		// (QQ and Feishu merge bursts in their pipelines' realtime windows,
		// which are stored before they hold a message.)
		if window := cfg.Messages.Inbound.WebchatWindow(); window > 0 {
			deb = engine.NewDebouncer(sink, engine.DebounceOptions{
				Window:  func(msg.ChannelID) time.Duration { return window },
				MaxWait: time.Duration(cfg.Messages.Inbound.MaxWaitMs) * time.Millisecond,
				Bypass:  func(m msg.Message) bool { return eng.Commands().IsControl(m.Text) || wp.IsSummaryCommand(m) },
				Abort:   func(m msg.Message) bool { return command.IsAbort(m.Text) },
			})
			sink = deb
		}
	}
	// The dashboard is served next to the web chat, behind the same token.
	dash, err := dashboard.New(dashboard.Options{
		Recorder: tracer, Errors: o.Errors, Logger: log, Locale: cfg.UI.TextLocale(),
		Source: &dashboardSource{
			version: o.Version, started: time.Now(), qq: qqs, lark: larks, ingest: ingest,
			capacity: cfg.Messages.Inbound.QueueOrDefault(), out: out, st: st, eng: eng,
			warnings: cfg.Channels.Warnings(), pipes: pipes, chats: chatSet, limiter: limiter,
		},
	})
	if err != nil {
		return err
	}
	appMux := http.NewServeMux()
	dash.Register(appMux)
	if app != nil {
		appMux.Handle("/", app)
	}
	app = appMux
	// What a previous run left undone goes on: replies not yet confirmed,
	// then turns admitted and never answered. In a cluster each
	// partition's owner does it for the partition's chats.
	if mem != nil {
		mem.wire(ingest, router, larkRouter, eng, out, resumeReplier(router, larkRouter, wp), qqs, larks)
	} else {
		if err := out.Start(ctx); err != nil {
			return err
		}
		if n, err := eng.Resume(ctx, resumeReplier(router, larkRouter, wp)); err != nil {
			return err
		} else if n > 0 {
			log.Info("turns admitted before the restart are being answered", "count", n)
		}
	}
	watch := &storeWatch{st: st, log: log}
	started := time.Now()
	srv := &http.Server{
		Handler: httpapi.New(httpapi.Options{
			Token: cfg.Gateway.Token.Value(), Loopback: cfg.Gateway.Loopback(), AllowedHosts: cfg.Gateway.AllowedHosts,
			Pprof: cfg.Gateway.Pprof, Gatherer: reg, App: app, Endpoints: endpoints, Started: started,
			Health: healthReport(watch, qqs.accounts(), larks, mem),
		}),
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
	g.Go(func() error { hourly(gctx, log, "old traces", tracer.Prune); return nil })
	if keep := cfg.Store.KeepMessages(); keep > 0 {
		g.Go(func() error {
			hourly(gctx, log, "old received messages", func(ctx context.Context) error {
				before := time.Now().Add(-keep)
				n, err := st.PruneInbound(ctx, before)
				files, ferr := pruneStaged(reader.root, before)
				if n > 0 || files > 0 {
					log.Debug("pruned old received messages", "count", n, "files", files)
				}
				return errors.Join(err, ferr)
			})
			return nil
		})
	}
	g.Go(func() error {
		if err := tracer.Run(gctx); err != nil {
			log.Warn("storing traces failed", "err", err)
		}
		return nil
	})
	g.Go(func() error { return dash.Run(gctx) })
	if o.Reload != nil {
		hot.pipes = pipes
		g.Go(func() error { hot.run(gctx, o.Reload); return nil })
	}
	g.Go(func() error {
		every := o.StoreProbeInterval
		if every <= 0 {
			every = DefaultStoreProbeInterval
		}
		return watch.run(gctx, every)
	})
	adapters := func(ch msg.ChannelID) (channel.Adapter, bool) {
		if ch == webchat.ID && wc != nil {
			return wc, true
		}
		if ch == onebot.ChannelID && qqs != nil {
			return qqs.channel, true
		}
		if ch == feishu.ChannelID && larks != nil {
			return larks.adapter(), true
		}
		return nil, false
	}
	if mem == nil {
		// In a cluster, the holder of the heartbeat's lease runs it.
		g.Go(func() error { return eng.RunHeartbeat(gctx, adapters) })
	}
	if wc != nil {
		g.Go(func() error { return wc.Run(gctx, webchatBackend{Sink: sink, engine: eng}) })
	}
	// The chat connections outlive the start of a shutdown: they are
	// closed only once the replies of the last turns are out (or stored).
	chCtx, closeChannels := context.WithCancel(context.WithoutCancel(ctx))
	defer closeChannels()
	if mem != nil {
		// The connections whose leases this instance wins, the partitions
		// it owns and the heartbeat, if it holds its lease.
		beat := func(ctx context.Context) error { return eng.RunHeartbeat(ctx, adapters) }
		if heartbeat.Every <= 0 && heartbeat.Schedule == nil {
			beat = nil
		}
		g.Go(func() error { return mem.run(chCtx, gctx, beat) })
	}
	if qqs != nil && mem == nil {
		// A QQ message is taken in on its connection's reader while the
		// lanes are idle: taking it in never waits for the implementation
		// (a quote's get_msg goes out beside it), and a trickle then costs
		// no worker's wake-up.
		g.Go(func() error { return qqs.channel.Run(chCtx, lanes.Sink{Lanes: ingest, Next: router, Inline: true}) })
	}
	if larks != nil && mem == nil {
		g.Go(func() error { return larks.run(chCtx, lanes.Sink{Lanes: ingest, Next: larkRouter}) })
	}
	g.Go(func() error {
		select {
		case <-gctx.Done():
		case <-chCtx.Done():
		}
		if mem != nil {
			// The chats go to the other instances first.
			hctx, cancel := context.WithTimeout(context.WithoutCancel(gctx), cfg.Gateway.ShutdownTimeout())
			mem.handedOver(hctx)
			cancel()
		}
		return shutdown(context.WithoutCancel(gctx), log, cfg.Gateway.ShutdownTimeout(), srv, pipes, deb, eng, out, closeChannels)
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
	page, what := url, "webchat"
	if wc == nil {
		// Without the web chat the page at the root is the dashboard.
		page, what = strings.TrimSuffix(url, "/")+"/dashboard", "dashboard"
	}
	log.Info("pincer ready", what, page, "listen", ln.Addr().String(), "models", fmt.Sprint(chain), "store", storeName(cfg.Store))
	if o.Ready != nil {
		hint := ""
		if cfg.Gateway.Token != "" {
			hint = " (append ?token=<gateway.token> once)"
		}
		if everywhere {
			hint += " (listening on all interfaces)"
		}
		fmt.Fprintf(o.Ready, "pincer is ready: open %s%s\n", page, hint)
	}
	return g.Wait()
}

// shutdown stops pincer in order: it stops taking new messages (the
// receive pipelines refuse them and answer their open windows, held bursts
// are dispatched), lets the turns in flight finish within the grace
// period, waits for the outbox to deliver their replies (what it cannot
// deliver in time stays stored for the next start), and only then closes
// the chat connections. The HTTP server drains alongside.
func shutdown(ctx context.Context, log *slog.Logger, grace time.Duration, srv *http.Server, pipes []*pipeline.Pipeline, deb *engine.Debouncer, eng *engine.Engine, out *outbox.Outbox, closeChannels context.CancelFunc) error {
	log.Info("shutting down", "grace", grace.String())
	graceCtx, cancel := context.WithTimeout(ctx, grace)
	defer cancel()
	engineDone := make(chan error, 1)
	go func() {
		defer closeChannels()
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
		// Every pipeline stops taking messages at once, and answers its
		// open realtime windows rather than lose them.
		var closing sync.WaitGroup
		for _, p := range pipes {
			closing.Go(func() {
				if err := p.Close(graceCtx); err != nil {
					log.Warn("receive pipeline", "err", err)
				}
			})
		}
		closing.Wait()
		engineDone <- eng.Close(graceCtx)
		if err := out.Drain(graceCtx); err != nil {
			log.Warn("replies not delivered before shutdown are kept and sent after the restart", "err", err)
		}
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
		log.Warn("in-flight replies were cut at the end of the grace period; what they produced was delivered, the rest is answered after the restart", "err", eerr)
	}
	log.Info("stopped")
	return herr
}

// resumeReplier rebuilds the reply path of a turn resumed after a restart,
// through the pipeline that made it.
func resumeReplier(qq, lark accountRouter, webchatPipe *pipeline.Pipeline) func(engine.MsgContext) (channel.Replier, bool) {
	return func(mc engine.MsgContext) (channel.Replier, bool) {
		var p *pipeline.Pipeline
		switch mc.Message.Channel {
		case webchat.ID:
			p = webchatPipe
		case onebot.ChannelID:
			if t, ok := qq[mc.Message.Account]; ok {
				p, _ = t.(*pipeline.Pipeline)
			}
		case feishu.ChannelID:
			if t, ok := lark[mc.Message.Account]; ok {
				p, _ = t.(*pipeline.Pipeline)
			}
		}
		if p == nil {
			return nil, false
		}
		return p.ReplierFrom(mc.Delivery)
	}
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

// hourly runs prune at start and every hour until ctx ends; failures are
// logged, naming what it prunes.
func hourly(ctx context.Context, log *slog.Logger, what string, prune func(context.Context) error) {
	t := time.NewTicker(time.Hour)
	defer t.Stop()
	for {
		if err := prune(ctx); err != nil && ctx.Err() == nil {
			log.Warn("pruning "+what+" failed", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// systemPrompt is the engine's system prompt: the configured one with the
// workspace's bootstrap files, then the media guide, joined again only
// when the files changed.
func systemPrompt(p *agent.Prompt, log *slog.Logger) func() string {
	var mu sync.Mutex
	var last, joined string
	return func() string {
		s, err := p.Text()
		if err != nil {
			log.Warn("system prompt incomplete", "err", err)
		}
		mu.Lock()
		defer mu.Unlock()
		if s != last || joined == "" {
			last, joined = s, mediaGuide
			if s != "" {
				joined = s + "\n\n" + mediaGuide
			}
		}
		return joined
	}
}
