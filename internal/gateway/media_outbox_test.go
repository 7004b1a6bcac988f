package gateway

import (
	"context"
	"database/sql"
	"encoding/json"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pincerbot/pincer/internal/channel/onebot"
	"github.com/pincerbot/pincer/internal/channel/onebot/onebottest"
	"github.com/pincerbot/pincer/internal/config"
	"github.com/pincerbot/pincer/internal/llm/llmtest"
	"github.com/pincerbot/pincer/internal/msg"
	"github.com/pincerbot/pincer/internal/store"
	"github.com/pincerbot/pincer/internal/store/sqlite"
)

// mediaReply is a reply of a caption, a picture and a PDF, as the model
// writes it, and the files it names.
type mediaReply struct {
	dir, png, pdf string
}

func newMediaReply(t *testing.T) mediaReply {
	t.Helper()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	m := mediaReply{dir: dir, png: filepath.Join(dir, "chart.png"), pdf: filepath.Join(dir, "report.pdf")}
	if err := os.WriteFile(m.png, pngBytes(t), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(m.pdf, []byte("%PDF-1.4 …"), 0o600); err != nil {
		t.Fatal(err)
	}
	return m
}

// mediaCaption is the text of the reply.
const mediaCaption = "图表和报告如下"

// script makes the model answer with the caption and both files.
func (m mediaReply) script(fake *llmtest.Server) {
	fake.Script(llmtest.Reply{Text: []string{mediaCaption + "\nMEDIA: " + m.png + "\nMEDIA: " + m.pdf}})
}

// config is a gateway configuration whose model is fake and whose replies
// may send the reply's files.
func (m mediaReply) config(fake *llmtest.Server) config.Config {
	cfg := withOpenAI(fake.URL)
	cfg.Media.SendFrom = []string{m.dir}
	cfg.Channels.OneBot.SelfID = "3300000001"
	// A dropped connection is back within 100–200 ms.
	cfg.Channels.OneBot.Reconnect.MinDelayMs = 200
	return cfg
}

// qqChat is what a group received: the messages the implementation
// accepted (not those it was handed on a connection it then lost).
type qqChat struct {
	mu       sync.Mutex
	captions int
	images   []string
	others   []string
}

// receive records an accepted send.
func (c *qqChat) receive(s qqSend) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if img, ok := imageOf(s); ok {
		c.images = append(c.images, img)
		return
	}
	if txt := sentText(s); strings.Contains(txt, mediaCaption) {
		c.captions++
		return
	}
	c.others = append(c.others, sentText(s))
}

func (c *qqChat) counts() (captions int, images, others []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.captions, append([]string(nil), c.images...), append([]string(nil), c.others...)
}

// total is the number of messages the group received so far.
func (c *qqChat) total() int {
	captions, images, others := c.counts()
	return captions + len(images) + len(others)
}

// imageOf is the file of a send's image segment, if it has one.
func imageOf(s qqSend) (string, bool) {
	for _, m := range s.params.Message {
		if m.Type == "image" {
			f, _ := m.Data["file"].(string)
			return f, true
		}
	}
	return "", false
}

// decodeSend reads the params of a send action.
func decodeSend(action string, params json.RawMessage) (qqSend, bool) {
	var s qqSend
	s.action = action
	return s, json.Unmarshal(params, &s.params) == nil
}

// attempts counts the caption and picture messages the implementation
// was handed, lost ones included.
func attempts(p *onebottest.Peer) (captions, images int) {
	for _, m := range p.Sent() {
		for _, sg := range m.Segments {
			switch {
			case sg.Type == "image":
				images++
			case sg.Type == "text" && strings.Contains(sg.Data["text"], mediaCaption):
				captions++
			}
		}
	}
	return captions, images
}

// outboxRow is a reply's row in the outbox table.
type outboxRow struct {
	id, state, lastError string
	sent, attempts       int
}

// outboxRows reads the outbox table of the store at path, which a gateway
// may be using.
func outboxRows(t *testing.T, path string) []outboxRow {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+(&url.URL{Path: path}).EscapedPath()+"?_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.Query(`SELECT id, state, last_error, sent, attempts FROM outbox ORDER BY created_at, rowid`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []outboxRow
	for rows.Next() {
		var r outboxRow
		if err := rows.Scan(&r.id, &r.state, &r.lastError, &r.sent, &r.attempts); err != nil {
			t.Fatal(err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// startMediaQQ runs a gateway on cfg against a QQ implementation that
// answers sends with h (which may see the peer) after get_login_info,
// and waits for the connection.
func startMediaQQ(t *testing.T, cfg config.Config, fake *llmtest.Server, h func(p *onebottest.Peer, action string, params json.RawMessage) (any, int, string)) *qqRig {
	t.Helper()
	var self atomic.Pointer[onebottest.Peer]
	p := onebottest.New(t, func(action string, params json.RawMessage) (any, int, string) {
		if action == "get_login_info" {
			return map[string]any{"user_id": botQQ, "nickname": "bot"}, 0, ""
		}
		return h(self.Load(), action, params)
	})
	self.Store(p)
	cfg.Channels.OneBot.WSURL = p.URL
	r := &qqRig{peer: p, model: fake, gw: startGateway(t, cfg)}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	r.ctx = ctx
	if err := p.Connected(ctx); err != nil {
		t.Fatal(err)
	}
	return r
}

// TestQQReplyMediaSurviveAConnectionBlink: the implementation loses its
// connection as it is handed the reply's picture (the picture never goes
// out); once the account is back, the outbox goes on from the picture, so
// the group gets the caption, the picture and the PDF each exactly once.
func TestQQReplyMediaSurviveAConnectionBlink(t *testing.T) {
	files := newMediaReply(t)
	fake := llmtest.NewOpenAI(t)
	files.script(fake)
	chat := &qqChat{}
	var dropped atomic.Bool
	r := startMediaQQ(t, files.config(fake), fake, func(p *onebottest.Peer, action string, params json.RawMessage) (any, int, string) {
		if action != "send_group_msg" {
			return nil, 0, ""
		}
		s, ok := decodeSend(action, params)
		if !ok {
			return nil, 100, "bad params"
		}
		if _, img := imageOf(s); img && !dropped.Swap(true) {
			p.DropAll() // the blink: this send is lost with its connection
			return nil, 0, ""
		}
		chat.receive(s)
		return map[string]any{"message_id": 9300 + chat.total()}, 0, ""
	})
	r.push(t, qqGroupEvent(41, atBot(), text(" 发我图表和报告")))

	r.metric(t, "pincer_outbox_sent_total", 1)
	if !dropped.Load() {
		t.Fatal("the picture never reached the implementation")
	}
	captions, images, others := chat.counts()
	if captions != 1 || len(images) != 1 || images[0] != "file://"+files.png || len(others) != 0 {
		t.Errorf("the group got %d captions, pictures %q and other messages %q; want one caption and file://%s once", captions, images, others, files.png)
	}
	ups := r.peer.Uploads()
	if len(ups) != 1 || ups[0].Action != "upload_group_file" || ups[0].File != files.pdf || ups[0].Name != "report.pdf" {
		t.Errorf("uploads %+v, want report.pdf once", ups)
	}
	// The picture was handed over twice (once lost), the caption once: the
	// retry resumed at the picture.
	if c, i := attempts(r.peer); c != 1 || i != 2 {
		t.Errorf("the implementation was handed %d captions and %d pictures, want 1 and 2", c, i)
	}
	r.metric(t, "pincer_outbox_retries_total", 1)
	rows := outboxRows(t, filepath.Join(r.gw.dataDir, "pincer.db"))
	if len(rows) != 1 || rows[0].state != string(store.OutboxSent) || rows[0].sent != 3 || rows[0].attempts != 2 {
		t.Errorf("outbox rows %+v, want one reply sent in 3 parts over 2 attempts", rows)
	}
	if n := len(fake.Requests()); n != 1 {
		t.Errorf("%d model requests, want 1", n)
	}
}

// TestQQReplyMediaRefusedUploadIsNotRetried: the implementation refuses
// the PDF's upload for good (a non-zero retcode); the caption and the
// picture are not sent again, the upload is tried once, and the reply is
// marked failed in the store and counted as refused.
func TestQQReplyMediaRefusedUploadIsNotRetried(t *testing.T) {
	files := newMediaReply(t)
	fake := llmtest.NewOpenAI(t)
	files.script(fake)
	chat := &qqChat{}
	r := startMediaQQ(t, files.config(fake), fake, func(_ *onebottest.Peer, action string, params json.RawMessage) (any, int, string) {
		if action != "send_group_msg" {
			return nil, 0, ""
		}
		s, ok := decodeSend(action, params)
		if !ok {
			return nil, 100, "bad params"
		}
		chat.receive(s)
		return map[string]any{"message_id": 9400 + chat.total()}, 0, ""
	})
	r.peer.Refuse("upload_group_file", 100, "group file space is full")
	r.push(t, qqGroupEvent(42, atBot(), text(" 发我图表和报告")))

	r.metric(t, "pincer_outbox_failed_total", 1)
	captions, images, others := chat.counts()
	if captions != 1 || len(images) != 1 || len(others) != 0 {
		t.Errorf("the group got %d captions, pictures %q and other messages %q; want one caption and one picture", captions, images, others)
	}
	if ups := r.peer.Uploads(); len(ups) != 1 || ups[0].File != files.pdf {
		t.Errorf("uploads %+v, want the PDF tried once", ups)
	}
	rows := outboxRows(t, filepath.Join(r.gw.dataDir, "pincer.db"))
	// All three parts were gone through (the refused PDF passed over), and
	// the reply failed for good, naming what was not sent.
	if len(rows) != 1 || rows[0].state != string(store.OutboxFailed) || rows[0].sent != 3 || rows[0].attempts != 1 ||
		!strings.Contains(rows[0].lastError, "group file space is full") || !strings.Contains(rows[0].lastError, "report.pdf") {
		t.Errorf("outbox rows %+v, want one reply failed with its 3 parts gone through, naming the PDF and the refusal", rows)
	}
	r.metric(t, "pincer_outbox_pending", 0)
}

// TestQQReplyMediaResumeAfterARestart: the gateway stops while the
// reply's picture keeps being lost (its caption went out); the next start,
// on the same store, sends the picture and the PDF once each and not the
// caption again, without asking the model anew.
func TestQQReplyMediaResumeAfterARestart(t *testing.T) {
	files := newMediaReply(t)
	fake := llmtest.NewOpenAI(t)
	files.script(fake)
	path := filepath.Join(t.TempDir(), "pincer.db")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	var self atomic.Pointer[onebottest.Peer]
	lost := make(chan struct{})
	var lostOnce sync.Once
	before := onebottest.New(t, func(action string, params json.RawMessage) (any, int, string) {
		switch action {
		case "get_login_info":
			return map[string]any{"user_id": botQQ, "nickname": "bot"}, 0, ""
		case "send_group_msg":
			s, _ := decodeSend(action, params)
			if _, img := imageOf(s); img {
				self.Load().DropAll() // every picture is lost with its connection
				lostOnce.Do(func() { close(lost) })
				return nil, 0, ""
			}
			return map[string]any{"message_id": 9501}, 0, ""
		}
		return nil, 0, ""
	})
	self.Store(before)
	cfg := files.config(fake)
	cfg.Gateway.ShutdownTimeoutMs = 300
	cfg.Channels.OneBot.WSURL = before.URL
	stop := runGatewayAt(t, cfg, path)
	if err := before.Connected(ctx); err != nil {
		t.Fatal(err)
	}
	if err := before.Push(ctx, qqGroupEvent(43, atBot(), text(" 发我图表和报告"))); err != nil {
		t.Fatal(err)
	}
	select {
	case <-lost:
	case <-ctx.Done():
		t.Fatal("the picture never reached the implementation")
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if c, _ := attempts(before); c != 1 {
		t.Fatalf("the first run sent %d captions, want 1", c)
	}
	db, err := sqlite.Open(ctx, path, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	pending, err := db.PendingOutbox(ctx, onebot.ChannelID, msg.DefaultAccount)
	if cerr := db.Close(); cerr != nil {
		t.Fatal(cerr)
	}
	if err != nil {
		t.Fatal(err)
	}
	if len(pending) != 1 || pending[0].Sent != 1 || len(pending[0].Out.Media) != 2 {
		t.Fatalf("pending after the stop: %+v, want the reply with its caption confirmed and both files", pending)
	}

	chat := &qqChat{}
	after := onebottest.New(t, func(action string, params json.RawMessage) (any, int, string) {
		switch action {
		case "get_login_info":
			return map[string]any{"user_id": botQQ, "nickname": "bot"}, 0, ""
		case "send_group_msg":
			s, _ := decodeSend(action, params)
			chat.receive(s)
			return map[string]any{"message_id": 9502}, 0, ""
		}
		return nil, 0, ""
	})
	cfg.Channels.OneBot.WSURL = after.URL
	runGatewayAt(t, cfg, path)
	if err := after.Connected(ctx); err != nil {
		t.Fatal(err)
	}
	for {
		rows := outboxRows(t, path)
		if len(rows) == 1 && rows[0].state != string(store.OutboxPending) {
			if rows[0].state != string(store.OutboxSent) || rows[0].sent != 3 {
				t.Fatalf("outbox rows %+v, want the reply sent in 3 parts", rows)
			}
			break
		}
		select {
		case <-after.Called():
		case <-time.After(50 * time.Millisecond):
		case <-ctx.Done():
			t.Fatalf("the reply was never delivered after the restart: %+v", rows)
		}
	}
	captions, images, others := chat.counts()
	if captions != 0 || len(images) != 1 || images[0] != "file://"+files.png || len(others) != 0 {
		t.Errorf("after the restart the group got %d captions, pictures %q and other messages %q; want the picture alone", captions, images, others)
	}
	if ups := after.Uploads(); len(ups) != 1 || ups[0].File != files.pdf {
		t.Errorf("uploads after the restart %+v, want the PDF once", ups)
	}
	if ups := before.Uploads(); len(ups) != 0 {
		t.Errorf("uploads before the restart %+v, want none", ups)
	}
	if n := len(fake.Requests()); n != 1 {
		t.Errorf("%d model requests, want 1", n)
	}
}
