package media

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/pincerbot/pincer/internal/channel"
	"github.com/pincerbot/pincer/internal/msg"
)

func imageAt(url string) msg.Attachment {
	return msg.Attachment{Segment: msg.Segment{Kind: msg.SegImage, URL: url}, From: msg.AttachedHere}
}

func voiceNote(id string) msg.Attachment {
	return msg.Attachment{Segment: msg.Segment{Kind: msg.SegVoice, ID: id}, From: msg.AttachedHere}
}

// mediaServer serves /<name>: PNGs for p1..p9, HTML for /page, a 404 otherwise.
func mediaServer(t *testing.T) (*httptest.Server, map[string][]byte) {
	t.Helper()
	files := map[string][]byte{}
	for i := range 9 {
		files["/p"+string(rune('1'+i))] = pngBytes(t, uint8(i+1))
	}
	files["/html"] = []byte("<!doctype html><title>not an image</title>")
	files["/bmp"] = append([]byte("BM"), make([]byte, 60)...)
	files["/page"] = []byte(`<html><head><title>A page</title><meta name="description" content="About it"></head></html>`)
	files["/bare"] = []byte(`<html><head><title>Bare</title></head></html>`)
	s := serve(t, func(w http.ResponseWriter, r *http.Request) {
		data, ok := files[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Write(data)
	})
	return s, files
}

func private() *Fetcher { return NewFetcher(FetchOptions{AllowPrivate: true}) }

func TestUnderstandAttachesImagesForModelsThatSee(t *testing.T) {
	srv, files := mediaServer(t)
	dir := filepath.Join(t.TempDir(), "media", "inbound")
	u := NewUnderstander(Options{Fetcher: private()})
	r := u.Understand(context.Background(), Input{
		Attachments: []msg.Attachment{imageAt(srv.URL + "/p1"), imageAt(srv.URL + "/p2")},
		Dir:         dir, SeesImages: true,
	})
	if len(r.Images) != 2 || len(r.Staged) != 2 {
		t.Fatalf("result %+v", r)
	}
	want := []string{"[图片1: " + r.Staged[0].Name + "]", "[图片2: " + r.Staged[1].Name + "]"}
	if !slices.Equal(r.Notes, want) {
		t.Errorf("notes %q, want %q", r.Notes, want)
	}
	for i, img := range r.Images {
		data := files[[]string{"/p1", "/p2"}[i]]
		if img.Part.MIME != "image/png" || !bytes.Equal(img.Part.Data, data) || img.Staged != r.Staged[i] {
			t.Errorf("image %d: %+v", i+1, img.Staged)
		}
		if got, err := os.ReadFile(img.Staged.Path); err != nil || !bytes.Equal(got, data) {
			t.Errorf("image %d staged: %v", i+1, err)
		}
		if filepath.Dir(img.Staged.Path) != dir {
			t.Errorf("image %d at %s", i+1, img.Staged.Path)
		}
	}
}

func TestUnderstandRefusesLoopbackByDefault(t *testing.T) {
	srv, _ := mediaServer(t)
	r := NewUnderstander(Options{}).Understand(context.Background(), Input{
		Attachments: []msg.Attachment{imageAt(srv.URL + "/p1?rkey=secret")}, Dir: t.TempDir(), SeesImages: true,
	})
	want := []string{"[图片1获取失败: 不允许访问内网地址]"}
	if !slices.Equal(r.Notes, want) || len(r.Images) != 0 || len(r.Staged) != 0 {
		t.Errorf("got %+v, want notes %q", r, want)
	}
}

func TestUnderstandDescribesForTextModels(t *testing.T) {
	srv, files := mediaServer(t)
	m := &fakeModel{reply: "一只橘猫趴在键盘上"}
	u := NewUnderstander(Options{Fetcher: private(), Describer: NewDescriber(DescriberOptions{Provider: m})})
	r := u.Understand(context.Background(), Input{Attachments: []msg.Attachment{imageAt(srv.URL + "/p3")}, Dir: t.TempDir()})
	if len(r.Staged) != 1 || len(r.Images) != 0 {
		t.Fatalf("result %+v", r)
	}
	want := []string{"[图片1描述: 一只橘猫趴在键盘上（文件 " + r.Staged[0].Name + "）]"}
	if !slices.Equal(r.Notes, want) {
		t.Errorf("notes %q, want %q", r.Notes, want)
	}
	if reqs := m.requests(); len(reqs) != 1 || !bytes.Equal(reqs[0].Messages[0].Images[0].Data, files["/p3"]) {
		t.Error("the model did not get the image")
	}
}

// TestUnderstandWithAChatsDescriber: the describer of the input (a chat's
// own image model) describes in place of the understander's.
func TestUnderstandWithAChatsDescriber(t *testing.T) {
	srv, _ := mediaServer(t)
	def, own := &fakeModel{reply: "默认模型的描述"}, &fakeModel{reply: "这个群的模型的描述"}
	u := NewUnderstander(Options{Fetcher: private(), Describer: NewDescriber(DescriberOptions{Provider: def})})
	r := u.Understand(context.Background(), Input{Attachments: []msg.Attachment{imageAt(srv.URL + "/p3")}, Dir: t.TempDir(), Describer: NewDescriber(DescriberOptions{Provider: own})})
	if len(r.Notes) != 1 || !strings.Contains(r.Notes[0], "这个群的模型的描述") || def.calls.Load() != 0 {
		t.Errorf("notes %q, the default describer asked %d times", r.Notes, def.calls.Load())
	}
}

func TestUnderstandWithoutDescriber(t *testing.T) {
	srv, _ := mediaServer(t)
	r := NewUnderstander(Options{Fetcher: private()}).Understand(context.Background(), Input{
		Attachments: []msg.Attachment{imageAt(srv.URL + "/p1")}, Dir: t.TempDir(),
	})
	if len(r.Staged) != 1 || !slices.Equal(r.Notes, []string{"[图片1: " + r.Staged[0].Name + "（当前模型看不到图片）]"}) {
		t.Errorf("got %+v", r)
	}
}

func TestUnderstandImagesModelsCannotTake(t *testing.T) {
	srv, _ := mediaServer(t)
	in := Input{Attachments: []msg.Attachment{imageAt(srv.URL + "/bmp")}, Dir: t.TempDir(), SeesImages: true}
	r := NewUnderstander(Options{Fetcher: private()}).Understand(context.Background(), in)
	if len(r.Images) != 0 || len(r.Staged) != 1 ||
		!slices.Equal(r.Notes, []string{"[图片1: " + r.Staged[0].Name + "（image/bmp 格式，当前模型无法查看）]"}) {
		t.Errorf("without describer: %+v", r)
	}
	// A picture that does not decode is not sent to a describer either:
	// no provider would take it.
	m := &fakeModel{reply: "位图"}
	r = NewUnderstander(Options{Fetcher: private(), Describer: NewDescriber(DescriberOptions{Provider: m})}).Understand(context.Background(), in)
	if len(r.Images) != 0 || m.calls.Load() != 0 || !slices.Equal(r.Notes, []string{"[图片1: " + r.Staged[0].Name + "（image/bmp 格式，当前模型无法查看）]"}) {
		t.Errorf("with describer: %+v", r)
	}
	m = &fakeModel{err: errors.New("unsupported image")}
	png := imageAt(srv.URL + "/p1")
	r = NewUnderstander(Options{Fetcher: private(), Describer: NewDescriber(DescriberOptions{Provider: m})}).Understand(context.Background(), Input{Attachments: []msg.Attachment{png}, Dir: t.TempDir()})
	if !slices.Equal(r.Notes, []string{"[图片1: " + r.Staged[0].Name + "（描述失败）]"}) {
		t.Errorf("describer failing: %+v", r)
	}
}

func TestUnderstandFailures(t *testing.T) {
	srv, _ := mediaServer(t)
	u := NewUnderstander(Options{Fetcher: private(), MaxBytes: 64})
	r := u.Understand(context.Background(), Input{
		Attachments: []msg.Attachment{imageAt(srv.URL + "/html"), imageAt(srv.URL + "/missing"), imageAt(srv.URL + "/p1"), imageAt("")},
		Dir:         t.TempDir(), SeesImages: true,
	})
	want := []string{
		"[图片1获取失败: 不是图片（text/html）]",
		"[图片2获取失败: HTTP 404]",
		"[图片3获取失败: 超过 64 字节 上限]",
		"[图片4获取失败: 没有下载地址]",
	}
	if !slices.Equal(r.Notes, want) || len(r.Staged) != 0 {
		t.Errorf("notes %q, want %q", r.Notes, want)
	}
	// A downloader that returns more than it was allowed is held to it.
	u = NewUnderstander(Options{MaxBytes: 2 << 20})
	r = u.Understand(context.Background(), Input{
		Attachments: []msg.Attachment{imageAt("")},
		Download: func(context.Context, msg.Attachment, int64) (channel.Blob, error) {
			return channel.Blob{Data: make([]byte, 3<<20)}, nil
		},
		Dir: t.TempDir(),
	})
	if !slices.Equal(r.Notes, []string{"[图片1获取失败: 超过 2 MiB 上限]"}) {
		t.Errorf("oversize download: %q", r.Notes)
	}
}

func TestUnderstandCapsImages(t *testing.T) {
	var calls atomic.Int32
	data := pngBytes(t, 9)
	download := func(_ context.Context, a msg.Attachment, limit int64) (channel.Blob, error) {
		calls.Add(1)
		if limit != 1<<20 {
			t.Errorf("limit %d", limit)
		}
		return channel.Blob{Data: data, MIME: "application/octet-stream"}, nil
	}
	atts := []msg.Attachment{imageAt("a"), imageAt("b"), imageAt("c"), imageAt("d")}
	u := NewUnderstander(Options{MaxImages: 2, MaxBytes: 1 << 20})
	r := u.Understand(context.Background(), Input{Attachments: atts, Download: download, SeesImages: true})
	name := r.Staged[0].Name
	want := []string{"[图片1: " + name + "]", "[图片2: " + name + "]", "[另有 2 张图片未处理：每条消息最多看 2 张]"}
	if !slices.Equal(r.Notes, want) || calls.Load() != 2 || len(r.Images) != 2 {
		t.Errorf("notes %q (want %q), %d downloads", r.Notes, want, calls.Load())
	}
	if r.Staged[0].Path != "" || r.Images[0].Part.MIME != "image/png" {
		t.Errorf("without Dir: %+v", r.Staged[0])
	}
}

type fakeTranscriber struct {
	text string
	err  error

	mu    sync.Mutex
	names []string
	mimes []string
}

func (f *fakeTranscriber) Transcribe(_ context.Context, audio []byte, name, mime string) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.names = append(f.names, name)
	f.mimes = append(f.mimes, mime)
	return f.text, f.err
}

func TestUnderstandVoice(t *testing.T) {
	silk := []byte("\x02#!SILK_V3 some voice")
	var downloads atomic.Int32
	download := func(_ context.Context, a msg.Attachment, _ int64) (channel.Blob, error) {
		downloads.Add(1)
		switch a.Segment.ID {
		case "gone":
			return channel.Blob{}, &StatusError{StatusCode: 410, Status: "410 Gone"}
		}
		return channel.Blob{Data: silk}, nil
	}
	atts := []msg.Attachment{voiceNote("v1"), voiceNote("gone"),
		{Segment: msg.Segment{Kind: msg.SegFile, ID: "f"}}, {Segment: msg.Segment{Kind: msg.SegVideo, ID: "v"}}}

	tr := &fakeTranscriber{text: " 你好，明天见 "}
	r := NewUnderstander(Options{Transcriber: tr}).Understand(context.Background(),
		Input{Attachments: atts, Download: download, Dir: t.TempDir()})
	want := []string{"[语音转写: 你好，明天见]", "[语音转写失败: HTTP 410]"}
	if !slices.Equal(r.Notes, want) || len(r.Staged) != 1 {
		t.Errorf("notes %q, want %q; staged %d", r.Notes, want, len(r.Staged))
	}
	if len(tr.names) != 1 || !strings.HasSuffix(tr.names[0], ".silk") || tr.mimes[0] != "audio/silk" {
		t.Errorf("transcriber got %q %q", tr.names, tr.mimes)
	}
	if downloads.Load() != 2 {
		t.Errorf("%d downloads; files and videos are not downloaded", downloads.Load())
	}

	r = NewUnderstander(Options{Transcriber: &fakeTranscriber{err: errors.New("asr down")}}).Understand(context.Background(),
		Input{Attachments: atts[:1], Download: download})
	if !slices.Equal(r.Notes, []string{"[语音转写失败: 转写出错]"}) {
		t.Errorf("failing transcriber: %q", r.Notes)
	}

	downloads.Store(0)
	r = NewUnderstander(Options{}).Understand(context.Background(), Input{Attachments: atts, Download: download})
	if len(r.Notes) != 0 || downloads.Load() != 0 {
		t.Errorf("without transcriber: %q, %d downloads", r.Notes, downloads.Load())
	}
}

func TestUnderstandLinks(t *testing.T) {
	srv, _ := mediaServer(t)
	text := "看 " + srv.URL + "/page 和 " + srv.URL + "/missing，还有 " + srv.URL + "/bare。" + srv.URL + "/p1"
	u := NewUnderstander(Options{Fetcher: private(), Links: true, MaxLinks: 3})
	r := u.Understand(context.Background(), Input{Text: text})
	want := []string{"[链接 " + srv.URL + "/page: A page — About it]", "[链接 " + srv.URL + "/bare: Bare]"}
	if !slices.Equal(r.Notes, want) {
		t.Errorf("notes %q, want %q", r.Notes, want)
	}
	if r := NewUnderstander(Options{Fetcher: private()}).Understand(context.Background(), Input{Text: text}); len(r.Notes) != 0 {
		t.Errorf("links off: %q", r.Notes)
	}
	if r := NewUnderstander(Options{Links: true}).Understand(context.Background(), Input{Text: text}); len(r.Notes) != 0 {
		t.Errorf("loopback links: %q", r.Notes)
	}
}

func TestUnderstandOrdersNotes(t *testing.T) {
	srv, _ := mediaServer(t)
	// Image 1 finishes last, the voice note first.
	second := make(chan struct{})
	data := pngBytes(t, 4)
	download := func(ctx context.Context, a msg.Attachment, _ int64) (channel.Blob, error) {
		switch a.Segment.URL {
		case "one":
			<-second
		case "two":
			defer close(second)
		}
		if a.Segment.Kind == msg.SegVoice {
			return channel.Blob{Data: []byte("#!AMR\n")}, nil
		}
		return channel.Blob{Data: data}, nil
	}
	u := NewUnderstander(Options{Fetcher: private(), Transcriber: &fakeTranscriber{text: "语音"}, Links: true})
	r := u.Understand(context.Background(), Input{
		Attachments: []msg.Attachment{voiceNote("v"), imageAt("one"), imageAt("two")},
		Text:        srv.URL + "/bare",
		Download:    download, SeesImages: true,
	})
	name := r.Images[0].Staged.Name
	want := []string{"[图片1: " + name + "]", "[图片2: " + name + "]", "[语音转写: 语音]", "[链接 " + srv.URL + "/bare: Bare]"}
	if !slices.Equal(r.Notes, want) {
		t.Errorf("notes %q, want %q", r.Notes, want)
	}
	if len(r.Staged) != 3 || r.Staged[2].MIME != "audio/amr" {
		t.Errorf("staged %+v", r.Staged)
	}
}

func TestUnderstandReturnsAtTheDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		download := func(ctx context.Context, a msg.Attachment, _ int64) (channel.Blob, error) {
			<-ctx.Done()
			return channel.Blob{}, ctx.Err()
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		start := time.Now()
		r := NewUnderstander(Options{Transcriber: &fakeTranscriber{}}).Understand(ctx, Input{
			Attachments: []msg.Attachment{imageAt("a"), voiceNote("v")}, Download: download, SeesImages: true,
		})
		if d := time.Since(start); d != 5*time.Second {
			t.Errorf("returned after %v", d)
		}
		want := []string{"[图片1获取失败: 超时]", "[语音转写失败: 超时]"}
		if !slices.Equal(r.Notes, want) {
			t.Errorf("notes %q, want %q", r.Notes, want)
		}
	})
}

func TestUnderstandDoesNotWaitForWorkThatIgnoresItsContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		data := pngBytes(t, 5)
		download := func(ctx context.Context, a msg.Attachment, _ int64) (channel.Blob, error) {
			if a.Segment.URL == "stuck" {
				<-release
			}
			return channel.Blob{Data: data}, nil
		}
		m := &fakeModel{reply: "太慢", gate: make(chan struct{})}
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		start := time.Now()
		r := NewUnderstander(Options{Describer: NewDescriber(DescriberOptions{Provider: m})}).Understand(ctx, Input{
			Attachments: []msg.Attachment{imageAt("fast"), imageAt("stuck")}, Download: download,
		})
		if d := time.Since(start); d != 3*time.Second {
			t.Errorf("returned after %v", d)
		}
		if len(r.Staged) != 1 {
			t.Fatalf("staged %+v", r.Staged)
		}
		want := []string{"[图片1: " + r.Staged[0].Name + "（描述未完成：超时）]", "[图片2获取失败: 超时]"}
		if !slices.Equal(r.Notes, want) {
			t.Errorf("notes %q, want %q", r.Notes, want)
		}
		close(release)
		close(m.gate)
	})
}

// TestSlowLinkIsGivenUp: a page that does not answer is given up after
// LinkTimeout, well inside the turn's budget; the turn gets no note.
func TestSlowLinkIsGivenUp(t *testing.T) {
	release := make(chan struct{})
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	})
	defer close(release)
	u := NewUnderstander(Options{Fetcher: private(), Links: true, LinkTimeout: 50 * time.Millisecond})
	// Without its own timeout the preview would wait out this budget.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	r := u.Understand(ctx, Input{Text: "看 " + srv.URL + "/slow"})
	if len(r.Notes) != 0 || ctx.Err() != nil {
		t.Errorf("notes %q; the budget must not have run out (%v)", r.Notes, ctx.Err())
	}
}
