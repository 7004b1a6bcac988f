package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/pincerbot/pincer/internal/config"
	"github.com/pincerbot/pincer/internal/doctor"
)

// doctorCmd runs pincer doctor: every check of the configuration pincer
// would use, one line each; exit status 1 when any failed.
func doctorCmd(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("doctor", "doctor [--config FILE | FILE] [--json] [--timeout D]", `Checks the configuration and everything it points at: the store, the data
directory, every QQ and Feishu account and every model provider, one line
each with what to do. Exits 1 when a check failed.

Without FILE, pincer reads $PINCER_CONFIG, else ./pincer.json5, else the
built-in defaults.
`, stderr)
	path := fs.String("config", "", "configuration file (JSON5); default $PINCER_CONFIG, else ./pincer.json5")
	asJSON := fs.Bool("json", false, "print the results as JSON")
	timeout := fs.Duration("timeout", 5*time.Second, "bound of each check")
	if code, ok := parseFlags(fs, args, stdout); !ok {
		return code
	}
	if fs.NArg() > 0 {
		if *path != "" || fs.NArg() > 1 {
			fmt.Fprintf(stderr, "pincer doctor: unexpected arguments %q\n", fs.Args())
			return 2
		}
		*path = fs.Arg(0)
	}
	p, err := config.Locate(*path, os.LookupEnv)
	if err != nil {
		fmt.Fprintf(stderr, "pincer doctor: %v\n", err)
		return 1
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	rep := doctor.Run(ctx, p, doctor.Options{Timeout: *timeout})
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(struct {
			doctor.Report
			OK bool `json:"ok"`
		}{rep, !rep.Failed()}); err != nil {
			fmt.Fprintf(stderr, "pincer doctor: %v\n", err)
			return 1
		}
	} else {
		printReport(stdout, rep)
	}
	if rep.Failed() {
		return 1
	}
	return 0
}

// printReport prints one line per check, its items and hint indented
// below it, and a closing count.
func printReport(w io.Writer, rep doctor.Report) {
	name := rep.Config
	if name == "" {
		name = "built-in defaults"
	}
	fmt.Fprintf(w, "pincer doctor: %s\n", name)
	width := 0
	for _, r := range rep.Results {
		width = max(width, len(r.Name))
	}
	pad := strings.Repeat(" ", 2+4+2+width+2)
	counts := map[doctor.Status]int{}
	for _, r := range rep.Results {
		counts[r.Status]++
		fmt.Fprintf(w, "  %-4s  %-*s  %s\n", r.Status, width, r.Name, r.Detail)
		for _, it := range r.Items {
			fmt.Fprintf(w, "%s- %s\n", pad, it)
		}
		if r.Hint != "" {
			fmt.Fprintf(w, "%s→ %s\n", pad, r.Hint)
		}
	}
	switch {
	case counts[doctor.Fail] > 0:
		fmt.Fprintf(w, "%d failed, %d %s, %d ok\n", counts[doctor.Fail], counts[doctor.Warn], plural(counts[doctor.Warn], "warning", "warnings"), counts[doctor.OK])
	case counts[doctor.Warn] > 0:
		fmt.Fprintf(w, "nothing failed: %d %s, %d ok\n", counts[doctor.Warn], plural(counts[doctor.Warn], "warning", "warnings"), counts[doctor.OK])
	default:
		fmt.Fprintf(w, "all %d checks ok\n", counts[doctor.OK])
	}
}
