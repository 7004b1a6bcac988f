package main

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/pincerbot/pincer/internal/channel/onebot"
	"github.com/pincerbot/pincer/internal/channel/onebot/onebottest"
	"github.com/pincerbot/pincer/internal/channel/onebot/wire"
)

func writeConfig(t *testing.T, doc string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "pincer.json5")
	if err := os.WriteFile(path, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestSendOverHTTPAndWebSocket(t *testing.T) {
	p := onebottest.New(t, func(action string, _ json.RawMessage) (any, int, string) {
		return map[string]any{"message_id": 77}, 0, ""
	})
	p.Token = "tok"
	for name, doc := range map[string]string{
		"httpUrl": `{ channels: { onebot: { httpUrl: '` + p.HTTPURL + `', accessToken: 'tok' } } }`,
		"wsUrl":   `{ channels: { onebot: { accounts: { work: { wsUrl: '` + p.URL + `', accessToken: 'tok' } } } } }`,
	} {
		t.Run(name, func(t *testing.T) {
			before := len(p.Calls())
			args := []string{"send", "--config", writeConfig(t, doc), "--target", "group:700000001"}
			if name == "wsUrl" {
				args = append(args, "--account", "work")
			}
			code, stdout, stderr := runCmd(t, append(args, "hello", "QQ")...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			if !strings.Contains(stdout, "message id 77") {
				t.Errorf("stdout %q", stdout)
			}
			calls := p.Calls()[before:]
			if len(calls) != 1 || calls[0].Action != "send_group_msg" || !strings.Contains(string(calls[0].Params), `"text":"hello QQ"`) {
				t.Errorf("calls %+v", calls)
			}
		})
	}
}

func TestSendRefusesBadInput(t *testing.T) {
	cfg := writeConfig(t, `{ channels: { onebot: { accounts: { idle: { reverseWs: { enabled: true } } } } } }`)
	tests := []struct {
		args []string
		code int
		want string
	}{
		{[]string{"send", "--config", cfg, "--target", "group:abc", "hi"}, 2, "not a QQ or group number"},
		{[]string{"send", "--config", cfg, "--target", "group:1"}, 2, "Usage"},
		{[]string{"send", "--config", cfg, "--channel", "feishu", "--target", "1", "hi"}, 2, "want onebot"},
		{[]string{"send", "--config", cfg, "--account", "nope", "--target", "1", "hi"}, 1, `no onebot account "nope"`},
		{[]string{"send", "--config", cfg, "--account", "idle", "--target", "1", "hi"}, 1, "no wsUrl or httpUrl"},
	}
	for _, tt := range tests {
		code, _, stderr := runCmd(t, tt.args...)
		if code != tt.code || !strings.Contains(stderr, tt.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit %d with %q", tt.args, code, stderr, tt.code, tt.want)
		}
	}
}

func waitFor(t *testing.T, out *logBuf, re *regexp.Regexp) []string {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if m := re.FindStringSubmatch(out.String()); m != nil {
			return m
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("output never matched %s:\n%s", re, out.String())
	return nil
}

func TestOneBotSimulator(t *testing.T) {
	stdin, typing := io.Pipe()
	out := &logBuf{}
	code := make(chan int, 1)
	go func() { code <- onebotSim([]string{"--listen", "127.0.0.1:0"}, stdin, out, io.Discard) }()
	url := waitFor(t, out, regexp.MustCompile(`forward WebSocket (ws://\S+),`))[1]

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ws, err := onebot.DialForward(ctx, url, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	conn := onebot.NewConn(ws, 5*time.Second, nil)
	events := make(chan []byte, 4)
	go func() { _ = conn.Run(ctx, func(f []byte, _ *wire.Event) { events <- f }) }()

	if _, err := conn.Call(ctx, "send_group_msg", map[string]any{"group_id": 700000001, "message": []any{map[string]any{"type": "text", "data": map[string]any{"text": "hi there"}}}}, 0); err != nil {
		t.Fatal(err)
	}
	sentID := waitFor(t, out, regexp.MustCompile(`\[group 700000001\] bot #(\d+): hi there`))[1]

	if _, err := io.WriteString(typing, "@你好\n"); err != nil {
		t.Fatal(err)
	}
	ev, err := wire.DecodeEvent(<-events)
	if err != nil {
		t.Fatal(err)
	}
	m, err := ev.ToMessage("default", 0)
	if err != nil {
		t.Fatal(err)
	}
	if !m.Mentioned("3300000001") || m.Peer.ID != "700000001" || !strings.Contains(m.Text, "你好") {
		t.Errorf("typed line became %+v", m)
	}
	// A quote of the bot's message: get_msg says whose it is.
	if _, err := io.WriteString(typing, "/reply #"+sentID+" 谢谢！\n"); err != nil {
		t.Fatal(err)
	}
	if ev, err = wire.DecodeEvent(<-events); err != nil {
		t.Fatal(err)
	}
	if m, err = ev.ToMessage("default", 0); err != nil || string(m.ReplyTo) != sentID || m.Text != "谢谢！" {
		t.Errorf("a quote became %+v (%v)", m, err)
	}
	for id, want := range map[string]struct{ author, text string }{sentID: {"3300000001", "hi there"}, string(m.ID): {"10001", "谢谢！"}} {
		data, err := conn.Call(ctx, "get_msg", map[string]any{"message_id": json.Number(id)}, 0)
		if author, _ := wire.Author(data); err != nil || author.String() != want.author {
			t.Errorf("get_msg %s: %s %v, want author %s", id, data, err, want.author)
		}
		// It tells the message too, with its time, as NapCat does: a
		// quote of it shows its text.
		var got struct {
			Time    int64 `json:"time"`
			Message []struct {
				Type string            `json:"type"`
				Data map[string]string `json:"data"`
			} `json:"message"`
		}
		if err := json.Unmarshal(data, &got); err != nil || got.Time == 0 || len(got.Message) == 0 || got.Message[len(got.Message)-1].Data["text"] != want.text {
			t.Errorf("get_msg %s: %s (%v), want its time and its text %q", id, data, err, want.text)
		}
	}
	if _, err := conn.Call(ctx, "get_msg", map[string]any{"message_id": 5}, 0); err == nil {
		t.Error("get_msg of a message never sent")
	}
	typing.Close()
	if c := <-code; c != 0 {
		t.Errorf("exit %d", c)
	}
}

// TestSendPicksTheOneAccount: without --account, send goes through the
// one QQ account configured, and asks which when several are.
func TestSendPicksTheOneAccount(t *testing.T) {
	p := onebottest.New(t, func(string, json.RawMessage) (any, int, string) {
		return map[string]any{"message_id": 79}, 0, ""
	})
	one := writeConfig(t, `{ channels: { onebot: { accounts: { work: { httpUrl: '`+p.HTTPURL+`' } } } } }`)
	if code, stdout, stderr := runCmd(t, "send", "--config", one, "--target", "group:1", "hi"); code != 0 || !strings.Contains(stdout, "message id 79") {
		t.Errorf("one account: exit %d\n%s%s", code, stdout, stderr)
	}
	two := writeConfig(t, `{ channels: { onebot: { accounts: { home: { httpUrl: '`+p.HTTPURL+`' }, work: { httpUrl: '`+p.HTTPURL+`' } } } } }`)
	code, _, stderr := runCmd(t, "send", "--config", two, "--target", "group:1", "hi")
	if code != 1 || !strings.Contains(stderr, "2 QQ accounts are configured (home, work): choose one with --account") {
		t.Errorf("two accounts: exit %d: %s", code, stderr)
	}
}
