package gateway

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net"
	"strings"
	"testing"

	"github.com/pincerbot/pincer/internal/channel/onebot"
	"github.com/pincerbot/pincer/internal/config"
)

// TestReconnectWarningCarriesDoctorsHint: the warning of a QQ account
// that cannot reach its forward WebSocket says what pincer doctor says,
// not the whole nested dial error; other records pass unchanged.
func TestReconnectWarningCarriesDoctorsHint(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	url := "ws://" + addr
	_, dialErr := onebot.DialForward(context.Background(), url, "", nil)
	if dialErr == nil {
		t.Fatal("dialed a closed port")
	}

	var buf bytes.Buffer
	base := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
		if a.Key == slog.TimeKey {
			return slog.Attr{}
		}
		return a
	}}))
	opts, err := OneBotOptions("work", config.OneBotAccount{WSURL: url}, config.Inbound{}, base)
	if err != nil {
		t.Fatal(err)
	}
	log := opts.Logger.With("channel", "onebot")
	log.Warn("connection", "state", "waiting to reconnect", "err", dialErr)
	want := `level=WARN msg=connection channel=onebot state="waiting to reconnect" err="nothing listens at ` + addr + `" hint="is its forward WebSocket server (\"WebSocket server\" in NapCat) on? (channels.onebot.accounts.work.wsUrl)"` + "\n"
	if got := buf.String(); got != want {
		t.Errorf("logged\n%swant\n%s", got, want)
	}

	refused := errors.New("onebot: dial " + url + ": the access token was refused (HTTP 401)")
	for _, rec := range []func(){
		func() { log.Info("connection", "err", dialErr) },        // below warnings
		func() { log.Warn("connection", "err", refused) },        // reached, and refused
		func() { log.Warn("send failed", "err", net.ErrClosed) }, // not this URL's
	} {
		buf.Reset()
		rec()
		if strings.Contains(buf.String(), "hint=") {
			t.Errorf("explained a record it should not have: %s", buf.String())
		}
	}
}
