package main

import (
	"net/url"
	"os/exec"
	"strings"
	"testing"

	"github.com/pincerbot/pincer/internal/channel/webchat"
	"github.com/pincerbot/pincer/internal/channel/webchat/webchattest"
	"github.com/pincerbot/pincer/internal/dashboard"
)

// TestStatusAndTraceOfARunningGateway: `pincer status` and `pincer trace`
// reach a running pincer serve, with its token, and tell its state and
// why a web chat message was answered.
func TestStatusAndTraceOfARunningGateway(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	dir := t.TempDir()
	p, _ := startServe(t, dir, freePortConfig(`store: { path: './data/p.db' }`))
	defer p.stop()
	client := webchattest.New(p.url)
	res, _, err := client.Post("why would you answer?", "")
	if err != nil {
		t.Fatal(err)
	}
	events, err := webchattest.Events(res)
	if err != nil || webchattest.Text(events, webchat.EventReply) == "" {
		t.Fatalf("no reply: %v", err)
	}
	cli := func(args ...string) (string, string, error) {
		cmd := exec.Command(binary(t), append(args[:1:1], append([]string{"--url", p.url}, args[1:]...)...)...)
		cmd.Dir = dir
		var out, errb strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &errb
		err := cmd.Run()
		noRace(t, "pincer "+args[0], errb.String())
		return out.String(), errb.String(), err
	}
	out, stderr, err := cli("status")
	if err != nil || !strings.Contains(out, "accounts:") || !strings.Contains(out, "ingest: 0 of") {
		t.Errorf("pincer status: %v\n%s%s", err, out, stderr)
	}
	u, _ := url.Parse(p.url)
	browser := ""
	for _, c := range client.HTTP.Jar.Cookies(u) {
		if c.Name == webchat.CookieName {
			browser = c.Value
		}
	}
	out, stderr, err = cli("trace", "webchat:default:direct:"+browser)
	if err != nil {
		t.Fatalf("pincer trace: %v\n%s%s", err, out, stderr)
	}
	for _, want := range []string{"why would you answer?", "[triggered]", "a direct message", "deliver", "[sent]"} {
		if !strings.Contains(out, want) {
			t.Errorf("pincer trace lacks %q:\n%s", want, out)
		}
	}
	if _, stderr, err := cli("trace", "not-a-chat"); err == nil || !strings.Contains(stderr, "pincer trace") {
		t.Errorf("a bad chat name: %v %q", err, stderr)
	}
}

// TestStatusPrintsTheFix: an account with a hint (a refused Feishu app)
// has it printed under its line.
func TestStatusPrintsTheFix(t *testing.T) {
	var b strings.Builder
	printStatus(&b, dashboard.Status{Accounts: []dashboard.Account{{
		Channel: "feishu", ID: "default", State: dashboard.StateRefused, LastError: "514: exceed conn limit",
		Hint: "app cli_x has as many long connections as it may (50)",
	}}})
	want := "  feishu/default  refused  last error: 514: exceed conn limit\n    → app cli_x has as many long connections as it may (50)\n"
	if !strings.Contains(b.String(), want) {
		t.Errorf("pincer status printed:\n%s\nwant it to contain:\n%s", b.String(), want)
	}
}

// TestStatusNamesTheBot: an account's bot is shown by name and number.
func TestStatusNamesTheBot(t *testing.T) {
	var b strings.Builder
	printStatus(&b, dashboard.Status{Accounts: []dashboard.Account{
		{Channel: "onebot", ID: "default", State: "connected", Self: "3300000001", Name: "小助手", Implementation: "NapCat.Onebot", Version: "4.8"},
		{Channel: "onebot", ID: "work", State: "connected", Self: "3300000002"},
	}})
	for _, want := range []string{
		"  onebot/default  connected  bot 小助手 (3300000001)  NapCat.Onebot 4.8\n",
		"  onebot/work  connected  bot 3300000002\n",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("pincer status printed:\n%s\nwant it to contain:\n%s", b.String(), want)
		}
	}
}
