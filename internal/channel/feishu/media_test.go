package feishu

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/pincerbot/pincer/internal/channel"
	"github.com/pincerbot/pincer/internal/channel/feishu/feishusim"
	"github.com/pincerbot/pincer/internal/msg"
	"github.com/pincerbot/pincer/internal/outbox"
)

// pngBytes is the start of a PNG: enough for the platform to tell.
var pngBytes = []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR fake image")

// writeFile writes data to name in a new temporary directory and returns
// its path.
func writeFile(t *testing.T, name string, data []byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	must(t, os.WriteFile(p, data, 0o600))
	return p
}

// sparseFile makes a file of size bytes that takes no room on disk.
func sparseFile(t *testing.T, name string, size int64) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	f, err := os.Create(p)
	must(t, err)
	must(t, f.Truncate(size))
	must(t, f.Close())
	return p
}

// contentKey reads one key of a sent message's content.
func contentKey(t *testing.T, s feishusim.SentMessage, key string) string {
	t.Helper()
	var c map[string]string
	must(t, json.Unmarshal([]byte(s.Content), &c))
	return c[key]
}

// TestSendImagePath: a local image is uploaded as an image and shown in
// an image message after the caption, each part under its own uuid.
func TestSendImagePath(t *testing.T) {
	r := newRig(t, nil)
	path := writeFile(t, "chart.png", pngBytes)
	out := msg.Outbound{ID: "turn#img", Peer: group, Text: "本周的图表", Media: []msg.Media{{Kind: msg.MediaImage, URL: path}}}
	ids, err := send(t, r.a, out)
	must(t, err)
	sent, ups := r.sim.Sent(), r.sim.Uploads()
	if len(ids) != 2 || len(sent) != 2 || len(ups) != 1 {
		t.Fatalf("%d ids, %d sent, %d uploads", len(ids), len(sent), len(ups))
	}
	if sent[0].MsgType != "text" || sentText(t, sent[0]) != "本周的图表" {
		t.Errorf("caption %s %s", sent[0].MsgType, sent[0].Content)
	}
	up := ups[0]
	if up.Kind != feishusim.UploadImage || up.ImageType != "message" || up.PartName != "chart.png" || !bytes.Equal(up.Data, pngBytes) {
		t.Errorf("upload %+v", up)
	}
	if sent[1].MsgType != "image" || contentKey(t, sent[1], "image_key") != up.Key || sent[1].Key != up.Key {
		t.Errorf("image message %+v", sent[1])
	}
	for i, s := range sent {
		if s.UUID != partUUID(out.ID, i) || string(ids[i]) != s.MessageID {
			t.Errorf("part %d: uuid %q, id %s of %s", i, s.UUID, ids[i], s.MessageID)
		}
	}
	if strings.Contains(sent[0].Content, "[image") {
		t.Errorf("the caption names the media: %s", sent[0].Content)
	}
}

// TestSendPDFReply: a PDF (by file:// URI) is uploaded as a pdf file and
// shown in a file message; with the caption it replies to the trigger.
func TestSendPDFReply(t *testing.T) {
	r := newRig(t, nil)
	trigger, err := r.sim.AddMessage(feishusim.Message{ChatID: groupChat, SenderID: userA, Content: `{"text":"报告呢"}`})
	must(t, err)
	path := writeFile(t, "q3 report.pdf", []byte("%PDF-1.7 report"))
	out := msg.Outbound{ID: "turn#pdf", Peer: group, ReplyTo: msg.MessageID(trigger), Text: "见附件",
		Media: []msg.Media{{Kind: msg.MediaFile, URL: "file://" + filepath.ToSlash(path)}}}
	_, err = send(t, r.a, out)
	must(t, err)
	sent, ups := r.sim.Sent(), r.sim.Uploads()
	if len(sent) != 2 || len(ups) != 1 {
		t.Fatalf("%d sent, %d uploads", len(sent), len(ups))
	}
	up := ups[0]
	if up.Kind != feishusim.UploadFile || up.FileType != "pdf" || up.FileName != "q3 report.pdf" || string(up.Data) != "%PDF-1.7 report" {
		t.Errorf("upload %+v", up)
	}
	if sent[0].MsgType != "text" || sent[1].MsgType != "file" || contentKey(t, sent[1], "file_key") != up.Key {
		t.Errorf("sent %s then %s %s", sent[0].MsgType, sent[1].MsgType, sent[1].Content)
	}
	for _, s := range sent {
		if s.ReplyTo != trigger {
			t.Errorf("%s is not a reply to the trigger: %+v", s.MsgType, s)
		}
	}
}

// TestSendMediaOnly: a reply with media and no text is one message, the
// reply to the trigger.
func TestSendMediaOnly(t *testing.T) {
	r := newRig(t, nil)
	r.run()
	m := r.take(feishusim.Message{ChatID: topicChat, SenderID: userA, Content: `{"text":"@_user_1 画个图"}`,
		Mentions: []feishusim.Mention{{Key: "@_user_1", ID: botID, Name: botName}}})
	rep := r.a.ReplierFor(m)
	id, err := rep.Deliver(context.Background(), msg.Outbound{ID: "turn#only", Peer: m.Peer,
		Media: []msg.Media{{Kind: msg.MediaImage, URL: writeFile(t, "a.webp", []byte("RIFF\x00\x00\x00\x00WEBPVP8 "))}}})
	must(t, err)
	sent := r.sim.Sent()
	if len(sent) != 1 || sent[0].MsgType != "image" || sent[0].ReplyTo != string(m.ID) || string(id) != sent[0].MessageID {
		t.Fatalf("sent %+v (id %s)", sent, id)
	}
	if got, _ := r.sim.Message(sent[0].MessageID); got.ThreadID == "" {
		t.Error("the media reply did not land in the topic")
	}
}

// TestSendMediaResume: when the upload fails after the caption was
// confirmed, the delivery resumed from the media part does not post the
// caption again.
func TestSendMediaResume(t *testing.T) {
	r := newRig(t, nil)
	var uploads atomic.Int32
	r.setIntercept(func(w http.ResponseWriter, req *http.Request) bool {
		if req.URL.Path == feishusim.PathImages && uploads.Add(1) == 1 {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusServiceUnavailable)
			w.Write([]byte(`{"code":1,"msg":"upstream failed"}`))
			return true
		}
		return false
	})
	out := msg.Outbound{ID: "turn#resume", Peer: group, Text: "图来了", Media: []msg.Media{{URL: writeFile(t, "x.jpg", []byte("\xff\xd8\xff jpeg"))}}}
	confirmed := map[int]msg.MessageID{}
	err := r.a.SendParts(context.Background(), out, 0, func(p int, id msg.MessageID, _ bool) { confirmed[p] = id })
	if err == nil || outbox.IsPermanent(err) || len(confirmed) != 1 {
		t.Fatalf("a failed upload: %v (permanent %v), confirmed %v", err, outbox.IsPermanent(err), confirmed)
	}
	must(t, r.a.SendParts(context.Background(), out, 1, func(p int, id msg.MessageID, _ bool) { confirmed[p] = id }))
	sent := r.sim.Sent()
	if len(sent) != 2 || sent[0].MsgType != "text" || sent[1].MsgType != "image" || len(confirmed) != 2 {
		t.Fatalf("sent %+v, confirmed %v", sent, confirmed)
	}
	if sent[1].UUID != partUUID(out.ID, 1) || string(confirmed[1]) != sent[1].MessageID {
		t.Errorf("media part uuid %q, confirmed %s", sent[1].UUID, confirmed[1])
	}
}

// TestSendMediaRefused: media over the platform's limits, missing, or
// given by a relative path is a permanent error naming it, after the
// caption, and nothing is uploaded.
func TestSendMediaRefused(t *testing.T) {
	r := newRig(t, nil)
	cases := []struct {
		media msg.Media
		want  string
	}{
		{msg.Media{Kind: msg.MediaImage, URL: sparseFile(t, "huge.png", MaxImageUpload+1)}, "huge.png"},
		{msg.Media{Kind: msg.MediaFile, URL: sparseFile(t, "huge.zip", MaxFileUpload+1), Name: "归档.zip"}, "归档.zip"},
		{msg.Media{Kind: msg.MediaFile, URL: filepath.Join(t.TempDir(), "missing.pdf")}, "missing.pdf"},
		{msg.Media{Kind: msg.MediaFile, URL: "relative/path.pdf"}, "relative/path.pdf"},
		{msg.Media{Kind: msg.MediaFile, URL: writeFile(t, "empty.txt", nil)}, "empty.txt"},
	}
	for i, c := range cases {
		before := len(r.sim.Sent())
		_, err := send(t, r.a, msg.Outbound{ID: "turn#refused" + string(rune('a'+i)), Peer: group, Text: "附件", Media: []msg.Media{c.media}})
		if err == nil || !outbox.IsPermanent(err) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v", c.want, err)
		}
		if n := len(r.sim.Sent()) - before; n != 1 {
			t.Errorf("%s: %d messages sent, want the caption", c.want, n)
		}
	}
	if n := len(r.sim.Uploads()); n != 0 || len(r.sim.Calls(feishusim.PathImages))+len(r.sim.Calls(feishusim.PathFiles)) != 0 {
		t.Errorf("%d uploads", n)
	}
}

// TestSendMediaRefusedGoesOn: a medium refused for good is passed over,
// the one after it is still sent, and the payload fails naming it.
func TestSendMediaRefusedGoesOn(t *testing.T) {
	r := newRig(t, nil)
	img := writeFile(t, "ok.png", pngBytes)
	_, err := send(t, r.a, msg.Outbound{ID: "turn#goes-on", Peer: group, Text: "两个附件", Media: []msg.Media{
		{Kind: msg.MediaFile, URL: filepath.Join(t.TempDir(), "missing.pdf")},
		{Kind: msg.MediaImage, URL: img},
	}})
	if err == nil || !outbox.IsPermanent(err) || !strings.Contains(err.Error(), "missing.pdf") {
		t.Fatalf("err %v", err)
	}
	sent := r.sim.Sent()
	if len(sent) != 2 || sent[0].MsgType != "text" || sent[1].MsgType != "image" {
		t.Errorf("sent %+v, want the caption and the picture", sent)
	}
}

// fakeFetch is an Options.Fetch that serves blobs by URL and records the
// calls.
type fakeFetch struct {
	mu    sync.Mutex
	blobs map[string]channel.Blob
	errs  map[string]error
	calls []string
	limit []int64
}

func (f *fakeFetch) fetch(_ context.Context, url string, limit int64) (channel.Blob, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls, f.limit = append(f.calls, url), append(f.limit, limit)
	if err := f.errs[url]; err != nil {
		return channel.Blob{}, err
	}
	return f.blobs[url], nil
}

// TestSendMediaURL: http(s) media comes through the injected fetcher,
// with the limit of its kind; an image is told by its content type when
// nothing else says, and a fetch over the limit is a permanent error.
func TestSendMediaURL(t *testing.T) {
	ff := &fakeFetch{
		blobs: map[string]channel.Blob{
			"https://cdn.example.com/f/q3.pdf?sig=secret": {Data: []byte("%PDF-1.4"), MIME: "application/pdf"},
			"https://cdn.example.com/render/42":           {Data: pngBytes, MIME: "image/png", Name: "render.png"},
		},
		errs: map[string]error{"https://cdn.example.com/big.png": channel.ErrTooLarge},
	}
	r := newRig(t, func(o *Options) { o.Fetch = ff.fetch })
	_, err := send(t, r.a, msg.Outbound{ID: "turn#url", Peer: group, Media: []msg.Media{
		{Kind: msg.MediaFile, URL: "https://cdn.example.com/f/q3.pdf?sig=secret"},
		{URL: "https://cdn.example.com/render/42"},
	}})
	must(t, err)
	ups, sent := r.sim.Uploads(), r.sim.Sent()
	if len(ups) != 2 || len(sent) != 2 {
		t.Fatalf("%d uploads, %d sent", len(ups), len(sent))
	}
	if ups[0].FileType != "pdf" || ups[0].FileName != "q3.pdf" || sent[0].MsgType != "file" {
		t.Errorf("pdf: %+v as %s", ups[0], sent[0].MsgType)
	}
	if ups[1].Kind != feishusim.UploadImage || ups[1].PartName != "render.png" || sent[1].MsgType != "image" {
		t.Errorf("image: %+v as %s", ups[1], sent[1].MsgType)
	}
	if len(ff.calls) != 2 || ff.limit[0] != MaxFileUpload || ff.limit[1] != MaxFileUpload {
		t.Errorf("fetches %v with limits %v", ff.calls, ff.limit)
	}
	_, err = send(t, r.a, msg.Outbound{ID: "turn#big", Peer: group, Media: []msg.Media{{Kind: msg.MediaImage, URL: "https://cdn.example.com/big.png"}}})
	if !outbox.IsPermanent(err) || !strings.Contains(err.Error(), "big.png") || ff.limit[2] != MaxImageUpload {
		t.Errorf("over the limit: %v (limit asked %v)", err, ff.limit)
	}
	if strings.Contains(err.Error(), "secret") {
		t.Errorf("the error shows the URL's query: %v", err)
	}
}

// TestSendMediaPlainFetch: with no fetcher injected, a URL is fetched by
// a plain GET; a failed GET is a permanent error.
func TestSendMediaPlainFetch(t *testing.T) {
	files := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.URL.Path != "/cat.gif" {
			http.NotFound(w, req)
			return
		}
		w.Header().Set("Content-Type", "image/gif")
		w.Write([]byte("GIF89a fake"))
	}))
	t.Cleanup(files.Close)
	r := newRig(t, nil)
	_, err := send(t, r.a, msg.Outbound{ID: "turn#plain", Peer: group, Media: []msg.Media{{URL: files.URL + "/cat.gif"}}})
	must(t, err)
	if ups := r.sim.Uploads(); len(ups) != 1 || ups[0].Kind != feishusim.UploadImage || string(ups[0].Data) != "GIF89a fake" {
		t.Fatalf("uploads %+v", ups)
	}
	_, err = send(t, r.a, msg.Outbound{ID: "turn#404", Peer: group, Media: []msg.Media{{URL: files.URL + "/nope.pdf"}}})
	if !outbox.IsPermanent(err) || !strings.Contains(err.Error(), "404") {
		t.Errorf("a 404: %v", err)
	}
}

// oggOpus is a two-page Ogg Opus stream of 2.5 s (pre-skip 312).
func oggOpus() []byte {
	page := func(granule int64, payload []byte) []byte {
		b := []byte("OggS\x00\x00")
		b = binary.LittleEndian.AppendUint64(b, uint64(granule))
		b = append(b, make([]byte, 12)...) // serial, sequence, checksum
		b = append(b, 1, byte(len(payload)))
		return append(b, payload...)
	}
	head := []byte("OpusHead\x01\x01")
	head = binary.LittleEndian.AppendUint16(head, 312)
	head = binary.LittleEndian.AppendUint32(head, 48000)
	head = append(head, 0, 0, 0)
	return append(page(0, head), page(312+48000*5/2, []byte("audio"))...)
}

// mp4Movie is an MP4 whose movie header says 4.2 s.
func mp4Movie() []byte {
	b := []byte("\x00\x00\x00\x18ftypisom\x00\x00\x02\x00isomiso2")
	mvhd := []byte("\x00\x00\x00\x6cmvhd\x00\x00\x00\x00")
	mvhd = append(mvhd, make([]byte, 8)...) // creation, modification
	mvhd = binary.BigEndian.AppendUint32(mvhd, 600)
	mvhd = binary.BigEndian.AppendUint32(mvhd, 2520)
	return append(append(b, "\x00\x00\x00\x74moov"...), append(mvhd, make([]byte, 80)...)...)
}

// TestSendVoiceAndVideo: an Ogg Opus voice note is uploaded as opus with
// its duration and shown in an audio message; an MP4 as mp4 in a media
// message; other files as a stream.
func TestSendVoiceAndVideo(t *testing.T) {
	r := newRig(t, nil)
	_, err := send(t, r.a, msg.Outbound{ID: "turn#av", Peer: group, Media: []msg.Media{
		{Kind: msg.MediaAudio, URL: writeFile(t, "note.ogg", oggOpus())},
		{Kind: msg.MediaVideo, URL: writeFile(t, "clip.mp4", mp4Movie())},
		{Kind: msg.MediaFile, URL: writeFile(t, "data.csv", []byte("a,b\n1,2\n"))},
	}})
	must(t, err)
	ups, sent := r.sim.Uploads(), r.sim.Sent()
	if len(ups) != 3 || len(sent) != 3 {
		t.Fatalf("%d uploads, %d sent", len(ups), len(sent))
	}
	for i, want := range []struct {
		fileType, msgType string
		duration          int
	}{{"opus", "audio", 2500}, {"mp4", "media", 4200}, {"stream", "file", 0}} {
		if ups[i].FileType != want.fileType || ups[i].Duration != want.duration || sent[i].MsgType != want.msgType {
			t.Errorf("%s: file_type %s, duration %d, sent as %s; want %+v", ups[i].FileName, ups[i].FileType, ups[i].Duration, sent[i].MsgType, want)
		}
	}
	// Headers that say nothing give no duration, and never panic.
	for _, b := range [][]byte{nil, []byte("OggS"), oggOpus()[:40], []byte("mvhd"), []byte("\x00\x00\x00\x00mvhd\x01")} {
		if d := opusDuration(b) + mp4Duration(b); d != 0 {
			t.Errorf("duration %d of %q", d, b)
		}
	}
}

// sameSeg compares media segments (which hold no forwarded messages).
func sameSeg(a, b msg.Segment) bool {
	return a.Kind == b.Kind && a.ID == b.ID && a.Name == b.Name && a.URL == b.URL && a.Text == b.Text && len(a.Forward)+len(b.Forward) == 0
}

// TestDownloadImageMessage: an image message carries an image segment by
// its image_key, and the Downloader fetches it with its type.
func TestDownloadImageMessage(t *testing.T) {
	r := newRig(t, nil)
	r.run()
	m := r.take(feishusim.Message{ChatID: groupChat, SenderID: userA, MsgType: "image",
		Content: `{"image_key":"img_v3_cat"}`, Resources: map[string][]byte{"img_v3_cat": pngBytes}})
	if m.Text != "[图片 msg="+string(m.ID)+"]" {
		t.Errorf("text %q", m.Text)
	}
	atts := m.Attachments(msg.AttachedHere)
	if len(atts) != 1 || !sameSeg(atts[0].Segment, msg.Segment{Kind: msg.SegImage, ID: "img_v3_cat"}) || atts[0].Message != m.ID {
		t.Fatalf("attachments %+v", atts)
	}
	b, err := r.a.Download(context.Background(), atts[0], 1<<20)
	must(t, err)
	if !bytes.Equal(b.Data, pngBytes) || b.MIME != "image/png" {
		t.Errorf("blob %q %s %q", b.Data, b.MIME, b.Name)
	}
	calls := r.sim.Calls(feishusim.PathMessages + "/" + string(m.ID) + "/resources/img_v3_cat")
	if len(calls) != 1 || calls[0].Query != "type=image" || r.getCalls(string(m.ID)) != 0 {
		t.Errorf("resource calls %+v, %d GETs", calls, r.getCalls(string(m.ID)))
	}
}

// TestDownloadVoiceAndFile: a voice note is a voice segment and a file a
// file segment with its name, the texts as before; both download, the
// file under its platform name.
func TestDownloadVoiceAndFile(t *testing.T) {
	r := newRig(t, nil)
	r.run()
	voice := r.take(feishusim.Message{ChatID: groupChat, SenderID: userA, MsgType: "audio",
		Content: `{"file_key":"file_v3_voice","duration":2000}`, Resources: map[string][]byte{"file_v3_voice": oggOpus()}})
	file := r.take(feishusim.Message{ChatID: groupChat, SenderID: userA, MsgType: "file",
		Content: `{"file_key":"file_v3_doc","file_name":"方案.pdf"}`, Resources: map[string][]byte{"file_v3_doc": []byte("%PDF-1.7")}})
	if voice.Text != "[语音 msg="+string(voice.ID)+"]" || file.Text != "[文件 方案.pdf msg="+string(file.ID)+"]" {
		t.Errorf("texts %q, %q", voice.Text, file.Text)
	}
	va, fa := voice.Attachments(msg.AttachedHere), file.Attachments(msg.AttachedHere)
	if len(va) != 1 || !sameSeg(va[0].Segment, msg.Segment{Kind: msg.SegVoice, ID: "file_v3_voice"}) {
		t.Fatalf("voice attachments %+v", va)
	}
	if len(fa) != 1 || !sameSeg(fa[0].Segment, msg.Segment{Kind: msg.SegFile, ID: "file_v3_doc", Name: "方案.pdf"}) {
		t.Fatalf("file attachments %+v", fa)
	}
	vb, err := r.a.Download(context.Background(), va[0], 1<<20)
	must(t, err)
	if !bytes.Equal(vb.Data, oggOpus()) || vb.MIME != "application/ogg" {
		t.Errorf("voice blob %s %q", vb.MIME, vb.Name)
	}
	fb, err := r.a.Download(context.Background(), fa[0], 1<<20)
	must(t, err)
	if string(fb.Data) != "%PDF-1.7" || fb.Name != "方案.pdf" || fb.MIME != "application/pdf" {
		t.Errorf("file blob %q %s %q", fb.Data, fb.MIME, fb.Name)
	}
}

// TestDownloadPostImages: the images of a post are image segments by
// their keys (the text as before), downloaded through the post.
func TestDownloadPostImages(t *testing.T) {
	r := newRig(t, nil)
	r.run()
	m := r.take(feishusim.Message{ChatID: groupChat, SenderID: userA, MsgType: "post",
		Content:   `{"zh_cn":{"title":"周报","content":[[{"tag":"text","text":"进度"}],[{"tag":"img","image_key":"img_a"}],[{"tag":"img","image_key":"img_b"},{"tag":"img","image_key":"img_a"}]]}}`,
		Resources: map[string][]byte{"img_a": pngBytes, "img_b": []byte("GIF89a")}})
	if m.Text != "周报\n进度\n [图片]\n [图片]  [图片]" {
		t.Errorf("text %q", m.Text)
	}
	atts := m.Attachments(msg.AttachedHere)
	if len(atts) != 2 || atts[0].Segment.ID != "img_a" || atts[1].Segment.ID != "img_b" || atts[1].Segment.Kind != msg.SegImage {
		t.Fatalf("attachments %+v", atts)
	}
	b, err := r.a.Download(context.Background(), atts[1], 1<<20)
	must(t, err)
	if string(b.Data) != "GIF89a" || b.MIME != "image/gif" {
		t.Errorf("blob %q %s", b.Data, b.MIME)
	}
}

// TestDownloadForwardChildFallback: a forward's child downloads by its
// own id, and through the forward when the platform says the file is not
// in the child (234003); a segment without a key is looked up first.
func TestDownloadForwardChildFallback(t *testing.T) {
	r := newRig(t, nil)
	fwd := forwardOf("om_dlr_fwd", groupChat)
	fwd.Children[0].Resources = map[string][]byte{"img_1": pngBytes}
	_, err := r.sim.AddMessage(fwd)
	must(t, err)
	child := "om_dlr_fwd_img"
	childRes := feishusim.PathMessages + "/" + child + "/resources/img_1"
	for _, seg := range []msg.Segment{{Kind: msg.SegImage, ID: "img_1"}, {Kind: msg.SegImage}} {
		r.sim.FailNext(childRes, feishusim.CodeFileNotInMessage)
		att := msg.Attachment{Channel: ChannelID, Account: msg.DefaultAccount, Message: msg.MessageID(child), Segment: seg, From: msg.AttachedForward}
		b, err := r.a.Download(context.Background(), att, 1<<20)
		if err != nil || !bytes.Equal(b.Data, pngBytes) {
			t.Fatalf("segment %+v: %v", seg, err)
		}
	}
	parent := r.sim.Calls(feishusim.PathMessages + "/om_dlr_fwd/resources/img_1")
	if c := r.sim.Calls(childRes); len(c) != 2 || c[0].Code != feishusim.CodeFileNotInMessage || len(parent) != 2 {
		t.Errorf("%d child calls, %d container calls", len(c), len(parent))
	}
	// One GET learns the container, and one more finds the key the
	// second segment did not carry (the answer is reused for the
	// container).
	if n := r.getCalls(child); n != 2 {
		t.Errorf("%d GETs of the child", n)
	}
}

// TestDownloadTooLarge: content over the limit is channel.ErrTooLarge;
// attachments of other channels, accounts or kinds are refused.
func TestDownloadTooLarge(t *testing.T) {
	r := newRig(t, nil)
	id, err := r.sim.AddMessage(feishusim.Message{ChatID: groupChat, SenderID: userA, MsgType: "file",
		Content: `{"file_key":"file_big","file_name":"big.bin"}`, Resources: map[string][]byte{"file_big": make([]byte, 100)}})
	must(t, err)
	att := msg.Attachment{Channel: ChannelID, Message: msg.MessageID(id), Segment: msg.Segment{Kind: msg.SegFile, ID: "file_big"}}
	if _, err := r.a.Download(context.Background(), att, 99); !errors.Is(err, channel.ErrTooLarge) {
		t.Errorf("over the limit: %v", err)
	}
	if b, err := r.a.Download(context.Background(), att, 100); err != nil || len(b.Data) != 100 || b.Name != "big.bin" {
		t.Errorf("at the limit: %d bytes %q, %v", len(b.Data), b.Name, err)
	}
	for _, bad := range []msg.Attachment{
		{Channel: "onebot", Message: att.Message, Segment: att.Segment},
		{Channel: ChannelID, Account: "other", Message: att.Message, Segment: att.Segment},
		{Channel: ChannelID, Message: att.Message, Segment: msg.Segment{Kind: msg.SegText, Text: "x"}},
		{Channel: ChannelID, Message: "../x", Segment: att.Segment},
	} {
		if _, err := r.a.Download(context.Background(), bad, 1<<20); err == nil {
			t.Errorf("%+v downloaded", bad)
		}
	}
}
