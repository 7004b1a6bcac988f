// Command pincer is a chat gateway that puts LLM agents into QQ and
// Feishu/Lark chats and a built-in web chat.
//
// Usage:
//
//	pincer serve [--config FILE]          run the gateway
//	pincer config check [--config FILE]   validate a configuration
//	pincer config example                 print a commented example configuration
//	pincer config explain CHAT            show each setting of a chat and where it came from
//	pincer init                           write a pincer.json5 (asking, or --from openclaw.json)
//	pincer doctor [--config FILE]         check the configuration and everything it points at
//	pincer send --target T TEXT           send a QQ message as the bot
//	pincer dev onebot-sim                 a simulated QQ implementation to try pincer with
//	pincer dev feishu-sim                 a simulated Feishu open platform to try pincer with
//	pincer bench [flags]                  measure pincer end to end under load
//	pincer version                        print the version
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"runtime"
	"runtime/debug"
	"syscall"
	_ "time/tzdata" // envelope timezones work without the system's zoneinfo

	"github.com/pincerbot/pincer/internal/config"
	"github.com/pincerbot/pincer/internal/dashboard"
	"github.com/pincerbot/pincer/internal/dirlock"
	"github.com/pincerbot/pincer/internal/gateway"
	"github.com/pincerbot/pincer/internal/logthrottle"
	"github.com/pincerbot/pincer/internal/procs"
	"github.com/pincerbot/pincer/internal/reload"
	"github.com/pincerbot/pincer/internal/store/sqlite"
	"github.com/pincerbot/pincer/internal/timerslack"
)

// version is set at build time with -ldflags "-X main.version=v1.2.3".
var version = ""

const usage = `pincer puts LLM agents into QQ, Feishu/Lark and web chats.

Usage:
  pincer serve [--config FILE]          run the gateway
  pincer config check [--config FILE]   validate a configuration and list every problem
  pincer config example                 print a fully commented example configuration
  pincer config explain [--config FILE] CHAT
                                        show each setting of one chat (onebot:default:group:123)
                                        and the layer it came from
  pincer init [--non-interactive] [--from openclaw.json] [--force]
                                        write a commented pincer.json5: asks for the QQ
                                        connection and the model (or takes flags, pincer
                                        init -h), or carries an OpenClaw config over
  pincer doctor [--config FILE] [--json]
                                        check the configuration, the store, every QQ and
                                        Feishu account and every model provider
  pincer send --target T [--account A] TEXT
                                        send a QQ message as the bot (T: group:<id>, private:<qq>)
  pincer dev onebot-sim [--listen ADDR] a simulated QQ (OneBot v11) implementation to chat
                                        with pincer from the terminal, no account needed
  pincer dev feishu-sim [--listen ADDR] [--webhook URL]
                                        a simulated Feishu open platform: chat with pincer's
                                        Feishu channel (webhook mode) from the terminal
  pincer bench [flags]                  measure pincer end to end under a burst and a steady
                                        load of QQ messages (pincer bench -h for the flags)
  pincer status [--config FILE]         a running gateway's accounts, queues and recent errors
  pincer trace [--config FILE] CHAT [MESSAGE-ID]
                                        why the newest messages of a chat (onebot:default:group:123456,
                                        or group:123456 as pincer send takes it) were or were not
                                        answered (pincer trace -h)
  pincer version                        print the version

Without --config, pincer reads $PINCER_CONFIG, else ./pincer.json5, else
runs on its built-in defaults (web chat on 127.0.0.1:18789, preview agent).
pincer <command> -h prints the command's usage.
`

func main() {
	if len(os.Args) > 1 && os.Args[1] == "serve" {
		// Returns only when the binary was not executed again.
		if err := timerslack.Reexec(timerslack.Serve, os.Args, os.Environ()); err != nil {
			fmt.Fprintf(os.Stderr, "pincer: %v; serving with the default timer slack\n", err)
		}
	}
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run executes one command line and returns the exit code.
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	switch cmd, rest := args[0], args[1:]; cmd {
	case "serve":
		return serve(rest, stdout, stderr)
	case "config":
		return configCmd(rest, stdout, stderr)
	case "send":
		return send(rest, stdout, stderr)
	case "init":
		return initCmd(rest, os.Stdin, stdout, stderr)
	case "doctor":
		return doctorCmd(rest, stdout, stderr)
	case "dev":
		return devCmd(rest, stdout, stderr)
	case "bench":
		if asksHelp(rest) {
			// bench prints its usage where it prints its errors.
			benchCmd(rest, stdout, stdout)
			return 0
		}
		return benchCmd(rest, stdout, stderr)
	case "status":
		return status(rest, stdout, stderr)
	case "trace":
		return traceCmd(rest, stdout, stderr)
	case "version", "--version", "-v":
		fs := newFlags("version", "version", "Prints pincer's version, the Go release it was built with and the platform.\n", stderr)
		if code, ok := parseFlags(fs, rest, stdout); !ok {
			return code
		}
		fmt.Fprintf(stdout, "pincer %s (%s %s/%s)\n", versionString(), runtime.Version(), runtime.GOOS, runtime.GOARCH)
		return 0
	case "help", "--help", "-h", "-help":
		fmt.Fprint(stdout, usage)
		return 0
	}
	fmt.Fprintf(stderr, "pincer: unknown command %q\n\n%s", args[0], usage)
	return 2
}

// configCmd runs pincer config check and pincer config example.
func configCmd(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("config", "config check [--config FILE | FILE]\n       pincer config example\n       pincer config explain [--config FILE] CHAT", `check    validates a configuration and lists every problem (pincer config check -h)
example  prints a fully commented example configuration
explain  shows each setting of one chat and the layer it came from
         (pincer config explain -h)
`, stderr)
	if code, ok := parseFlags(fs, args, stdout); !ok {
		return code
	}
	if fs.NArg() == 0 {
		fmt.Fprint(stderr, "pincer config: want check, example or explain\n")
		return 2
	}
	switch sub, rest := fs.Arg(0), fs.Args()[1:]; sub {
	case "check":
		return check(rest, stdout, stderr)
	case "explain":
		return explain(rest, stdout, stderr)
	case "example":
		ex := newFlags("config example", "config example", "Prints a fully commented example configuration: every key with its default.\n", stderr)
		if code, ok := parseFlags(ex, rest, stdout); !ok {
			return code
		}
		_, _ = stdout.Write(config.Example)
		return 0
	default:
		fmt.Fprintf(stderr, "pincer config: unknown command %q (want check, example or explain)\n", sub)
		return 2
	}
}

// devCmd runs the simulators of pincer dev.
func devCmd(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("dev", "dev onebot-sim [flags]\n       pincer dev feishu-sim [flags]", `onebot-sim  a simulated QQ (OneBot v11) implementation to chat with pincer
             from the terminal, no account needed (pincer dev onebot-sim -h)
feishu-sim  a simulated Feishu open platform to chat with pincer's Feishu
             channel from the terminal (pincer dev feishu-sim -h)
`, stderr)
	if code, ok := parseFlags(fs, args, stdout); !ok {
		return code
	}
	switch fs.Arg(0) {
	case "onebot-sim":
		return onebotSim(fs.Args()[1:], os.Stdin, stdout, stderr)
	case "feishu-sim":
		return feishuSim(fs.Args()[1:], os.Stdin, stdout, stderr)
	}
	fmt.Fprintln(stderr, errNoSim)
	return 2
}

func versionString() string {
	if version != "" {
		return version
	}
	bi, _ := debug.ReadBuildInfo()
	return buildVersion(bi)
}

// buildVersion is the version a build says of itself: the module version
// of a go install, else the commit it was built from (marked -dirty when
// the tree had changes), else "dev".
func buildVersion(bi *debug.BuildInfo) string {
	if bi == nil {
		return "dev"
	}
	if bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	var rev, dirty string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				dirty = "-dirty"
			}
		}
	}
	if rev == "" {
		return "dev"
	}
	return "dev-" + rev[:min(12, len(rev))] + dirty
}

// configFlag parses the arguments of a subcommand that takes only the
// configuration file, as --config FILE or FILE. ok is false when the
// command is done, with exit code code (0 after -h).
func configFlag(name, about string, args []string, stdout, stderr io.Writer) (path string, code int, ok bool) {
	fs := newFlags(name, name+" [--config FILE | FILE]", about+`
Without FILE, pincer reads $PINCER_CONFIG, else ./pincer.json5, else runs
on its built-in defaults.
`, stderr)
	fs.StringVar(&path, "config", "", "configuration file (JSON5)")
	if code, ok := parseFlags(fs, args, stdout); !ok {
		return "", code, false
	}
	if fs.NArg() > 0 {
		if path != "" || fs.NArg() > 1 {
			fmt.Fprintf(stderr, "pincer %s: unexpected arguments %q\n", name, fs.Args())
			return "", 2, false
		}
		path = fs.Arg(0)
	}
	return path, 0, true
}

func load(path string) (config.Config, string, error) {
	p, err := config.Locate(path, os.LookupEnv)
	if err != nil {
		return config.Config{}, p, err
	}
	cfg, err := config.LoadFile(p, os.LookupEnv)
	return cfg, p, err
}

// loadLenient loads the configuration for a command that uses only some
// settings: a ${VAR} unset in this shell leaves its setting at the
// default, listed in the Unset returned, for need. The returned name is
// the file's, "built-in defaults" when there is none.
func loadLenient(path string) (config.Config, config.Unset, string, error) {
	p, err := config.Locate(path, os.LookupEnv)
	if err != nil {
		return config.Config{}, nil, p, err
	}
	name := p
	if name == "" {
		name = "built-in defaults"
	}
	cfg, unset, err := config.LoadFileLenient(p, os.LookupEnv)
	return cfg, unset, name, err
}

// need fails when one of the settings at paths names a variable that is
// not set, saying what to do.
func need(unset config.Unset, paths ...string) error {
	if err := unset.Need(paths...); err != nil {
		return fmt.Errorf("%w: export it in this shell as for pincer serve", err)
	}
	return nil
}

func check(args []string, stdout, stderr io.Writer) int {
	path, code, ok := configFlag("config check", "Validates a configuration and lists every problem, each at its key path or\nline and column.\n", args, stdout, stderr)
	if !ok {
		return code
	}
	cfg, p, err := load(path)
	name := p
	if name == "" {
		name = "built-in defaults"
	}
	if err != nil {
		if describeOpenClaw(p, stderr) {
			return 1
		}
		problems := config.Problems(err)
		fmt.Fprintf(stderr, "%s: %d %s\n", name, len(problems), plural(len(problems), "problem", "problems"))
		for _, e := range problems {
			fmt.Fprintf(stderr, "  %v\n", e)
		}
		return 1
	}
	for _, w := range cfg.Channels.Warnings() {
		fmt.Fprintf(stderr, "  warning: %s\n", w)
	}
	fmt.Fprintf(stdout, "%s: ok\n", name)
	return 0
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

func serve(args []string, stdout, stderr io.Writer) int {
	path, code, ok := configFlag("serve", "Runs the gateway: every configured channel, the web chat, the dashboard and\nthe HTTP API, until interrupted.\n", args, stdout, stderr)
	if !ok {
		return code
	}
	cfg, p, err := load(path)
	if err != nil {
		if p == "" {
			p = "built-in defaults"
		}
		fmt.Fprintf(stderr, "pincer: config %s:\n", p)
		for _, e := range config.Problems(err) {
			fmt.Fprintf(stderr, "  %v\n", e)
		}
		return 1
	}
	logs := logHandler(cfg.Log, stderr)
	defer logs.Flush(context.Background()) // what the throttle held back
	// The dashboard shows the latest warnings and errors.
	errlog := dashboard.NewErrorLog(logs, dashboard.ErrorLogOptions{})
	log := slog.New(errlog)
	if p == "" {
		log.Info("no config file: running on built-in defaults")
	} else {
		log.Info("config loaded", "file", p)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		stop() // a second signal kills the process at once
	}()
	// The file is read again when it changes and on SIGHUP; what passes
	// the checks goes to the running gateway.
	configs := make(chan config.Config)
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	go watchConfig(ctx, p, hup, configs, log)
	go procs.Run(ctx, log)
	if err := gateway.Run(ctx, cfg, gateway.Options{Logger: log, Ready: stdout, Version: versionString(), Errors: errlog, Reload: configs}); err != nil {
		// Refusals at start: another serve holds the data directory, or
		// the database may not be written.
		if _, readOnly := errors.AsType[*sqlite.ReadOnlyError](err); readOnly || errors.Is(err, dirlock.ErrHeld) {
			log.Error("pincer did not start", "err", err)
			return 1
		}
		log.Error("pincer stopped", "err", err)
		return 1
	}
	return 0
}

// watchConfig reloads the config file at path into configs (see package
// reload) until ctx ends; with no file, a SIGHUP is only logged.
func watchConfig(ctx context.Context, path string, hup <-chan os.Signal, configs chan<- config.Config, log *slog.Logger) {
	if path == "" {
		for {
			select {
			case <-ctx.Done():
				return
			case <-hup:
				log.Warn("SIGHUP: no config file to reload; pincer runs on built-in defaults")
			}
		}
	}
	err := reload.Watch(ctx, reload.Options{
		Path:    path,
		Load:    func(p string) (config.Config, error) { return config.LoadFile(p, os.LookupEnv) },
		Apply:   func(c config.Config) { sendConfig(ctx, configs, c) },
		Signals: hup, Logger: log,
	})
	if err != nil {
		log.Warn("the config file is not watched: changes apply at the next start", "err", err)
	}
}

// sendConfig hands c to the gateway unless ctx ends first.
func sendConfig(ctx context.Context, configs chan<- config.Config, c config.Config) {
	select {
	case configs <- c:
	case <-ctx.Done():
	}
}

func newLogger(c config.Log, w io.Writer) *slog.Logger { return slog.New(logHandler(c, w)) }

// logHandler is the binary's log handler: text or JSON at the configured
// level, with repeated records throttled (a few of each kind a minute,
// then one line counting the rest).
func logHandler(c config.Log, w io.Writer) *logthrottle.Handler {
	var level slog.Level
	_ = level.UnmarshalText([]byte(c.Level)) // validated by config
	opts := &slog.HandlerOptions{Level: level}
	var h slog.Handler = slog.NewTextHandler(w, opts)
	if c.Format == "json" {
		h = slog.NewJSONHandler(w, opts)
	}
	return logthrottle.New(h, logthrottle.Options{})
}
