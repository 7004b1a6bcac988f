// Package doctor checks a pincer setup from the outside, the way an
// operator would: the configuration loads and validates, the store opens
// and is intact (and writable), whether a pincer serve holds its data
// directory, every QQ (OneBot v11) implementation and Feishu app
// accepts pincer's credentials, and every model provider answers with the
// configured key. Each check is bounded in time, all run at once, and
// each ends ok, warn or fail with a hint saying what to do.
package doctor

import (
	"context"
	"errors"
	"net"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/pincerbot/pincer/internal/config"
)

// Status is the outcome of one check.
type Status string

// Outcomes, from best to worst.
const (
	OK   Status = "ok"
	Warn Status = "warn"
	Fail Status = "fail"
)

// Result is one check's outcome: a line of the report.
type Result struct {
	// Name says what was checked: "config", "store", "data directory",
	// "qq default ws", "feishu default", "model openai".
	Name   string `json:"name"`
	Status Status `json:"status"`
	// Detail says what was found.
	Detail string `json:"detail"`
	// Hint says what to do about a warning or failure.
	Hint string `json:"hint,omitempty"`
	// Items lists particulars, such as every configuration problem with
	// its key path.
	Items []string `json:"items,omitempty"`
}

// Report is the outcome of every check for one configuration file.
type Report struct {
	// Config is the file checked; empty for the built-in defaults.
	Config  string   `json:"config"`
	Results []Result `json:"results"`
}

// Failed reports whether any check failed.
func (r Report) Failed() bool {
	return slices.ContainsFunc(r.Results, func(x Result) bool { return x.Status == Fail })
}

// Options tune the checks.
type Options struct {
	// Env looks up environment variables for ${NAME} references;
	// os.LookupEnv when nil.
	Env config.Env
	// Timeout bounds each check; 5 s when zero.
	Timeout time.Duration
	// Client makes every HTTP request and WebSocket dial; a client of the
	// package's own when nil.
	Client *http.Client
}

func (o Options) withDefaults() Options {
	if o.Env == nil {
		o.Env = os.LookupEnv
	}
	if o.Timeout <= 0 {
		o.Timeout = 5 * time.Second
	}
	if o.Client == nil {
		o.Client = &http.Client{}
	}
	return o
}

// Run loads the configuration at path (the built-in defaults when path
// is empty) as pincer serve would, and checks it and everything it
// points at. When the file cannot be read or parsed, only the config
// check is reported.
func Run(ctx context.Context, path string, o Options) Report {
	o = o.withDefaults()
	rep := Report{Config: path}
	cfg, res, usable := checkConfig(path, o.Env)
	rep.Results = append(rep.Results, res)
	if usable {
		rep.Results = append(rep.Results, Check(ctx, cfg, o)...)
	}
	return rep
}

// Check runs every check but the config one on a loaded configuration,
// concurrently, and returns their results in a stable order: store, data
// directory, cluster, QQ accounts, Feishu apps, model providers.
func Check(ctx context.Context, cfg config.Config, o Options) []Result {
	o = o.withDefaults()
	var checks []func(context.Context) []Result
	add := func(fn func(context.Context) Result) {
		checks = append(checks, func(ctx context.Context) []Result { return []Result{fn(ctx)} })
	}
	if cfg.Store.Driver == "postgres" {
		// No data directory is locked for a store on a server.
		add(func(ctx context.Context) Result { return checkPostgres(ctx, cfg.Store) })
	} else {
		add(func(ctx context.Context) Result { return checkStore(ctx, cfg.Store) })
		add(func(context.Context) Result { return checkDataDir(cfg.Store) })
	}
	if cfg.Cluster.Enabled() {
		add(func(ctx context.Context) Result { return checkNATS(ctx, cfg.Cluster) })
	}
	checks = append(checks, oneBotChecks(cfg, o)...)
	checks = append(checks, feishuChecks(cfg, o)...)
	checks = append(checks, modelChecks(cfg, o)...)
	out := make([][]Result, len(checks))
	var wg sync.WaitGroup
	for i, fn := range checks {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(ctx, o.Timeout)
			defer cancel()
			out[i] = fn(ctx)
		})
	}
	wg.Wait()
	var flat []Result
	for _, rs := range out {
		flat = append(flat, rs...)
	}
	return flat
}

// checkConfig loads path and reports its problems with their key paths.
// usable is false when the file could not be read or parsed at all, so
// nothing else can be checked.
func checkConfig(path string, env config.Env) (cfg config.Config, res Result, usable bool) {
	name := path
	if name == "" {
		name = "built-in defaults"
	}
	res = Result{Name: "config"}
	cfg, err := config.LoadFile(path, env)
	if err != nil {
		problems := config.Problems(err)
		usable = true
		for _, p := range problems {
			var fe *config.FieldError
			if !errors.As(p, &fe) {
				usable = false
			}
			res.Items = append(res.Items, p.Error())
		}
		res.Status = Fail
		res.Detail = name + ": " + plural(len(problems), "problem")
		res.Hint = "fix the keys named above; `pincer config example` documents every key"
		if data, rerr := os.ReadFile(path); rerr == nil && config.LooksLikeOpenClaw(data) {
			res.Items = nil
			res.Detail = name + " is an OpenClaw configuration, not a pincer one"
			res.Hint = "run `pincer init --from " + path + "` to write a pincer.json5 from it"
			usable = false
		}
		return cfg, res, usable
	}
	res.Status = OK
	res.Detail = name + " loads and validates"
	if path == "" {
		res.Detail = "no config file: built-in defaults (web chat only, preview agent)"
		res.Hint = "`pincer init` writes one"
	}
	if ws := cfg.Channels.Warnings(); len(ws) > 0 {
		res.Status = Warn
		res.Detail += ", with " + plural(len(ws), "warning")
		res.Items = ws
		res.Hint = "these settings are skipped, not refused"
	}
	return cfg, res, true
}

func plural(n int, word string) string {
	s := strconv.Itoa(n) + " " + word
	if n != 1 {
		s += "s"
	}
	return s
}

// netProblem explains a failed connection to addr (a URL or host:port):
// nothing listening, a name that does not resolve, a timeout (within
// timeout, when it is not 0), TLS. ok is false when err is none of those.
func netProblem(err error, addr string, timeout time.Duration) (detail, hint string, ok bool) {
	var dns *net.DNSError
	var opErr *net.OpError
	var netErr net.Error
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return "nothing listens at " + hostOf(addr), "is the server running, and on that address and port?", true
	case errors.As(err, &dns):
		return "cannot resolve " + dns.Name, "check the host name in the URL", true
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &netErr) && netErr.Timeout():
		detail = "no answer from " + hostOf(addr)
		if timeout > 0 {
			detail += " within " + timeout.String()
		}
		return detail, "is the address right and reachable from here (firewall, proxy)?", true
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EHOSTUNREACH), errors.Is(err, syscall.ENETUNREACH):
		return "cannot reach " + hostOf(addr) + ": " + rootCause(err), "is the address right and reachable from here?", true
	case strings.Contains(err.Error(), "tls:"), strings.Contains(err.Error(), "x509:"):
		return "TLS with " + hostOf(addr) + " failed: " + rootCause(err), "check http:// versus https:// and the server's certificate", true
	case errors.As(err, &opErr):
		return "cannot connect to " + hostOf(addr) + ": " + rootCause(err), "", true
	}
	return "", "", false
}

// hostOf returns the host:port of a URL, or addr itself.
func hostOf(addr string) string {
	if _, rest, ok := strings.Cut(addr, "://"); ok {
		host, _, _ := strings.Cut(rest, "/")
		return host
	}
	return addr
}

// rootCause is the innermost error's text.
func rootCause(err error) string {
	for {
		next := errors.Unwrap(err)
		if next == nil {
			return err.Error()
		}
		err = next
	}
}
