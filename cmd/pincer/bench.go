package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"

	"github.com/pincerbot/pincer/internal/bench"
)

// benchCmd runs pincer bench: pincer serve (this binary, or --pincer) as
// a child process under a burst and a steady load, with a baseline
// reader beside it, and prints what it measured. It exits 1 when a
// message or reply was lost or doubled, not when the numbers are slow.
func benchCmd(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] == "baseline-reader" {
		return baselineReader(args[1:], stdout, stderr)
	}
	fs := flag.NewFlagSet("pincer bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, `Usage: pincer bench [flags]

Runs pincer serve as a child process against a simulated OneBot
implementation and a fake OpenAI-compatible model on loopback, and
measures a burst (-n messages as fast as they go, then one @ of the bot)
and a steady rate (-rate events/s for -duration, every -every-th an @,
and the same rate of chatter only on another fresh pincer), each beside
a baseline reader that only decodes the same frames and answers the @s.
Exits 1 when a message or a reply was lost or doubled.

With --instances N every pincer run is N pincer processes in cluster
mode, on one NATS server with JetStream (-nats, or nats-server on PATH
started for each run) and the PostgreSQL server PINCER_BENCH_PG_DSN names
(a schema of each run's own); -kill kills the instance holding the QQ
connection halfway through each run and reports the takeover.

Flags:
`)
		fs.PrintDefaults()
	}
	scenario := fs.String("scenario", bench.Both, "burst, steady or both")
	n := fs.Int("n", bench.DefaultMessages, "burst: messages before the final @")
	groups := fs.Int("groups", 0, fmt.Sprintf("groups the messages go to (0: %d for the burst, %d for the steady rate)", bench.DefaultBurstGroups, bench.DefaultSteadyGroups))
	senders := fs.Int("senders", bench.DefaultSenders, "people who speak")
	rate := fs.Int("rate", bench.DefaultRate, "steady: events per second")
	duration := fs.Duration("duration", bench.DefaultDuration, "steady: how long the rate is kept up, in each of its three runs")
	every := fs.Int("every", bench.DefaultEvery, "steady: every this many-th message @s the bot")
	latency := fs.Duration("latency", bench.DefaultLatency, "the fake model's time to its first token")
	realtime := fs.Bool("realtime", false, "pincer's realtime windows (receive.realtime.enabled)")
	history := fs.Bool("history", true, "pincer's history buffer (receive.history.enabled)")
	quotes := fs.Float64("quotes", 0, "the share of messages (0 to 1) that quote another with a reply segment (half an earlier message of the chat, half one from before pincer started, which get_msg tells); the burst then also runs on a fresh pincer with them")
	writeBatch := fs.Int("write-batch", 0, "bytes per WebSocket write of the simulator: whole frames coalesced into writes of up to this size, as an implementation or proxy under load does (steady: the frames due at once); 0 writes each frame by itself")
	sendGap := fs.Int("send-gap", -1, "pincer's channels.onebot.sendGapMs, in milliseconds (0: no gap, the pipeline without the chat's pacing; -1: pincer's default)")
	timeout := fs.Duration("timeout", bench.DefaultTimeout, "the longest a burst may take (the steady rate waits at most 30 s for its last replies)")
	asJSON := fs.Bool("json", false, "print the report as JSON")
	binary := fs.String("pincer", "", "the pincer binary to measure (default: this one)")
	keep := fs.Bool("keep", false, "keep the runs' files (configuration, logs, databases)")
	profile := fs.String("profile", "", "a directory for pincer's CPU profile of each run's window and its heap profile at the window's end (go tool pprof reads them), taken through gateway.pprof")
	instances := fs.Int("instances", 0, "run every pincer as this many processes in cluster mode, on one NATS server and the PostgreSQL server PINCER_BENCH_PG_DSN names (0: one pincer on SQLite)")
	natsURL := fs.String("nats", "", "with --instances: a running NATS server with JetStream (its stream pincer_inbound and buckets pincer_leases, pincer_progress are deleted before each run); default: nats-server on PATH, started for each run")
	leaseTTL := fs.Duration("lease-ttl", bench.DefaultLeaseTTL, "with --instances: the cluster's leaseTtlMs")
	kill := fs.Bool("kill", false, "with --instances 2 or more: kill (SIGKILL) the instance holding the QQ connection halfway through each pincer run, and report the takeover and the replies lost or doubled")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "pincer bench: unexpected arguments %q\n", fs.Args())
		return 2
	}
	bin, self := *binary, *binary == ""
	if self {
		var err error
		if bin, err = os.Executable(); err != nil {
			fmt.Fprintf(stderr, "pincer bench: cannot find this binary (pass --pincer): %v\n", err)
			return 1
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	rep, err := bench.Run(ctx, bench.Config{
		Scenario: *scenario, Messages: *n, Groups: *groups, Senders: *senders,
		Rate: *rate, Duration: *duration, Every: *every, Latency: *latency,
		Realtime: *realtime, History: *history, Quotes: *quotes, Timeout: *timeout,
		WriteBatch: *writeBatch, SendGapMs: *sendGap,
		Serve: func(config string) *exec.Cmd {
			cmd := exec.Command(bin, "serve", "--config", config)
			cmd.Env = append(os.Environ(), "PINCER_CONFIG=")
			return cmd
		},
		Reader: func(url string, self int64) *exec.Cmd {
			return exec.Command(bin, "bench", "baseline-reader", "--url", url, "--self", strconv.FormatInt(self, 10))
		},
		Version: describe(bin, self), Keep: *keep, Profile: *profile, Progress: stderr,
		Instances: *instances, PostgresDSN: os.Getenv("PINCER_BENCH_PG_DSN"), NATS: *natsURL, LeaseTTL: *leaseTTL, Kill: *kill,
	})
	if err != nil {
		fmt.Fprintf(stderr, "pincer bench: %v\n", err)
		return 1
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		err = enc.Encode(rep)
	} else {
		err = rep.WriteText(stdout)
	}
	if err != nil {
		fmt.Fprintf(stderr, "pincer bench: %v\n", err)
		return 1
	}
	if !rep.OK {
		return 1
	}
	return 0
}

// describe names the pincer measured: this binary's version and the
// commit it was built from, or what another binary's version command
// says. This binary is never run for it: under go test it is the test
// binary, which would run the tests again.
func describe(bin string, self bool) string {
	if !self {
		out, err := exec.Command(bin, "version").Output()
		if desc := strings.TrimPrefix(strings.TrimSpace(string(out)), "pincer "); err == nil && desc != "" {
			return desc
		}
		return bin
	}
	desc := fmt.Sprintf("%s (%s %s/%s)", versionString(), runtime.Version(), runtime.GOOS, runtime.GOARCH)
	if bi, ok := debug.ReadBuildInfo(); ok {
		var rev, modified string
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.modified":
				if s.Value == "true" {
					modified = ", modified"
				}
			}
		}
		if len(rev) > 12 {
			rev = rev[:12]
		}
		if rev != "" {
			desc += " (commit " + rev + modified + ")"
		}
	}
	return desc
}

// baselineReader is the baseline's reader, which pincer bench starts as a
// process of its own: it reads and decodes events from url and answers
// each @ of the bot, until SIGTERM or the connection ends, then prints
// how many events it decoded.
func baselineReader(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("pincer bench baseline-reader", flag.ContinueOnError)
	fs.SetOutput(stderr)
	url := fs.String("url", "", "the implementation's forward WebSocket")
	self := fs.Int64("self", bench.SelfID, "the bot's QQ number")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *url == "" {
		fmt.Fprint(stderr, "pincer bench baseline-reader: --url is required\n")
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	n, err := bench.Read(ctx, *url, *self)
	fmt.Fprintf(stdout, "events %d\n", n)
	if err != nil {
		fmt.Fprintf(stderr, "pincer bench baseline-reader: %v\n", err)
		return 1
	}
	return 0
}
