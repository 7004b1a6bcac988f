package onebot

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/pincerbot/pincer/internal/channel"
	"github.com/pincerbot/pincer/internal/channel/onebot/onebottest"
	"github.com/pincerbot/pincer/internal/msg"
	"github.com/pincerbot/pincer/internal/outbox"
)

// numberedSends answers every send with the next message id.
func numberedSends() onebottest.Handler {
	var next atomic.Int64
	return func(action string, _ json.RawMessage) (any, int, string) {
		switch action {
		case "get_login_info":
			return map[string]any{"user_id": 3300000001, "nickname": "bot"}, 0, ""
		case "send_group_msg", "send_private_msg":
			return map[string]any{"message_id": 700 + next.Add(1)}, 0, ""
		}
		return nil, 1404, "unsupported " + action
	}
}

// writeFile writes data to name in a new temporary directory and returns
// its absolute path.
func writeFile(t *testing.T, name string, data []byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// httpAccount is an account that acts over the peer's HTTP API.
func httpAccount(t *testing.T, o AccountOptions) (*Account, *onebottest.Peer) {
	t.Helper()
	p := onebottest.New(t, numberedSends())
	o.HTTPURL = p.HTTPURL
	return NewAccount(o), p
}

var (
	group = msg.Peer{Kind: msg.Group, ID: "700000001"}
	dm    = msg.Peer{Kind: msg.Direct, ID: "10001"}
)

func sendAll(t *testing.T, a *Account, out msg.Outbound) []int {
	t.Helper()
	var parts []int
	if err := a.SendParts(context.Background(), out, 0, func(part int, _ msg.MessageID, _ bool) { parts = append(parts, part) }); err != nil {
		t.Fatal(err)
	}
	return parts
}

// TestMediaOnlyReplyQuotesOnTheImage: a reply made only of an image of a
// local file goes, through a live forward WebSocket, as one message: the
// reply segment quoting the trigger, then an image segment with the
// file:// URI of the path.
func TestMediaOnlyReplyQuotesOnTheImage(t *testing.T) {
	p := onebottest.New(t, numberedSends())
	chart := writeFile(t, "chart.png", []byte("\x89PNG\r\n\x1a\nchart"))
	a := NewAccount(AccountOptions{WSURL: p.URL, ReplyToTrigger: true, Reconnect: Reconnect{Enabled: true, Retries: -1, MinDelay: time.Millisecond, MaxDelay: time.Millisecond}})
	sink := &mediaSink{media: []msg.Media{{Kind: msg.MediaImage, URL: chart}}, done: make(chan error, 1)}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx, sink) }()
	defer func() { cancel(); <-done }()
	if err := p.Connected(ctx); err != nil {
		t.Fatal(err)
	}
	if err := p.Push(ctx, groupEvent(31, 10001, "画个图")); err != nil {
		t.Fatal(err)
	}
	if err := <-sink.done; err != nil {
		t.Fatal(err)
	}
	sent := p.Sent()
	if len(sent) != 1 || sent[0].Action != "send_group_msg" || sent[0].GroupID != 123 {
		t.Fatalf("sent %+v", sent)
	}
	if diff := cmp.Diff([]string{"reply", "image"}, sent[0].Types()); diff != "" {
		t.Fatalf("segments (-want +got):\n%s", diff)
	}
	if got := sent[0].Segments[0].Data["id"]; got != "31" {
		t.Errorf("quotes %q, want the trigger 31", got)
	}
	if got := sent[0].Segments[1].Data["file"]; got != "file://"+chart {
		t.Errorf("image file %q, want file://%s", got, chart)
	}
	if mine, _ := a.SentByBot(context.Background(), msg.Peer{Kind: msg.Group, ID: "700000001"}, "701"); !mine {
		t.Error("the image message's id must be remembered as the bot's")
	}
}

// mediaSink answers every message with media and no text.
type mediaSink struct {
	media []msg.Media
	done  chan error
}

func (s *mediaSink) Dispatch(ctx context.Context, m msg.Message, r channel.Replier) error {
	_, err := r.Deliver(ctx, msg.Outbound{Account: m.Account, Peer: m.Peer, Media: s.media})
	s.done <- err
	return err
}

func TestCaptionGoesFirstWithTheQuote(t *testing.T) {
	a, p := httpAccount(t, AccountOptions{})
	photo := writeFile(t, "photo.JPG", []byte("\xff\xd8\xff photo"))
	parts := sendAll(t, a, msg.Outbound{Peer: group, ReplyTo: "-5", Text: "看这张", Media: []msg.Media{{Kind: msg.MediaFile, URL: photo}}})
	if diff := cmp.Diff([]int{0, 1}, parts); diff != "" {
		t.Errorf("confirmed parts (-want +got):\n%s", diff)
	}
	sent := p.Sent()
	if len(sent) != 2 {
		t.Fatalf("sent %+v", sent)
	}
	if diff := cmp.Diff([][]string{{"reply", "text"}, {"image"}}, [][]string{sent[0].Types(), sent[1].Types()}); diff != "" {
		t.Errorf("the caption goes first, with the quote; the image after it, alone (-want +got):\n%s", diff)
	}
	if sent[0].Segments[0].Data["id"] != "-5" || sent[0].Segments[1].Data["text"] != "看这张" {
		t.Errorf("caption %+v", sent[0].Segments)
	}
	if got := sent[1].Segments[0].Data["file"]; got != "file://"+photo {
		t.Errorf("a file with an image extension goes as an image of its path: %q", got)
	}
}

func TestInlineLocalMedia(t *testing.T) {
	logs := &logLines{}
	a, p := httpAccount(t, AccountOptions{InlineLocalMedia: true, InlineMediaLimit: 64, Logger: logs.logger()})
	img := []byte("\x89PNG\r\n\x1a\nsmall")
	small := writeFile(t, "small.png", img)
	big := writeFile(t, "big.png", []byte(strings.Repeat("x", 65)))
	report := []byte("%PDF-1.7 report")
	pdf := writeFile(t, "report.pdf", report)
	sendAll(t, a, msg.Outbound{Peer: group, Media: []msg.Media{
		{Kind: msg.MediaImage, URL: small},
		{Kind: msg.MediaImage, URL: big},
		{Kind: msg.MediaImage, URL: "https://example.invalid/a.png?sig=1"},
		{Kind: msg.MediaFile, URL: pdf},
	}})
	sent := p.Sent()
	if len(sent) != 3 {
		t.Fatalf("sent %+v", sent)
	}
	want := []string{
		"base64://" + base64.StdEncoding.EncodeToString(img),
		"file://" + big,
		"https://example.invalid/a.png?sig=1",
	}
	for i, w := range want {
		if got := sent[i].Segments[0].Data["file"]; got != w {
			t.Errorf("image %d: file %q, want %q", i, got, w)
		}
	}
	if len(logs.matching("too large to send inline")) != 1 {
		t.Errorf("the file over the limit must be logged once: %q", logs.lines)
	}
	ups := p.Uploads()
	if len(ups) != 1 || ups[0].File != "base64://"+base64.StdEncoding.EncodeToString(report) || ups[0].Name != "report.pdf" || ups[0].GroupID != 700000001 {
		t.Errorf("inline upload %+v", ups)
	}
}

func TestAudioVideoAndURLs(t *testing.T) {
	a, p := httpAccount(t, AccountOptions{})
	voice := writeFile(t, "note.opus", []byte("OggS voice"))
	sendAll(t, a, msg.Outbound{Peer: dm, ReplyTo: "9", Media: []msg.Media{
		{Kind: msg.MediaFile, URL: voice},
		{Kind: msg.MediaAudio, URL: "https://cdn.example.invalid/speech?id=3"},
		{Kind: msg.MediaVideo, URL: "file://" + voice},
	}})
	sent := p.Sent()
	if len(sent) != 2 {
		t.Fatalf("sent %+v", sent)
	}
	got := [][]string{sent[0].Types(), sent[1].Types()}
	if diff := cmp.Diff([][]string{{"record"}, {"record"}}, got); diff != "" {
		t.Errorf("voice goes alone, never quoting (-want +got):\n%s", diff)
	}
	files := []string{sent[0].Segments[0].Data["file"], sent[1].Segments[0].Data["file"]}
	if diff := cmp.Diff([]string{"file://" + voice, "https://cdn.example.invalid/speech?id=3"}, files); diff != "" {
		t.Errorf("files (-want +got):\n%s", diff)
	}
	// A video is uploaded as a file, as the reference sends everything
	// that is neither a picture nor audio.
	if ups := p.Uploads(); len(ups) != 1 || ups[0].Action != "upload_private_file" || ups[0].File != voice {
		t.Errorf("video uploads %+v", ups)
	}
	if sent[0].Action != "send_private_msg" || sent[0].UserID != 10001 {
		t.Errorf("sent to %+v", sent[0])
	}
}

func TestFilesAreUploaded(t *testing.T) {
	a, p := httpAccount(t, AccountOptions{})
	pdf := writeFile(t, "年报 2025.pdf", []byte("%PDF"))
	parts := sendAll(t, a, msg.Outbound{Peer: group, ReplyTo: "77", Media: []msg.Media{{Kind: msg.MediaFile, URL: pdf}}})
	sendAll(t, a, msg.Outbound{Peer: dm, Media: []msg.Media{
		{Kind: msg.MediaFile, URL: pdf, Name: "report.pdf"},
		{URL: "https://files.example.invalid/d/%E6%95%B0%E6%8D%AE.csv?token=x"},
	}})
	if diff := cmp.Diff([]int{0}, parts); diff != "" {
		t.Errorf("an upload is a part (-want +got):\n%s", diff)
	}
	want := []onebottest.Upload{
		{Action: "upload_group_file", GroupID: 700000001, File: pdf, Name: "年报 2025.pdf"},
		{Action: "upload_private_file", UserID: 10001, File: pdf, Name: "report.pdf"},
		{Action: "upload_private_file", UserID: 10001, File: "https://files.example.invalid/d/%E6%95%B0%E6%8D%AE.csv?token=x", Name: "数据.csv"},
	}
	if diff := cmp.Diff(want, p.Uploads()); diff != "" {
		t.Errorf("uploads (-want +got):\n%s", diff)
	}
	if len(p.Sent()) != 0 {
		t.Errorf("files go by upload only; a file cannot quote: %+v", p.Sent())
	}
}

// TestResumedMediaSkipsConfirmedParts: the parts are the text's chunks,
// then the media in order. A payload resumed from a part after the
// chunks sends neither the text nor the media confirmed before it, and
// the quote is not repeated.
func TestResumedMediaSkipsConfirmedParts(t *testing.T) {
	a, p := httpAccount(t, AccountOptions{ChunkLimit: 5})
	img := writeFile(t, "a.png", []byte("png"))
	pdf := writeFile(t, "b.pdf", []byte("pdf"))
	mp3 := writeFile(t, "c.mp3", []byte("mp3"))
	out := msg.Outbound{Peer: group, ReplyTo: "12", Text: "abcd\nefgh", Media: []msg.Media{{URL: img}, {URL: pdf}, {URL: mp3}}}

	p.Refuse("upload_group_file", 100, "group file space is full")
	var parts []int
	ids := map[int]msg.MessageID{}
	err := a.SendParts(context.Background(), out, 0, func(part int, id msg.MessageID, _ bool) { parts = append(parts, part); ids[part] = id })
	if err == nil || !outbox.IsPermanent(err) || !strings.Contains(err.Error(), "b.pdf") {
		t.Fatalf("a refused upload must be permanent and named: %v", err)
	}
	// The refused upload is passed over: the voice note after it still
	// goes out.
	if diff := cmp.Diff([]int{0, 1, 2, 3, 4}, parts); diff != "" {
		t.Errorf("confirmed parts (-want +got):\n%s", diff)
	}
	if ids[0] != "701" || ids[2] != "703" {
		t.Errorf("ids %v", ids)
	}

	p.Refuse("upload_group_file", 0, "")
	parts = nil
	if err := a.SendParts(context.Background(), out, 3, func(part int, _ msg.MessageID, _ bool) { parts = append(parts, part) }); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]int{3, 4}, parts); diff != "" {
		t.Errorf("resumed parts (-want +got):\n%s", diff)
	}
	var types [][]string
	for _, m := range p.Sent() {
		types = append(types, m.Types())
	}
	if diff := cmp.Diff([][]string{{"reply", "text"}, {"text"}, {"image"}, {"record"}, {"record"}}, types); diff != "" {
		t.Errorf("messages sent over both attempts (-want +got):\n%s", diff)
	}
	if ups := p.Uploads(); len(ups) != 2 || ups[1].File != pdf {
		t.Errorf("uploads %+v", ups)
	}
}

func TestMissingMediaFileIsPermanent(t *testing.T) {
	a, p := httpAccount(t, AccountOptions{})
	missing := filepath.Join(t.TempDir(), "gone.png")
	var parts []int
	err := a.SendParts(context.Background(), msg.Outbound{Peer: group, Text: "图在这", Media: []msg.Media{{Kind: msg.MediaImage, URL: missing}}}, 0,
		func(part int, _ msg.MessageID, _ bool) { parts = append(parts, part) })
	if err == nil || !outbox.IsPermanent(err) || !strings.Contains(err.Error(), missing) {
		t.Fatalf("a missing file must be a permanent error naming it: %v", err)
	}
	if diff := cmp.Diff([]int{0, 1}, parts); diff != "" {
		t.Errorf("the caption went before, the missing file was passed over (-want +got):\n%s", diff)
	}
	for _, bad := range []string{"relative/x.png", "ftp://host/x.png", t.TempDir()} {
		err := a.SendParts(context.Background(), msg.Outbound{Peer: group, Media: []msg.Media{{URL: bad}}}, 0, nil)
		if !outbox.IsPermanent(err) {
			t.Errorf("media at %q: %v", bad, err)
		}
	}
	if n := len(p.Sent()); n != 1 {
		t.Errorf("%d messages sent, want the caption only", n)
	}
}

func TestMediaSegmentType(t *testing.T) {
	for _, c := range []struct {
		m    msg.Media
		want string
	}{
		{msg.Media{Kind: msg.MediaImage, URL: "/x/y.bin"}, "image"},
		{msg.Media{Kind: msg.MediaAudio, URL: "/x/y"}, "record"},
		{msg.Media{Kind: msg.MediaVideo, URL: "/x/y.mp4"}, ""},
		{msg.Media{Kind: msg.MediaVideo, URL: "/x/y.png"}, ""},
		{msg.Media{Kind: msg.MediaFile, URL: "/x/y.HEIC"}, "image"},
		{msg.Media{URL: "https://h/p/y.webp?x=1.pdf"}, "image"},
		{msg.Media{URL: "https://h/p/download?id=1", Name: "voice.silk"}, "record"},
		{msg.Media{URL: "file:///x/y.flac"}, "record"},
		{msg.Media{URL: "/x/y.mp4"}, ""},
		{msg.Media{URL: "/x/y.pdf"}, ""},
		{msg.Media{URL: "/x/noext"}, ""},
	} {
		if got := mediaSegmentType(c.m); got != c.want {
			t.Errorf("%+v: %q, want %q", c.m, got, c.want)
		}
	}
}

func TestFileURI(t *testing.T) {
	for path, want := range map[string]string{
		"/tmp/a.png":         "file:///tmp/a.png",
		"/tmp/图 表.png":       "file:///tmp/图 表.png",
		"/tmp/100%#1?.png":   "file:///tmp/100%25%231%3F.png",
		"/tmp/line\nbreak.x": "file:///tmp/line%0Abreak.x",
	} {
		if got := fileURI(path); got != want {
			t.Errorf("fileURI(%q) = %q, want %q", path, got, want)
		}
	}
}
