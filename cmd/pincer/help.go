package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
)

// newFlags returns the flag set of the subcommand name ("config check"),
// whose usage is synopsis (what follows "Usage: pincer"), about and the
// flags.
func newFlags(name, synopsis, about string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("pincer "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		w := fs.Output()
		fmt.Fprintf(w, "Usage: pincer %s\n", synopsis)
		if about != "" {
			fmt.Fprintf(w, "\n%s", about)
		}
		hasFlags := false
		fs.VisitAll(func(*flag.Flag) { hasFlags = true })
		if hasFlags {
			fmt.Fprintln(w, "\nFlags:")
			fs.PrintDefaults()
		}
	}
	return fs
}

// parseFlags parses args into fs. Asked for help (-h, -help, --help), it
// prints fs's usage on stdout and returns 0 with ok false; given a bad
// flag, it prints why and the usage on fs's output and returns 2.
func parseFlags(fs *flag.FlagSet, args []string, stdout io.Writer) (code int, ok bool) {
	out := fs.Output()
	var said bytes.Buffer
	fs.SetOutput(&said)
	err := fs.Parse(args)
	fs.SetOutput(out)
	switch {
	case errors.Is(err, flag.ErrHelp):
		_, _ = said.WriteTo(stdout)
		return 0, false
	case err != nil:
		_, _ = said.WriteTo(out)
		return 2, false
	}
	return 0, true
}

// asksHelp reports whether args, a command's arguments without flags of
// its own, ask for its usage.
func asksHelp(args []string) bool {
	return slices.ContainsFunc(args, func(a string) bool { return a == "-h" || a == "-help" || a == "--help" })
}
