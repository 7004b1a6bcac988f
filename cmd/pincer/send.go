package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/pincerbot/pincer/internal/channel/onebot"
	"github.com/pincerbot/pincer/internal/config"
	"github.com/pincerbot/pincer/internal/gateway"
	"github.com/pincerbot/pincer/internal/msg"
)

const sendUsage = `Usage: pincer send --channel onebot [--account ID] --target TARGET [--config FILE] TEXT

Sends TEXT as the bot, outside any conversation. For onebot, TARGET is
group:<id>, private:<qq>, onebot:group:<id> or a QQ number (private); the
account's httpUrl is used when set, else its wsUrl.
`

// send delivers one message from the command line.
func send(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("pincer send", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, sendUsage) }
	path := fs.String("config", "", "configuration file (JSON5)")
	ch := fs.String("channel", "onebot", "channel to send on")
	account := fs.String("account", string(msg.DefaultAccount), "account of the channel")
	target := fs.String("target", "", "where to send")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	text := strings.Join(fs.Args(), " ")
	if *target == "" || strings.TrimSpace(text) == "" {
		fs.Usage()
		return 2
	}
	if *ch != string(onebot.ChannelID) {
		fmt.Fprintf(stderr, "pincer send: channel %q cannot be sent to from the command line (want onebot)\n", *ch)
		return 2
	}
	// Only the account's connection is needed: a secret of another section
	// may be unset in this shell.
	section := "channels.onebot."
	if *account != string(msg.DefaultAccount) {
		section += "accounts." + *account + "."
	}
	cfg, p, err := loadOnly(*path, section+"wsUrl", section+"httpUrl", section+"accessToken", section+"selfId")
	if err != nil {
		fmt.Fprintf(stderr, "pincer send: config %s:\n", p)
		for _, e := range config.Problems(err) {
			fmt.Fprintf(stderr, "  %v\n", e)
		}
		return 1
	}
	acct, ok := cfg.Channels.OneBot.All()[*account]
	if !ok {
		fmt.Fprintf(stderr, "pincer send: no onebot account %q\n", *account)
		return 1
	}
	peer, err := onebot.ParseTarget(*target)
	if err != nil {
		fmt.Fprintf(stderr, "pincer send: %v\n", err)
		return 2
	}
	opts, err := gateway.OneBotOptions(*account, acct, cfg.Messages.Inbound, newLogger(cfg.Log, stderr))
	if err != nil {
		fmt.Fprintf(stderr, "pincer send: %v\n", err)
		return 1
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, opts.RequestTimeout+10*time.Second)
	defer cancel()
	id, err := onebot.SendOnce(ctx, opts, msg.Outbound{Account: msg.AccountID(*account), Peer: peer, Text: text})
	if err != nil {
		fmt.Fprintf(stderr, "pincer send: %v\n", err)
		return 1
	}
	fmt.Fprintf(stdout, "sent to %s (message id %s)\n", peer, id)
	return 0
}
