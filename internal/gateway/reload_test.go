package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pincerbot/pincer/internal/agent"
	"github.com/pincerbot/pincer/internal/channel/onebot/onebottest"
	"github.com/pincerbot/pincer/internal/config"
	"github.com/pincerbot/pincer/internal/engine"
	"github.com/pincerbot/pincer/internal/limits"
	"github.com/pincerbot/pincer/internal/llm/llmtest"
	"github.com/pincerbot/pincer/internal/msg"
	"github.com/pincerbot/pincer/internal/reload"
)

// logWatch is a log handler that lets a test wait for a message.
type logWatch struct {
	mu      sync.Mutex
	seen    []string
	changed chan struct{}
}

func newLogWatch() *logWatch { return &logWatch{changed: make(chan struct{}, 1)} }

func (l *logWatch) Enabled(context.Context, slog.Level) bool { return true }
func (l *logWatch) WithAttrs([]slog.Attr) slog.Handler       { return l }
func (l *logWatch) WithGroup(string) slog.Handler            { return l }
func (l *logWatch) Handle(_ context.Context, r slog.Record) error {
	line := r.Message
	r.Attrs(func(a slog.Attr) bool { line += " " + a.String(); return true })
	l.mu.Lock()
	l.seen = append(l.seen, line)
	l.mu.Unlock()
	select {
	case l.changed <- struct{}{}:
	default:
	}
	return nil
}

// wait returns the count-th line (from 1) that holds want.
func (l *logWatch) wait(t *testing.T, want string, count int) string {
	t.Helper()
	deadline := time.After(15 * time.Second)
	for {
		l.mu.Lock()
		n := 0
		for _, s := range l.seen {
			if strings.Contains(s, want) {
				if n++; n == count {
					l.mu.Unlock()
					return s
				}
			}
		}
		l.mu.Unlock()
		select {
		case <-l.changed:
		case <-deadline:
			t.Fatalf("no log line %d with %q within 15s", count, want)
		}
	}
}

// waitRequests waits until the model has had n requests and returns them.
func waitRequests(t *testing.T, model *llmtest.Server, n int) []llmtest.Request {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		if reqs := model.Requests(); len(reqs) >= n {
			return reqs
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d model requests within 15s, want %d", len(model.Requests()), n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestReloadWhileAWindowIsOpen: the config file is rewritten with a new
// system prompt while a realtime window holds a message; the window's
// turn (with every message it held) and the next use the new prompt; a
// broken rewrite is refused in the log and the prompt before it stays;
// a key that needs a restart is named and not applied.
func TestReloadWhileAWindowIsOpen(t *testing.T) {
	model := llmtest.NewOpenAI(t)
	var sent sync.Map
	peer := onebottest.New(t, func(action string, params json.RawMessage) (any, int, string) {
		switch action {
		case "get_login_info":
			return map[string]any{"user_id": botQQ, "nickname": "bot"}, 0, ""
		case "send_group_msg":
			n, _ := sent.LoadOrStore("n", new(int))
			*n.(*int)++
			return map[string]any{"message_id": 9000 + *n.(*int)}, 0, ""
		}
		return nil, 0, ""
	})
	dir := t.TempDir()
	path := filepath.Join(dir, "pincer.json5")
	// write writes the config file with a system prompt, more top-level
	// keys and the QQ account's chat entries.
	write := func(prompt, extra, groups string) {
		t.Helper()
		body := fmt.Sprintf(`{
  store: { path: %q },
  models: { providers: { openai: { baseUrl: %q, apiKey: 'sk-test' } } },
  agents: { defaults: { model: { primary: 'openai/gpt-4o-mini' }, workspace: %q, systemPrompt: %q } },
  channels: { onebot: { wsUrl: %q, selfId: %d, sendGapMs: 0,
    receive: { realtime: { enabled: true, windowMs: 600000, maxWindowMs: 600000, maxMessages: 2 } },
    groups: { %s } } },
  %s
}`, filepath.Join(dir, "data", "pincer.db"), model.URL+"/v1", filepath.Join(dir, "ws"), prompt, peer.URL, botQQ, groups, extra)
		if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("你是学习助手，只在被@时回答。", "", "")
	load := func(p string) (config.Config, error) {
		return config.LoadFile(p, func(string) (string, bool) { return "", false })
	}
	cfg, err := load(path)
	if err != nil {
		t.Fatal(err)
	}
	logs := newLogWatch()
	log := slog.New(logs)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	configs := make(chan config.Config)
	watched := make(chan error, 1)
	t.Cleanup(func() { // after the gateway's: cleanups run last first
		cancel()
		if err := <-watched; err != nil {
			t.Errorf("watch: %v", err)
		}
	})
	go func() {
		watched <- reload.Watch(ctx, reload.Options{Path: path, Load: load, Logger: log, Settle: 50 * time.Millisecond,
			Apply: func(c config.Config) {
				select {
				case configs <- c:
				case <-ctx.Done():
				}
			}})
	}()
	runGateway(t, cfg, Options{Listener: ln, Logger: log, Reload: configs})
	pctx, pcancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer pcancel()
	if err := peer.Connected(pctx); err != nil {
		t.Fatal(err)
	}
	push := func(id int64, segs ...any) {
		t.Helper()
		if err := peer.Push(pctx, groupFrom(id, 10001, "张三", segs...)); err != nil {
			t.Fatal(err)
		}
	}

	push(1, atBot(), text(" 第一题怎么做"))
	logs.wait(t, "decision=triggered", 1) // the window holds it from now on
	write("你是游戏公会的开心果。", "", "")
	logs.wait(t, "config applied", 1)
	push(2, text("还有第二题"))
	reqs := waitRequests(t, model, 1)
	// Groups: the media guide, then the engine's guide to silence.
	guide := "\n\n" + mediaGuide + "\n\n" + engine.SilenceGuide
	if got := systemOf(reqs[0]); got != "你是游戏公会的开心果。"+guide {
		t.Errorf("the open window's turn had the system prompt %q, want the reloaded one", strings.TrimSuffix(got, guide))
	}
	if body := strings.Join(userMessages(reqs[0]), "\n"); !strings.Contains(body, "第一题怎么做") || !strings.Contains(body, "还有第二题") {
		t.Errorf("the window's turn lost a message it held:\n%s", body)
	}

	// A broken rewrite is refused and changes nothing.
	if err := os.WriteFile(path, []byte(`{ agents: { defaults: { systemPromt: 'typo' } } }`), 0o600); err != nil {
		t.Fatal(err)
	}
	if line := logs.wait(t, "config not reloaded", 1); !strings.Contains(line, "agents.defaults.systemPromt") {
		t.Errorf("the refusal does not name the key: %s", line)
	}
	// A listener change waits for a restart, and says so.
	write("你是游戏公会的开心果。", "gateway: { listen: '127.0.0.1:18790' },", "")
	if line := logs.wait(t, "only a restart applies it", 1); !strings.Contains(line, "gateway.listen") {
		t.Errorf("the restart-only key is not named: %s", line)
	}
	push(3, atBot(), text(" 来个笑话"))
	push(4, text("要好笑的"))
	reqs = waitRequests(t, model, 2)
	if got := systemOf(reqs[1]); got != "你是游戏公会的开心果。"+guide {
		t.Errorf("the next turn had the system prompt %q", strings.TrimSuffix(got, guide))
	}

	// A chat entry added by a reload gives its group its own prompt and
	// window; the other group keeps the default.
	write("你是游戏公会的开心果。", "gateway: { listen: '127.0.0.1:18790' },",
		`'700000002': { systemPrompt: '你是工作群助手。', receive: { realtime: { enabled: false } } }`)
	if line := logs.wait(t, "config applied", 2); !strings.Contains(line, "channels.onebot.groups.700000002") {
		t.Errorf("the new chat entry is not named as applied: %s", line)
	}
	work := groupFrom(5, 10002, "李四", atBot(), text(" 今天的会几点"))
	work["group_id"] = 700000002
	if err := peer.Push(pctx, work); err != nil {
		t.Fatal(err)
	}
	reqs = waitRequests(t, model, 3)
	if got := systemOf(reqs[2]); got != "你是工作群助手。"+guide {
		t.Errorf("the group with a new entry had the system prompt %q", strings.TrimSuffix(got, guide))
	}
}

// TestReloadAppliesLimits: a reloaded config's limits hold from the next
// message on, and a reload that changes nothing says so.
func TestReloadAppliesLimits(t *testing.T) {
	logs := newLogWatch()
	cfg := config.Default()
	l := newLive(cfg, agent.NewPrompt("", t.TempDir()), nil, slog.New(logs))
	m := msg.Message{Channel: "onebot", Sender: msg.Sender{ID: "10001"}}
	if got := l.limitSettings(m); got != (limits.Settings{}) {
		t.Fatalf("limits before the reload: %+v", got)
	}
	next := cfg
	next.Limits.PerUser.MessagesPerMinute = 2
	l.apply(next)
	if got := l.limitSettings(m).PerUser.MessagesPerMinute; got != 2 {
		t.Errorf("perUser.messagesPerMinute after the reload: %d, want 2", got)
	}
	logs.wait(t, "config applied keys=limits.perUser.messagesPerMinute", 1)
	l.apply(next)
	logs.wait(t, "nothing changed", 1)
}
