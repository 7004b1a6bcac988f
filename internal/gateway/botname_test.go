package gateway

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/pincerbot/pincer/internal/channel/onebot/onebottest"
	"github.com/pincerbot/pincer/internal/config"
	"github.com/pincerbot/pincer/internal/dashboard"
)

// TestDashboardNamesTheBot: a connected QQ account shows its bot by
// nickname beside its QQ number, as pincer doctor does, asking the
// implementation once.
func TestDashboardNamesTheBot(t *testing.T) {
	p := onebottest.New(t, func(action string, _ json.RawMessage) (any, int, string) {
		if action == "get_login_info" {
			return map[string]any{"user_id": botQQ, "nickname": "小助手"}, 0, ""
		}
		return nil, 0, ""
	})
	cfg := config.Default()
	cfg.Channels.OneBot.WSURL = p.URL
	g := startGateway(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	status := func() dashboard.Account {
		t.Helper()
		res, err := http.Get(g.url + "/api/dashboard/status")
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		var st dashboard.Status
		if err := json.NewDecoder(res.Body).Decode(&st); err != nil || len(st.Accounts) != 1 {
			t.Fatalf("status: %v, accounts %+v", err, st.Accounts)
		}
		return st.Accounts[0]
	}
	for {
		a := status()
		if a.State == "connected" && a.Self != "" {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the account did not connect: %+v", a)
		case <-time.After(20 * time.Millisecond):
		}
	}
	asked := func() int {
		n := 0
		for _, c := range p.Calls() {
			if c.Action == "get_login_info" {
				n++
			}
		}
		return n
	}
	before := asked()
	for range 2 {
		if a := status(); a.Self != strconv.FormatInt(botQQ, 10) || a.Name != "小助手" {
			t.Errorf("account %+v, want the bot %d named 小助手", a, botQQ)
		}
	}
	if n := asked() - before; n > 1 {
		t.Errorf("get_login_info asked %d times for two looks, want at most once", n)
	}
}

// TestDashboardExplainsAnUnreachableImplementation: a QQ account whose
// forward WebSocket nothing listens at shows what pincer doctor says of
// it, the address and what to check, not the whole nested dial error.
func TestDashboardExplainsAnUnreachableImplementation(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	cfg := config.Default()
	cfg.Channels.OneBot.WSURL = "ws://" + addr
	g := startGateway(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for {
		res, err := http.Get(g.url + "/api/dashboard/status")
		if err != nil {
			t.Fatal(err)
		}
		var st dashboard.Status
		err = json.NewDecoder(res.Body).Decode(&st)
		res.Body.Close()
		if err != nil || len(st.Accounts) != 1 {
			t.Fatalf("status: %v, accounts %+v", err, st.Accounts)
		}
		if a := st.Accounts[0]; a.LastError != "" {
			if a.LastError != "nothing listens at "+addr || a.Hint != `is its forward WebSocket server ("WebSocket server" in NapCat) on? (channels.onebot.wsUrl)` {
				t.Errorf("last error %q, hint %q", a.LastError, a.Hint)
			}
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("no error shown: %+v", st.Accounts[0])
		case <-time.After(20 * time.Millisecond):
		}
	}
}
