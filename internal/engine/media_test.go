package engine

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pincerbot/pincer/internal/llm"
	"github.com/pincerbot/pincer/internal/msg"
	"github.com/pincerbot/pincer/internal/store"
)

// TestAttachKeepsToTheRoots: a reply's media lines become its media when
// they name files under the allowed roots (a relative path from the
// first) or URLs; anything else, a symlink out of a root included, is
// named in the text instead.
func TestAttachKeepsToTheRoots(t *testing.T) {
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	outside := t.TempDir()
	write := func(p string) {
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(root, "out", "chart.png"))
	write(filepath.Join(outside, "secret.txt"))
	if err := os.Symlink(filepath.Join(outside, "secret.txt"), filepath.Join(root, "link.txt")); err != nil {
		t.Fatal(err)
	}
	e := &Engine{opts: Options{MediaRoots: []string{root}, MediaURL: func(_ context.Context, raw string) error {
		if strings.Contains(raw, "10.0.0.1") {
			return errors.New("10.0.0.1 is not public")
		}
		return nil
	}}}
	p := msg.Outbound{Text: strings.Join([]string{
		"here",
		"MEDIA: out/chart.png",
		"MEDIA: https://example.com/a/b.mp3?sig=1",
		"MEDIA: " + filepath.Join(outside, "secret.txt"),
		"MEDIA: link.txt",
		"MEDIA: " + root + "/../" + filepath.Base(root) + "/missing.pdf",
		"MEDIA: ftp://example.com/x.zip",
		"MEDIA: http://10.0.0.1/router.png",
	}, "\n")}
	e.attach(context.Background(), slog.New(slog.DiscardHandler), msg.Message{}, &p)
	want := []msg.Media{
		{Kind: msg.MediaImage, URL: filepath.Join(root, "out", "chart.png"), Name: "chart.png"},
		{Kind: msg.MediaAudio, URL: "https://example.com/a/b.mp3?sig=1", Name: "b.mp3"},
	}
	if len(p.Media) != len(want) || p.Media[0] != want[0] || p.Media[1] != want[1] {
		t.Errorf("media = %+v, want %+v", p.Media, want)
	}
	for _, s := range []string{"here", "未能发送 secret.txt：不在可发送的目录里", "未能发送 link.txt：不在可发送的目录里", "未能发送 missing.pdf：文件不存在", "未能发送 x.zip：只能发送本地文件或 http(s) 链接", "未能发送 router.png：链接指向内网地址）"} {
		if !strings.Contains(p.Text, s) {
			t.Errorf("text %q lacks %q", p.Text, s)
		}
	}
	if strings.Contains(p.Text, "MEDIA:") {
		t.Errorf("a media line is left in the text: %q", p.Text)
	}
	none := &Engine{}
	q := msg.Outbound{Text: "MEDIA: /etc/hostname"}
	none.attach(context.Background(), slog.New(slog.DiscardHandler), msg.Message{}, &q)
	if len(q.Media) != 0 || !strings.Contains(q.Text, "不在可发送的目录里") {
		t.Errorf("without roots no local file is sent: %+v", q)
	}
}

// fakeReader records what it was asked and answers with a note and an
// image.
type fakeReader struct {
	seen  []MsgContext
	sees  []bool
	image string
}

func (f *fakeReader) Read(_ context.Context, mc MsgContext, sees bool) MediaRead {
	f.seen, f.sees = append(f.seen, mc), append(f.sees, sees)
	return MediaRead{Notes: []string{"[图片1: media/inbound/a.png]"}, Images: []string{f.image}, Summary: "1 attachment"}
}

// TestTurnReadsMediaBeforeTheAgent: a message with an attachment is read
// before the model call, with the primary model's ability to see images;
// the notes join the user's text and the images are kept with the turn.
// A message without media or links is not read at all.
func TestTurnReadsMediaBeforeTheAgent(t *testing.T) {
	p := &echoProvider{}
	e, st := newEngine(t, p)
	r := &fakeReader{image: "/ws/media/inbound/a.png"}
	e.opts.Media = r
	e.opts.SeesImages = func(ref llm.Ref) bool { return ref.Model == "m" }
	m := message("1", "b1", "看图", t0)
	m.Segments = append(m.Segments, msg.Segment{Kind: msg.SegImage, URL: "https://img.test/a.png"})
	if err := e.Dispatch(context.Background(), m, &recorder{}); err != nil {
		t.Fatal(err)
	}
	if len(r.seen) != 1 || len(r.seen[0].Media) != 1 || r.seen[0].Media[0].Segment.URL != "https://img.test/a.png" || !r.sees[0] {
		t.Fatalf("reader asked %+v (sees %v)", r.seen, r.sees)
	}
	if last := p.reqs[0].Messages[len(p.reqs[0].Messages)-1].Text; !strings.HasSuffix(last, "看图\n[图片1: media/inbound/a.png]") {
		t.Errorf("user message %q", last)
	}
	tr, err := st.Transcript(context.Background(), "agent:main:webchat:direct:b1")
	if err != nil {
		t.Fatal(err)
	}
	if len(tr) == 0 || tr[0].Role != store.RoleUser || len(tr[0].Images) != 1 || tr[0].Images[0] != r.image {
		t.Errorf("transcript %+v", tr)
	}
	if err := e.Dispatch(context.Background(), message("2", "b1", "plain text", t0), &recorder{}); err != nil {
		t.Fatal(err)
	}
	if len(r.seen) != 1 {
		t.Errorf("a message without media or links was read: %d reads", len(r.seen))
	}
}

// TestInTranscriptFindsTheWholeBody: a resumed message counts as stored
// only when a trailing user turn ends with its body, or has only media
// notes after it; a longer message that starts with it does not count.
func TestInTranscriptFindsTheWholeBody(t *testing.T) {
	tr := []store.Turn{
		{Role: store.RoleAssistant, Text: "好"},
		{Role: store.RoleUser, Text: "[onebot 张三 Tue 2026-12-01 09:00 CST] 好的"},
		{Role: store.RoleUser, Text: "[onebot 李四 Tue 2026-12-01 09:01 CST] 看图\n[图片1: onebot/default/1/media/inbound/a.png]"},
	}
	for body, want := range map[string]bool{
		"好的":   true,
		"好":    false,
		"看图":   true,
		"看":    false,
		"图":    false,
		"好的\n": false,
	} {
		if got := inTranscript(tr, body); got != want {
			t.Errorf("inTranscript(%q) = %v, want %v", body, got, want)
		}
	}
}

// TestAttachKeepsToTheChat: a chat sends files from its own folder and
// the workspace outside the chats' folders (a relative path is taken from
// the workspace), never another chat's.
func TestAttachKeepsToTheChat(t *testing.T) {
	ws, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	dir := func(m msg.Message) string { return filepath.Join(ws, "onebot", "default", m.Peer.ID) }
	for _, p := range []string{"onebot/default/1/media/inbound/a.png", "onebot/default/2/media/inbound/b.png", "assets/logo.png"} {
		full := filepath.Join(ws, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	e := &Engine{opts: Options{ChatDir: dir, Workspace: ws, ChatsDirs: []string{filepath.Join(ws, "onebot"), filepath.Join(ws, "feishu")}}}
	in1 := msg.Message{Peer: msg.Peer{Kind: msg.Group, ID: "1"}}
	p := msg.Outbound{Text: "MEDIA: onebot/default/1/media/inbound/a.png\nMEDIA: onebot/default/2/media/inbound/b.png\nMEDIA: assets/logo.png"}
	e.attach(context.Background(), slog.New(slog.DiscardHandler), in1, &p)
	if len(p.Media) != 2 || p.Media[0].Name != "a.png" || p.Media[1].Name != "logo.png" || !strings.Contains(p.Text, "未能发送 b.png：不在可发送的目录里") {
		t.Errorf("chat 1 sends its own file and the workspace's, not chat 2's: %+v", p)
	}
}
