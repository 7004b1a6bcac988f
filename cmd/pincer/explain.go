package main

import (
	"fmt"
	"io"
	"text/tabwriter"
	"unicode/utf8"

	"github.com/pincerbot/pincer/internal/chatconf"
	"github.com/pincerbot/pincer/internal/config"
)

// explainValueWidth bounds a value shown by pincer config explain, in
// characters; a longer one (a system prompt) is cut.
const explainValueWidth = 60

// explain prints every effective setting of one chat with the layer that
// set it.
func explain(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("config explain", "config explain [--config FILE] CHAT", `Prints every effective setting of one chat and the layer it came from:
default, agents.defaults, messages, limits, the channel, the account, the '*' entry
or the chat's own entry.

CHAT is <channel>:<account>:<group|direct>:<id>, such as
onebot:default:group:123456 or feishu:default:direct:ou_xxx; the id '*'
shows what a chat without an entry of its own gets.

Without --config, pincer reads $PINCER_CONFIG, else ./pincer.json5, else
explains its built-in defaults.
`, stderr)
	var path string
	fs.StringVar(&path, "config", "", "configuration file (JSON5)")
	if code, ok := parseFlags(fs, args, stdout); !ok {
		return code
	}
	if fs.NArg() != 1 {
		fmt.Fprintf(stderr, "pincer config explain: want one chat such as onebot:default:group:123456, got %q\n", fs.Args())
		return 2
	}
	addr, err := chatconf.ParseAddress(fs.Arg(0))
	if err != nil {
		fmt.Fprintf(stderr, "pincer config explain: %v\n", err)
		return 2
	}
	cfg, _, name, err := loadLenient(path)
	if err != nil {
		fmt.Fprintf(stderr, "pincer config explain: %s:\n", name)
		for _, e := range config.Problems(err) {
			fmt.Fprintf(stderr, "  %v\n", e)
		}
		return 1
	}
	v, err := chatconf.Resolve(cfg, addr)
	if err != nil {
		fmt.Fprintf(stderr, "pincer config explain: %v\n", err)
		return 1
	}
	fmt.Fprintf(stdout, "%s (%s)\n", addr, name)
	layers := "default < agents.defaults, messages, limits < channels." + addr.Channel
	if addr.Account != "default" {
		layers += " < channels." + addr.Channel + ".accounts." + addr.Account
	}
	for _, l := range v.Layers {
		layers += " < " + l
	}
	fmt.Fprintf(stdout, "layers, lowest first: %s\n", layers)
	if !v.Enabled {
		fmt.Fprintln(stdout, "enabled is false: pincer logs this chat's messages and never answers there")
	}
	fmt.Fprintln(stdout)
	w := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "SETTING\tVALUE\tFROM")
	for _, s := range v.Settings() {
		fmt.Fprintf(w, "%s\t%s\t%s\n", s.Path, cut(s.Value, explainValueWidth), s.Layer)
	}
	if err := w.Flush(); err != nil {
		fmt.Fprintf(stderr, "pincer config explain: %v\n", err)
		return 1
	}
	return 0
}

// cut shortens s to n characters, marking the cut with "…".
func cut(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n-1]) + "…"
}
