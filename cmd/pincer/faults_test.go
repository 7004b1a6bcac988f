package main

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/pincerbot/pincer/internal/channel/onebot/onebottest"
	"github.com/pincerbot/pincer/internal/llm/llmtest"
)

// linkProxy stands between pincer and its OneBot implementation, so a
// test can cut the link (an implementation restarting, a network blip):
// while it is down, connections are dropped and new ones refused.
type linkProxy struct {
	ln     net.Listener
	target string

	mu    sync.Mutex
	down  bool
	conns []net.Conn
}

func newLinkProxy(t *testing.T, target string) *linkProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &linkProxy{ln: ln, target: target}
	t.Cleanup(func() { ln.Close(); p.cut() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			p.mu.Lock()
			if p.down {
				p.mu.Unlock()
				c.Close()
				continue
			}
			up, err := net.Dial("tcp", target)
			if err != nil {
				p.mu.Unlock()
				c.Close()
				continue
			}
			p.conns = append(p.conns, c, up)
			p.mu.Unlock()
			go func() { _, _ = io.Copy(up, c); up.Close() }()
			go func() { _, _ = io.Copy(c, up); c.Close() }()
		}
	}()
	return p
}

func (p *linkProxy) url() string { return "ws://" + p.ln.Addr().String() }

func (p *linkProxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.down = true
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}

func (p *linkProxy) restore() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.down = false
}

// qqWorld is a OneBot implementation that keeps every group's history and
// counts the bot's replies per message they quote.
type qqWorld struct {
	peer *onebottest.Peer

	mu      sync.Mutex
	history map[int64][]map[string]any
	replies map[string]int
	sends   int
	replied chan struct{}
}

func newQQWorld(t *testing.T) *qqWorld {
	w := &qqWorld{history: map[int64][]map[string]any{}, replies: map[string]int{}, replied: make(chan struct{}, 1024)}
	w.peer = onebottest.New(t, func(action string, params json.RawMessage) (any, int, string) {
		var p struct {
			GroupID int64 `json:"group_id"`
		}
		_ = json.Unmarshal(params, &p)
		switch action {
		case "get_login_info":
			return map[string]any{"user_id": restartBotQQ, "nickname": "bot"}, 0, ""
		case "get_group_msg_history":
			w.mu.Lock()
			defer w.mu.Unlock()
			return map[string]any{"messages": w.history[p.GroupID]}, 0, ""
		case "send_group_msg":
			w.mu.Lock()
			w.sends++
			w.replies[sentQuote(params)]++
			n := w.sends
			w.mu.Unlock()
			w.replied <- struct{}{}
			return map[string]any{"message_id": 90000 + n}, 0, ""
		}
		return nil, 0, ""
	})
	return w
}

// mention is an @ of the bot in group g, id id; it also joins the group's
// history, as the implementation would keep it.
func (w *qqWorld) mention(id, g int64) map[string]any {
	ev := mentionEvent(id, "问题"+strconv.FormatInt(id, 10))
	ev["group_id"] = g
	w.mu.Lock()
	w.history[g] = append(w.history[g], ev)
	w.mu.Unlock()
	return ev
}

// waitReplies waits for n more replies.
func (w *qqWorld) waitReplies(t *testing.T, ctx context.Context, n int) {
	t.Helper()
	for range n {
		select {
		case <-w.replied:
		case <-ctx.Done():
			w.mu.Lock()
			defer w.mu.Unlock()
			t.Fatalf("replies so far: %d (%v)", w.sends, w.replies)
		}
	}
}

// tally checks that every message in ids was answered exactly once and
// nothing else was sent.
func (w *qqWorld) tally(t *testing.T, ids []int64) {
	t.Helper()
	w.mu.Lock()
	defer w.mu.Unlock()
	lost, twice := 0, 0
	for _, id := range ids {
		switch n := w.replies[strconv.FormatInt(id, 10)]; {
		case n == 0:
			lost++
		case n > 1:
			twice++
		}
	}
	t.Logf("answered %d of %d messages, lost %d, answered twice %d, %d sends", len(ids)-lost, len(ids), lost, twice, w.sends)
	if lost > 0 || twice > 0 || w.sends != len(ids) {
		t.Errorf("lost %d, twice %d, %d sends for %d messages: %v", lost, twice, w.sends, len(ids), w.replies)
	}
}

func qqConfig(model, wsURL, extra string) string {
	return freePortConfig(`
		models: { providers: { openai: { baseUrl: '` + model + `/v1', apiKey: 'k' } } },
		agents: { defaults: { model: { primary: 'openai/m' }, maxConcurrent: 32 } },
		channels: { onebot: { wsUrl: '` + wsURL + `', selfId: 3300000001, reconnect: { minDelayMs: 200, maxDelayMs: 500 } } },
		log: { level: 'debug' },` + extra)
}

// TestImplementationOutageLosesNoReply: 20 mentions in 20 groups, then the
// implementation is unreachable for 3 s while their replies come due, and
// 20 more mentions arrive at QQ while pincer is cut off. Every reply is
// delivered once the link is back (the outbox), and the mentions sent
// during the outage are found by the backfill and answered: nothing lost,
// nothing twice.
func TestImplementationOutageLosesNoReply(t *testing.T) {
	model := llmtest.NewOpenAI(t)
	hold := make(chan struct{})
	model.Script(llmtest.Reply{Text: []string{"收到"}, Hold: hold})
	w := newQQWorld(t)
	link := newLinkProxy(t, strings.TrimPrefix(w.peer.URL, "ws://"))
	p, _ := startServe(t, t.TempDir(), qqConfig(model.URL, link.url(), ""))
	defer p.stop()
	defer func() {
		if t.Failed() {
			t.Logf("pincer's log:\n%s", p.stderr)
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	waitLink(t, ctx, w)
	var ids []int64
	for g := int64(1); g <= 20; g++ {
		if err := w.peer.Push(ctx, w.mention(g, 700000000+g)); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, g)
	}
	waitCalls(t, ctx, model, 20) // every mention is being answered
	link.cut()
	close(hold) // the replies come due while the link is down
	for g := int64(1); g <= 20; g++ {
		w.mention(100+g, 700000000+g) // sent to QQ meanwhile; pincer never sees the event
		ids = append(ids, 100+g)
	}
	time.Sleep(3 * time.Second)
	link.restore()
	back := time.Now()
	w.waitReplies(t, ctx, len(ids))
	waitMetric(t, ctx, p.url, "pincer_outbox_pending 0")
	t.Logf("all replies %v after the link came back", time.Since(back).Round(100*time.Millisecond))
	w.tally(t, ids)
}

// waitLink waits until pincer speaks to the implementation: its first
// action shows the connection is up on both ends.
func waitLink(t *testing.T, ctx context.Context, w *qqWorld) {
	t.Helper()
	if err := w.peer.Connected(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case <-w.peer.Called():
	case <-ctx.Done():
		t.Fatal("pincer never called the implementation")
	}
}

// waitCalls waits until the model server has had n requests.
func waitCalls(t *testing.T, ctx context.Context, model *llmtest.Server, n int) {
	t.Helper()
	for len(model.Requests()) < n {
		select {
		case <-ctx.Done():
			t.Fatalf("%d model calls of %d", len(model.Requests()), n)
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// TestKilledWhileTurnsRunAnswersThemAfterTheRestart: 20 mentions are
// admitted and their model calls are running when pincer is killed with
// SIGKILL; after the restart on the same data directory each is answered
// exactly once.
func TestKilledWhileTurnsRunAnswersThemAfterTheRestart(t *testing.T) {
	model := llmtest.NewOpenAI(t)
	hold := make(chan struct{})
	model.Script(llmtest.Reply{Text: []string{"想", "一想"}, Hold: hold})
	w := newQQWorld(t)
	dir := t.TempDir()
	cfg := qqConfig(model.URL, w.peer.URL, "")
	first, _ := startServe(t, dir, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	waitLink(t, ctx, w)
	var ids []int64
	for g := int64(1); g <= 20; g++ {
		if err := w.peer.Push(ctx, w.mention(g, 700000000+g)); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, g)
	}
	waitCalls(t, ctx, model, 20)
	if err := first.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = first.cmd.Wait()
	close(hold)
	model.Script(llmtest.Reply{Text: []string{"答案"}})

	second, _ := startServe(t, dir, cfg)
	defer second.stop()
	waitLink(t, ctx, w)
	w.waitReplies(t, ctx, len(ids))
	waitMetric(t, ctx, second.url, "pincer_outbox_pending 0")
	w.tally(t, ids)
}

// TestTerminatedWhileRepliesAreWrittenDeliversThem: SIGTERM arrives while
// 20 replies are being written; pincer stops taking messages, lets the
// turns finish, delivers every reply, and only then closes the QQ
// connection and exits cleanly.
func TestTerminatedWhileRepliesAreWrittenDeliversThem(t *testing.T) {
	model := llmtest.NewOpenAI(t)
	hold := make(chan struct{})
	model.Script(llmtest.Reply{Text: []string{"慢慢", "写完"}, Hold: hold})
	w := newQQWorld(t)
	p, _ := startServe(t, t.TempDir(), qqConfig(model.URL, w.peer.URL, ""))
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	waitLink(t, ctx, w)
	var ids []int64
	for g := int64(1); g <= 20; g++ {
		if err := w.peer.Push(ctx, w.mention(g, 700000000+g)); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, g)
	}
	waitCalls(t, ctx, model, 20)
	exited := make(chan error, 1)
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	go func() { exited <- p.cmd.Wait() }()
	time.Sleep(500 * time.Millisecond) // shutdown has begun; the turns still run
	close(hold)
	select {
	case err := <-exited:
		if err != nil {
			t.Errorf("exit: %v\n%s", err, p.stderr)
		}
	case <-ctx.Done():
		t.Fatal("pincer did not exit")
	}
	w.tally(t, ids)
}
