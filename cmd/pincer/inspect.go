package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/pincerbot/pincer/internal/config"
	"github.com/pincerbot/pincer/internal/dashboard"
	"github.com/pincerbot/pincer/internal/trace"
)

// gatewayClient reaches a running pincer's HTTP API as the configuration
// names it: gateway.listen, with gateway.token.
type gatewayClient struct {
	base  string
	token string
	http  *http.Client
}

func newGatewayClient(cfg config.Config, override string) (*gatewayClient, error) {
	base := override
	if base == "" {
		host, port, err := net.SplitHostPort(cfg.Gateway.Listen)
		if err != nil {
			return nil, fmt.Errorf("gateway.listen %q: %w", cfg.Gateway.Listen, err)
		}
		if host == "" || host == "0.0.0.0" || host == "::" {
			host = "127.0.0.1"
		}
		base = "http://" + net.JoinHostPort(host, port)
	}
	return &gatewayClient{base: strings.TrimSuffix(base, "/"), token: cfg.Gateway.Token.Value(), http: &http.Client{Timeout: 10 * time.Second}}, nil
}

// get decodes the JSON answer to GET path into v.
func (c *gatewayClient) get(ctx context.Context, path string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base+path, nil)
	if err != nil {
		return err
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	res, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("is pincer running? %w", err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(io.LimitReader(res.Body, 16<<20))
	if err != nil {
		return err
	}
	if res.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s: %s", path, res.Status, strings.TrimSpace(string(body)))
	}
	return json.Unmarshal(body, v)
}

// inspectFlags parses the flags `pincer status` and `pincer trace` share
// and loads what they need of the configuration. ok is false when the
// command is done, with exit code code (0 after -h).
func inspectFlags(fs *flag.FlagSet, args []string, stdout, stderr io.Writer) (c *gatewayClient, cfg config.Config, asJSON bool, code int, ok bool) {
	path := fs.String("config", "", "configuration file of the running gateway (JSON5)")
	addr := fs.String("url", "", "the gateway's address (default: from gateway.listen)")
	fs.BoolVar(&asJSON, "json", false, "print the answer as JSON")
	if code, ok := parseFlags(fs, args, stdout); !ok {
		return nil, cfg, false, code, false
	}
	name := strings.TrimPrefix(fs.Name(), "pincer ")
	cfg, unset, p, err := loadLenient(*path)
	if err != nil {
		fmt.Fprintf(stderr, "pincer %s: config %s: %v\n", name, p, err)
		return nil, cfg, false, 2, false
	}
	// The gateway's address and token are all these commands need: a
	// secret of another section may be unset in this shell.
	needed := []string{"gateway.token"}
	if *addr == "" {
		needed = append(needed, "gateway.listen")
	}
	if err := need(unset, needed...); err != nil {
		fmt.Fprintf(stderr, "pincer %s: config %s: %v\n", name, p, err)
		return nil, cfg, false, 2, false
	}
	if c, err = newGatewayClient(cfg, *addr); err != nil {
		fmt.Fprintf(stderr, "pincer %s: %v\n", name, err)
		return nil, cfg, false, 2, false
	}
	return c, cfg, asJSON, 0, true
}

// status prints a running gateway's accounts, queues and recent errors.
func status(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("status", "status [--config FILE] [--url URL] [--json]", "Prints a running pincer serve's accounts, queues and recent errors, asked of\nits HTTP API at gateway.listen (or --url) with gateway.token.\n", stderr)
	c, _, asJSON, code, ok := inspectFlags(fs, args, stdout, stderr)
	if !ok {
		return code
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "pincer status: unexpected arguments %q\n", fs.Args())
		return 2
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	var raw json.RawMessage
	if err := c.get(ctx, "/api/dashboard/status", &raw); err != nil {
		fmt.Fprintf(stderr, "pincer status: %v\n", err)
		return 1
	}
	if asJSON {
		fmt.Fprintln(stdout, string(raw))
		return 0
	}
	var st dashboard.Status
	if err := json.Unmarshal(raw, &st); err != nil {
		fmt.Fprintf(stderr, "pincer status: %v\n", err)
		return 1
	}
	printStatus(stdout, st)
	return 0
}

func printStatus(w io.Writer, st dashboard.Status) {
	fmt.Fprintf(w, "pincer %s, up since %s\n", st.Version, st.Started.Format(time.DateTime))
	fmt.Fprintln(w, "\naccounts:")
	if len(st.Accounts) == 0 {
		fmt.Fprintln(w, "  none (the web chat only)")
	}
	for _, a := range st.Accounts {
		line := fmt.Sprintf("  %s/%s  %s", a.Channel, a.ID, a.State)
		switch {
		case a.Self != "" && a.Name != "":
			line += "  bot " + a.Name + " (" + a.Self + ")"
		case a.Self != "":
			line += "  bot " + a.Self
		}
		if a.Implementation != "" {
			line += "  " + strings.TrimSpace(a.Implementation+" "+a.Version)
		}
		if a.LastError != "" {
			line += "  last error: " + a.LastError
		}
		fmt.Fprintln(w, line)
		if a.Hint != "" {
			fmt.Fprintln(w, "    → "+a.Hint)
		}
	}
	fmt.Fprintln(w, "\nqueues:")
	for _, q := range st.Queues {
		if q.Capacity > 0 {
			fmt.Fprintf(w, "  %s: %d of %d\n", q.Name, q.Depth, q.Capacity)
		} else {
			fmt.Fprintf(w, "  %s: %d\n", q.Name, q.Depth)
		}
	}
	fmt.Fprintln(w, "\nrecent errors:")
	if len(st.Errors) == 0 {
		fmt.Fprintln(w, "  none")
	}
	for i, e := range st.Errors {
		if i == 10 {
			fmt.Fprintf(w, "  … and %d more on the dashboard\n", len(st.Errors)-i)
			break
		}
		b, _ := json.Marshal(e)
		fmt.Fprintf(w, "  %s\n", b)
	}
	if !st.Config.OK || len(st.Config.Warnings) > 0 {
		fmt.Fprintln(w, "\nconfiguration:")
		for _, e := range st.Config.Errors {
			fmt.Fprintln(w, "  error: "+e)
		}
		for _, e := range st.Config.Warnings {
			fmt.Fprintln(w, "  warning: "+e)
		}
	}
}

// traceAbout follows trace's usage line.
const traceAbout = `Shows why the newest messages of a chat were or were not answered, step by
step, asked of a running pincer serve at gateway.listen (or --url) with
gateway.token.

CHAT is the chat, as the dashboard names it, channel:account:kind:id:
  onebot:default:group:123456     a QQ group of the account "default"
  onebot:work:direct:10001        a QQ private chat of the account "work"
  feishu:default:group:oc_…       a Feishu group chat
  webchat:default:direct:…        a web chat (its browser id)
or a QQ chat as pincer send takes it, on the one QQ account configured:
group:123456, private:10001, onebot:group:123456, or a QQ number.

MESSAGE-ID shows that message alone: its id on the platform (QQ's
message_id, Feishu's om_…), as pincer trace CHAT prints it after
"message". Without it, the newest -n messages of the chat are shown.
`

// traceCmd prints why the messages of a chat were (not) answered.
func traceCmd(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("trace", "trace [flags] CHAT [MESSAGE-ID]", traceAbout, stderr)
	limit := fs.Int("n", 10, "how many of the chat's newest messages")
	c, cfg, asJSON, code, ok := inspectFlags(fs, args, stdout, stderr)
	if !ok {
		return code
	}
	if fs.NArg() < 1 || fs.NArg() > 2 {
		fs.Usage()
		return 2
	}
	chat, err := chatName(cfg.Channels.OneBot, fs.Arg(0))
	if err != nil {
		fmt.Fprintf(stderr, "pincer trace: %v\n", err)
		return 2
	}
	q := url.Values{"chat": {chat}, "limit": {fmt.Sprint(*limit)}}
	if fs.NArg() == 2 {
		q.Set("id", fs.Arg(1))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	var got struct {
		Records []trace.Record `json:"records"`
	}
	if err := c.get(ctx, "/api/trace?"+q.Encode(), &got); err != nil {
		fmt.Fprintf(stderr, "pincer trace: %v\n", err)
		return 1
	}
	if asJSON {
		b, _ := json.MarshalIndent(got.Records, "", "  ")
		fmt.Fprintln(stdout, string(b))
		return 0
	}
	if len(got.Records) == 0 {
		fmt.Fprintf(stderr, "pincer trace: no trace of %s (traces of messages nothing happened to are kept for the newest %s only)\n", strings.Join(fs.Args(), " "), "trace.perAccount messages")
		return 1
	}
	for i, r := range got.Records {
		if i > 0 {
			fmt.Fprintln(stdout)
		}
		printRecord(stdout, r)
	}
	return 0
}

func printRecord(w io.Writer, r trace.Record) {
	outcome := r.Outcome()
	if outcome == "" {
		outcome = "pending"
	}
	fmt.Fprintf(w, "%s  message %s from %s: %s\n", r.At.Format(time.DateTime), r.Key.ID, r.Sender, outcome)
	if r.Preview != "" {
		fmt.Fprintf(w, "  %q\n", r.Preview)
	}
	for _, s := range r.Steps {
		verdict := ""
		if s.Outcome != "" {
			verdict = " [" + s.Outcome + "]"
		}
		fmt.Fprintf(w, "  %s  %-8s%s %s\n", s.At.Format("15:04:05.000"), s.Stage, verdict, s.Detail)
	}
}
