package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/pincerbot/pincer/internal/channel/onebot"
	"github.com/pincerbot/pincer/internal/config"
	"github.com/pincerbot/pincer/internal/dashboard"
	"github.com/pincerbot/pincer/internal/gateway"
	"github.com/pincerbot/pincer/internal/msg"
)

// sendAbout follows send's usage line.
const sendAbout = `Sends TEXT as the bot, outside any conversation. For onebot, TARGET is
group:<id>, private:<qq>, onebot:group:<id> or a QQ number (private), on
the account --account names, else the one QQ account configured; the
account's httpUrl is used when set, else its wsUrl.
`

// send delivers one message from the command line.
func send(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("send", "send [--channel onebot] [--account ID] --target TARGET [--config FILE] TEXT", sendAbout, stderr)
	path := fs.String("config", "", "configuration file (JSON5)")
	ch := fs.String("channel", "onebot", "channel to send on")
	account := fs.String("account", "", "account of the channel (default: the one configured, else "+string(msg.DefaultAccount)+")")
	target := fs.String("target", "", "where to send")
	if code, ok := parseFlags(fs, args, stdout); !ok {
		return code
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
	cfg, unset, p, err := loadLenient(*path)
	if err != nil {
		fmt.Fprintf(stderr, "pincer send: config %s:\n", p)
		for _, e := range config.Problems(err) {
			fmt.Fprintf(stderr, "  %v\n", e)
		}
		return 1
	}
	id, acct, err := qqAccount(cfg.Channels.OneBot, *account, "choose one with --account")
	if err != nil {
		fmt.Fprintf(stderr, "pincer send: %v\n", err)
		return 1
	}
	peer, err := onebot.ParseTarget(*target)
	if err != nil {
		fmt.Fprintf(stderr, "pincer send: %v\n", err)
		return 2
	}
	// Only the account's connection is needed: a secret of another section
	// may be unset in this shell.
	if err := need(unset, qqConnection(id)...); err != nil {
		fmt.Fprintf(stderr, "pincer send: config %s: %v\n", p, err)
		return 1
	}
	opts, err := gateway.OneBotOptions(id, acct, cfg.Messages.Inbound, newLogger(cfg.Log, stderr))
	if err != nil {
		fmt.Fprintf(stderr, "pincer send: %v\n", err)
		return 1
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, opts.RequestTimeout+10*time.Second)
	defer cancel()
	sent, err := onebot.SendOnce(ctx, opts, msg.Outbound{Account: msg.AccountID(id), Peer: peer, Text: text})
	if err != nil {
		fmt.Fprintf(stderr, "pincer send: %v\n", err)
		return 1
	}
	fmt.Fprintf(stdout, "sent to %s (message id %s)\n", peer, sent)
	return 0
}

// qqAccount returns the QQ account a command means: the one named, else
// the one account configured (active), else the default account when it
// is configured or none is. choose says how to name one, for the error
// when several are configured.
func qqAccount(o config.OneBot, named, choose string) (string, config.OneBotAccount, error) {
	all := o.All()
	if named != "" {
		a, ok := all[named]
		if !ok {
			return "", a, fmt.Errorf("no onebot account %q", named)
		}
		return named, a, nil
	}
	var active []string
	for id, a := range all {
		if a.Active() {
			active = append(active, id)
		}
	}
	def := string(msg.DefaultAccount)
	switch {
	case len(active) == 1:
		return active[0], all[active[0]], nil
	case len(active) == 0 || all[def].Active():
		return def, all[def], nil
	}
	slices.Sort(active)
	return "", config.OneBotAccount{}, fmt.Errorf("%d QQ accounts are configured (%s): %s", len(active), strings.Join(active, ", "), choose)
}

// qqConnection lists the key paths of the QQ account id's connection.
func qqConnection(id string) []string {
	section := "channels.onebot."
	if id != string(msg.DefaultAccount) {
		section += "accounts." + id + "."
	}
	return []string{section + "wsUrl", section + "httpUrl", section + "accessToken", section + "selfId"}
}

// chatName resolves a chat as pincer trace takes it: the dashboard's
// channel:account:kind:id, or a QQ target as pincer send takes it
// (group:123456, private:10001, onebot:group:123456, a QQ number) on the
// one QQ account configured.
func chatName(o config.OneBot, s string) (string, error) {
	if _, _, _, err := dashboard.ParseChat(s); err == nil {
		return s, nil
	}
	peer, err := onebot.ParseTarget(s)
	if err != nil {
		return "", fmt.Errorf("chat %q: want channel:account:kind:id (onebot:default:group:123456) or a QQ chat (group:123456, private:10001)", s)
	}
	id, _, err := qqAccount(o, "", "write onebot:<account>:"+peer.String())
	if err != nil {
		return "", fmt.Errorf("chat %q: %w", s, err)
	}
	return string(onebot.ChannelID) + ":" + id + ":" + peer.String(), nil
}
