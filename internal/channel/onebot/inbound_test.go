package onebot

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/pincerbot/pincer/internal/channel/onebot/onebottest"
)

// logLines records log records as "LEVEL message key=value ...".
type logLines struct {
	mu    sync.Mutex
	lines []string
}

func (l *logLines) logger() *slog.Logger {
	return slog.New(slog.NewTextHandler(l, &slog.HandlerOptions{
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey {
				return slog.Attr{}
			}
			return a
		},
	}))
}

func (l *logLines) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, strings.TrimSpace(string(p)))
	return len(p), nil
}

func (l *logLines) matching(sub string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, s := range l.lines {
		if strings.Contains(s, sub) {
			out = append(out, s)
		}
	}
	return out
}

// TestPostForAnotherQQNumberIsRefused: a POST whose X-Self-ID (or, without
// one, the event's self_id) is not the account's QQ number is refused,
// whether the number was configured or learnt from a connection.
func TestPostForAnotherQQNumberIsRefused(t *testing.T) {
	mine, _ := json.Marshal(groupEvent(31, 10001, "mine"))
	foreign := groupEvent(32, 10001, "foreign")
	foreign["self_id"] = 3300000009
	theirs, _ := json.Marshal(foreign)
	tests := []struct {
		name   string
		header int64 // X-Self-ID; 0 sends none
		body   []byte
		status int
	}{
		{name: "matching", header: 3300000001, body: mine, status: http.StatusNoContent},
		{name: "foreign header", header: 3300000009, body: mine, status: http.StatusForbidden},
		{name: "foreign header and event", header: 3300000009, body: theirs, status: http.StatusForbidden},
		{name: "foreign event", body: theirs, status: http.StatusForbidden},
		{name: "matching header, foreign event", header: 3300000001, body: theirs, status: http.StatusForbidden},
		{name: "no header", body: mine, status: http.StatusNoContent},
	}
	for _, learnt := range []bool{false, true} {
		for _, tt := range tests {
			name := tt.name + "/configured"
			if learnt {
				name = tt.name + "/learnt"
			}
			t.Run(name, func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					o := AccountOptions{Post: true, PostSecret: "k", SelfID: 3300000001}
					if learnt {
						o = AccountOptions{Post: true, PostSecret: "k", Reverse: true, Token: "k"}
					}
					r := newRig(t, o, nil)
					defer r.close()
					ctx := context.Background()
					if learnt {
						if err := r.peer.DialReverse(ctx, rigReverse, onebottest.ReverseOptions{SelfID: 3300000001, Authorization: "Bearer k", Client: r.net.Client()}); err != nil {
							t.Fatal(err)
						}
						synctest.Wait()
						if r.acct.Self() != 3300000001 {
							t.Fatalf("self %d", r.acct.Self())
						}
					}
					status, err := onebottest.Post(ctx, rigPost, tt.body, onebottest.PostOptions{SelfID: tt.header, Secret: "k", Client: r.net.Client()})
					if err != nil {
						t.Fatal(err)
					}
					if status != tt.status {
						t.Errorf("status %d, want %d", status, tt.status)
					}
					synctest.Wait()
					if dispatched := len(r.sink.ids()) == 1; dispatched != (tt.status == http.StatusNoContent) {
						t.Errorf("dispatched %v", r.sink.ids())
					}
				})
			})
		}
	}
}

// TestPostBeforeTheNumberIsKnown: with no selfId and no connection yet,
// the first POST is taken and teaches the account its number.
func TestPostBeforeTheNumberIsKnown(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t, AccountOptions{Post: true, PostSecret: "k"}, nil)
		defer r.close()
		raw, _ := json.Marshal(groupEvent(41, 10001, "first"))
		if status, err := onebottest.Post(context.Background(), rigPost, raw, onebottest.PostOptions{SelfID: 3300000001, Secret: "k", Client: r.net.Client()}); err != nil || status != http.StatusNoContent {
			t.Fatalf("status %d err %v", status, err)
		}
		synctest.Wait()
		if r.acct.Self() != 3300000001 {
			t.Errorf("self %d", r.acct.Self())
		}
		raw, _ = json.Marshal(groupEvent(42, 10001, "second"))
		if status, err := onebottest.Post(context.Background(), rigPost, raw, onebottest.PostOptions{SelfID: 3300000002, Secret: "k", Client: r.net.Client()}); err != nil || status != http.StatusForbidden {
			t.Fatalf("another number afterwards: status %d err %v", status, err)
		}
	})
}

// TestRefusalsAreLoggedAtMostOnceAMinute: a stranger knocking again and
// again leaves one line a minute, with the count of those not logged.
func TestRefusalsAreLoggedAtMostOnceAMinute(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var logs logLines
		r := newRig(t, AccountOptions{Post: true, PostSecret: "k", Reverse: true, Token: "k", SelfID: 3300000001, Logger: logs.logger()}, nil)
		defer r.close()
		ctx := context.Background()
		raw, _ := json.Marshal(groupEvent(51, 10001, "x"))
		knock := func() {
			for range 5 {
				if status, _ := onebottest.Post(ctx, rigPost, raw, onebottest.PostOptions{Client: r.net.Client()}); status != http.StatusUnauthorized {
					t.Fatalf("unsigned: %d", status)
				}
				if status, _ := onebottest.Post(ctx, rigPost, raw, onebottest.PostOptions{SelfID: 3300000009, Secret: "k", Client: r.net.Client()}); status != http.StatusForbidden {
					t.Fatalf("foreign: %d", status)
				}
				if err := r.peer.DialReverse(ctx, rigReverse, onebottest.ReverseOptions{Authorization: "Bearer guess", Client: r.net.Client()}); err == nil {
					t.Fatal("a wrong token was accepted")
				}
			}
		}
		knock()
		for _, msg := range []string{"event POST refused: bad signature", "event POST refused: another QQ number", "reverse WebSocket refused"} {
			if got := logs.matching(msg); len(got) != 1 || !strings.Contains(got[0], "level=WARN") {
				t.Errorf("%q logged %d times: %q", msg, len(got), got)
			}
		}
		time.Sleep(refusalLogEvery)
		knock()
		for _, msg := range []string{"event POST refused: bad signature", "event POST refused: another QQ number", "reverse WebSocket refused"} {
			if got := logs.matching(msg); len(got) != 2 || !strings.Contains(got[1], "not_logged_since=4") {
				t.Errorf("%q after a minute: %q", msg, got)
			}
		}
		if got := logs.matching("reverse WebSocket refused"); !strings.Contains(got[0], `reason="wrong access token"`) {
			t.Errorf("the reason is logged: %q", got)
		}
	})
}

// TestReverseHandoverIsLogged: the connection that replaces the live one
// is logged at Info with both remote addresses.
func TestReverseHandoverIsLogged(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var logs logLines
		r := newRig(t, AccountOptions{Reverse: true, Token: "k", Logger: logs.logger()}, nil)
		defer r.close()
		for range 2 {
			if err := r.peer.DialReverse(context.Background(), rigReverse, onebottest.ReverseOptions{SelfID: 3300000001, Authorization: "Token k", Client: r.net.Client()}); err != nil {
				t.Fatal(err)
			}
			synctest.Wait()
		}
		got := logs.matching("replaced the live one")
		if len(got) != 1 || !strings.Contains(got[0], "level=INFO") || !strings.Contains(got[0], "remote=pipe") || !strings.Contains(got[0], "replaced_remote=pipe") {
			t.Errorf("handover: %q", got)
		}
		if n := r.peer.Conns(); n != 1 {
			t.Errorf("%d connections open", n)
		}
	})
}

// TestPostSignatureCoversTheSelfCheck: the X-Self-ID check comes after
// the signature, so an unsigned POST says nothing about the number.
func TestPostSignatureCoversTheSelfCheck(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t, AccountOptions{Post: true, PostSecret: "k", SelfID: 3300000001}, nil)
		defer r.close()
		status, err := onebottest.Post(context.Background(), rigPost, bytes.Repeat([]byte(" "), 3), onebottest.PostOptions{SelfID: 3300000009, Client: r.net.Client()})
		if err != nil || status != http.StatusUnauthorized {
			t.Errorf("status %d err %v", status, err)
		}
	})
}
