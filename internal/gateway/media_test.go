package gateway

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"image"
	"image/color"
	"image/png"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pincerbot/pincer/internal/channel/onebot/onebottest"
	"github.com/pincerbot/pincer/internal/config"
	"github.com/pincerbot/pincer/internal/llm/llmtest"
)

// pngBytes is a small real PNG.
func pngBytes(t *testing.T) []byte {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, 3, 3))
	img.Set(1, 1, color.RGBA{R: 200, G: 30, B: 30, A: 255})
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// qqMediaRig is a QQ group behind a OneBot implementation (forward
// WebSocket) whose files the test sets, answered by a fake model server.
type qqMediaRig struct {
	peer *onebottest.Peer
	ctx  context.Context
	g    *started
}

func startQQMedia(t *testing.T, cfg config.Config) *qqMediaRig {
	t.Helper()
	p := onebottest.New(t, func(action string, _ json.RawMessage) (any, int, string) {
		switch action {
		case "get_login_info":
			return map[string]any{"user_id": botQQ, "nickname": "bot"}, 0, ""
		case "send_group_msg", "send_private_msg":
			return map[string]any{"message_id": 9100}, 0, ""
		}
		return nil, 0, ""
	})
	cfg.Channels.OneBot.WSURL = p.URL
	g := startGateway(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	if err := p.Connected(ctx); err != nil {
		t.Fatal(err)
	}
	return &qqMediaRig{peer: p, ctx: ctx, g: g}
}

// ask @s the bot in the group with segs after the mention, and waits for
// the first message sent back.
func (r *qqMediaRig) ask(t *testing.T, id int64, segs ...any) qqSend {
	t.Helper()
	all := append([]any{seg("at", map[string]any{"qq": botQQ})}, segs...)
	if err := r.peer.Push(r.ctx, qqGroupEvent(id, all...)); err != nil {
		t.Fatal(err)
	}
	return waitSend(t, r.peer, r.ctx)
}

// lastUser is the content of the last user message of an OpenAI request.
func lastUser(t *testing.T, body map[string]any) any {
	t.Helper()
	msgs, _ := body["messages"].([]any)
	for i := len(msgs) - 1; i >= 0; i-- {
		if m, _ := msgs[i].(map[string]any); m["role"] == "user" {
			return m["content"]
		}
	}
	t.Fatalf("no user message in %v", body)
	return nil
}

// TestQQImageReachesTheModel: a group @ with a picture, served by the
// implementation on this machine (its URL is the only way to it), makes a
// model request whose user message carries the picture, in the OpenAI
// wire shape and in Anthropic's.
func TestQQImageReachesTheModel(t *testing.T) {
	data := pngBytes(t)
	b64 := base64.StdEncoding.EncodeToString(data)
	t.Run("openai", func(t *testing.T) {
		fake := llmtest.NewOpenAI(t)
		fake.Script(llmtest.Reply{Text: []string{"一个红点"}})
		r := startQQMedia(t, withOpenAI(fake.URL))
		r.peer.SetFileAnswer("A1.png", onebottest.File{Data: data, MIME: "image/png", NoBase64: true})
		r.ask(t, 1, seg("text", map[string]any{"text": " 这是什么"}), seg("image", map[string]any{"file": "A1.png", "url": r.peer.FileURL("A1.png")}))
		reqs := fake.Requests()
		if len(reqs) != 1 {
			t.Fatalf("%d model requests", len(reqs))
		}
		parts, ok := lastUser(t, reqs[0].Body).([]any)
		if !ok || len(parts) != 2 {
			t.Fatalf("user content = %v, want a text part and an image part", lastUser(t, reqs[0].Body))
		}
		text, _ := parts[0].(map[string]any)
		if text["type"] != "text" || !strings.Contains(text["text"].(string), "这是什么") || !strings.Contains(text["text"].(string), "[图片1: onebot/") {
			t.Errorf("text part = %v", text)
		}
		img, _ := parts[1].(map[string]any)
		url, _ := img["image_url"].(map[string]any)
		if img["type"] != "image_url" || url["url"] != "data:image/png;base64,"+b64 {
			t.Errorf("image part = %v", img)
		}
	})
	t.Run("anthropic", func(t *testing.T) {
		fake := llmtest.NewAnthropic(t)
		fake.Script(llmtest.Reply{Text: []string{"a red dot"}})
		cfg := config.Default()
		cfg.Models.Providers["anthropic"] = config.Provider{BaseURL: fake.URL, APIKey: "k"}
		cfg.Agents.Defaults.Model.Primary = "anthropic/claude-sonnet-4-5"
		r := startQQMedia(t, cfg)
		r.peer.SetFile("B2.png", data, "image/png")
		r.ask(t, 2, seg("image", map[string]any{"file": "B2.png", "url": "https://multimedia.nt.qq.com.cn.invalid/download?rkey=x"}))
		reqs := fake.Requests()
		if len(reqs) != 1 {
			t.Fatalf("%d model requests", len(reqs))
		}
		msgs, _ := reqs[0].Body["messages"].([]any)
		last, _ := msgs[len(msgs)-1].(map[string]any)
		blocks, _ := last["content"].([]any)
		var found bool
		for _, b := range blocks {
			blk, _ := b.(map[string]any)
			src, _ := blk["source"].(map[string]any)
			found = found || blk["type"] == "image" && src["type"] == "base64" && src["media_type"] == "image/png" && src["data"] == b64
		}
		if !found {
			t.Errorf("no base64 image block in %v", last)
		}
	})
}

// TestQQImageForATextOnlyModel: a model that cannot see pictures gets the
// vision model's description in the user message, and no picture.
func TestQQImageForATextOnlyModel(t *testing.T) {
	data := pngBytes(t)
	fake := llmtest.NewOpenAI(t)
	fake.Script(llmtest.Reply{Text: []string{"一张只有一个红点的小图"}}, llmtest.Reply{Text: []string{"是个红点"}})
	cfg := withOpenAI(fake.URL)
	cfg.Agents.Defaults.Model.Primary = "openai/deepseek-chat"
	cfg.Agents.Defaults.ImageModel.Primary = "openai/gpt-4o-mini"
	r := startQQMedia(t, cfg)
	r.peer.SetFile("C3.png", data, "image/png")
	r.ask(t, 3, seg("text", map[string]any{"text": " 看看"}), seg("image", map[string]any{"file": "C3.png"}))
	reqs := fake.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d model requests, want the description and the reply", len(reqs))
	}
	if reqs[0].Body["model"] != "gpt-4o-mini" || !strings.Contains(mustString(reqs[0].Body["messages"]), "data:image/png;base64,") {
		t.Errorf("vision request: %v", reqs[0].Body)
	}
	user, ok := lastUser(t, reqs[1].Body).(string)
	if reqs[1].Body["model"] != "deepseek-chat" || !ok || !strings.Contains(user, "[图片1描述: 一张只有一个红点的小图") || strings.Contains(mustString(reqs[1].Body), "image_url") {
		t.Errorf("reply request: model %v, user %v", reqs[1].Body["model"], lastUser(t, reqs[1].Body))
	}
	// The decision trace says what was read for the turn.
	traceOf(t, r.ctx, r.g.url, "onebot:default:group:700000001", "3", "1 attachment(s), 0 picture(s) shown to the model, 1 note(s) added: [图片1描述")
}

// TestQQVoiceIsTranscribed: a voice note is fetched as mp3 from the
// implementation and transcribed by the configured model; the text
// reaches the agent.
func TestQQVoiceIsTranscribed(t *testing.T) {
	fake := llmtest.NewOpenAI(t)
	fake.SetTranscript("明天下午三点开会")
	cfg := withOpenAI(fake.URL)
	cfg.Media.Transcription.Model = "openai/whisper-1"
	cfg.Media.Transcription.Language = "zh"
	r := startQQMedia(t, cfg)
	r.peer.SetFile("v1.amr", []byte("ID3\x03\x00\x00\x00\x00\x00\x00 mp3 frames"), "audio/mpeg")
	r.ask(t, 4, seg("record", map[string]any{"file": "v1.amr"}))
	tr := fake.Transcriptions()
	if len(tr) != 1 || tr[0].Model != "whisper-1" || tr[0].Fields["language"] != "zh" {
		t.Fatalf("transcriptions: %+v", tr)
	}
	if user := mustString(lastUser(t, fake.Requests()[0].Body)); !strings.Contains(user, "[语音转写: 明天下午三点开会]") {
		t.Errorf("user message %q lacks the transcript", user)
	}
}

// TestQQImageFromAPrivateAddressIsRefused: a picture whose URL points into
// the host's network (not the implementation's own host) is not fetched;
// the agent is told it could not be read, and still answers.
func TestQQImageFromAPrivateAddressIsRefused(t *testing.T) {
	fake := llmtest.NewOpenAI(t)
	r := startQQMedia(t, withOpenAI(fake.URL))
	r.ask(t, 5, seg("text", map[string]any{"text": " 这张呢"}), seg("image", map[string]any{"file": "D4.png", "url": "http://169.254.169.254/latest/meta-data.png"}))
	user := mustString(lastUser(t, fake.Requests()[0].Body))
	if !strings.Contains(user, "[图片1获取失败: 不允许访问内网地址]") || strings.Contains(user, "image_url") {
		t.Errorf("user message %q", user)
	}
}

// TestQQReplySendsMedia: a reply naming a PNG sends an image segment, one
// naming a PDF uploads it to the group, the caption goes first as its own
// message, and a file outside the allowed directories is named instead of
// sent.
func TestQQReplySendsMedia(t *testing.T) {
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	chart, report := filepath.Join(dir, "chart.png"), filepath.Join(dir, "report.pdf")
	if err := os.WriteFile(chart, pngBytes(t), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(report, []byte("%PDF-1.4 …"), 0o600); err != nil {
		t.Fatal(err)
	}
	fake := llmtest.NewOpenAI(t)
	fake.Script(llmtest.Reply{Text: []string{"图和报告都在这里\nMEDIA: " + chart + "\n", "MEDIA: `" + report + "`\nMEDIA: /etc/hostname"}})
	cfg := withOpenAI(fake.URL)
	cfg.Media.SendFrom = []string{dir}
	r := startQQMedia(t, cfg)
	caption := r.ask(t, 6, seg("text", map[string]any{"text": " 发我图表和报告"}))
	var text strings.Builder
	for _, m := range caption.params.Message {
		if m.Type == "text" {
			text.WriteString(m.Data["text"].(string))
		}
	}
	if !strings.Contains(text.String(), "图和报告都在这里") || !strings.Contains(text.String(), "未能发送 hostname：不在可发送的目录里") || strings.Contains(text.String(), "MEDIA:") {
		t.Errorf("caption %q", text.String())
	}
	image := waitSend(t, r.peer, r.ctx)
	var file string
	for _, m := range image.params.Message {
		if m.Type == "image" {
			file, _ = m.Data["file"].(string)
		}
	}
	if file != "file://"+chart {
		t.Errorf("image message %+v, want an image segment of file://%s", image.params.Message, chart)
	}
	deadline := time.Now().Add(10 * time.Second)
	for len(r.peer.Uploads()) == 0 && time.Now().Before(deadline) {
		select {
		case <-r.peer.Called():
		case <-time.After(time.Until(deadline)):
		}
	}
	ups := r.peer.Uploads()
	if len(ups) != 1 || ups[0].Action != "upload_group_file" || ups[0].GroupID != 700000001 || ups[0].File != report || ups[0].Name != "report.pdf" {
		t.Errorf("uploads %+v", ups)
	}
}

// TestQQMediaKeepsToItsBudgetAndSize: a picture whose server never
// answers is given up when the media budget ends, and one over
// media.maxBytes is not read; the agent answers either way, told why.
func TestQQMediaKeepsToItsBudgetAndSize(t *testing.T) {
	hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() }))
	t.Cleanup(hang.Close)
	fake := llmtest.NewOpenAI(t)
	cfg := withOpenAI(fake.URL)
	cfg.Media.BudgetMs = 300
	cfg.Media.MaxBytes = 1024
	r := startQQMedia(t, cfg)
	big := append(pngBytes(t), make([]byte, 4096)...)
	r.peer.SetFile("big.png", big, "image/png")
	r.ask(t, 7, seg("text", map[string]any{"text": " 两张"}),
		seg("image", map[string]any{"file": "slow.png", "url": hang.URL + "/slow.png"}),
		seg("image", map[string]any{"file": "big.png"}))
	user := mustString(lastUser(t, fake.Requests()[0].Body))
	if !strings.Contains(user, "[图片1获取失败: 超时]") || !strings.Contains(user, "[图片2获取失败: 超过") || strings.Contains(user, "image_url") {
		t.Errorf("user message %q", user)
	}
}

// TestPublicURL: a reply may have the platform fetch public URLs only.
func TestPublicURL(t *testing.T) {
	k := newMediaKit(config.DefaultMedia())
	ctx := context.Background()
	for raw, ok := range map[string]bool{
		"https://93.184.215.14/a.png":         true,
		"http://127.0.0.1:8080/a.png":         false,
		"http://[::1]/a.png":                  false,
		"http://169.254.169.254/latest/a.png": false,
		"http://10.1.2.3/a.pdf":               false,
		"http://localhost/a.png":              false,
		"https:///nohost":                     false,
	} {
		if err := k.publicURL(ctx, raw); (err == nil) != ok {
			t.Errorf("publicURL(%s) = %v, want ok=%v", raw, err, ok)
		}
	}
	open := config.DefaultMedia()
	open.AllowPrivateNetworks = true
	if err := newMediaKit(open).publicURL(ctx, "http://10.1.2.3/a.pdf"); err != nil {
		t.Errorf("allowPrivateNetworks: %v", err)
	}
}

// TestQQSamePictureTwice: a picture both in a message and in the message
// it quotes is shown to the model once, and the notes name its file by
// one good path.
func TestQQSamePictureTwice(t *testing.T) {
	data := pngBytes(t)
	fake := llmtest.NewOpenAI(t)
	r := startQQMedia(t, withOpenAI(fake.URL))
	r.peer.SetFile("same.png", data, "image/png")
	r.ask(t, 8, seg("image", map[string]any{"file": "same.png"}), seg("image", map[string]any{"file": "same.png"}))
	parts, _ := lastUser(t, fake.Requests()[0].Body).([]any)
	images := 0
	var text string
	for _, p := range parts {
		part, _ := p.(map[string]any)
		switch part["type"] {
		case "image_url":
			images++
		case "text":
			text, _ = part["text"].(string)
		}
	}
	if images != 1 {
		t.Errorf("%d image parts, want the picture once", images)
	}
	if strings.Count(text, "media/inbound/") != 2 || strings.Contains(text, "media/inbound/onebot/") {
		t.Errorf("notes %q: each picture named once by its workspace path", text)
	}
}

// TestTrustedConnectionsAreNotShared: after a platform fetch from its
// trusted loopback host, a user's URL to the same host is still refused
// (the trusted connection is not reused for it).
func TestTrustedConnectionsAreNotShared(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte("file")) }))
	t.Cleanup(srv.Close)
	k := newMediaKit(config.DefaultMedia())
	ctx := context.Background()
	if b, err := k.fetchFrom("127.0.0.1")(ctx, srv.URL+"/a.png", 100); err != nil || string(b.Data) != "file" {
		t.Fatalf("platform fetch: %q %v", b.Data, err)
	}
	if _, err := k.fetch(ctx, srv.URL+"/send_private_msg?user_id=1", 100); err == nil {
		t.Fatal("a user's URL reached the trusted host")
	}
	if _, err := k.fetcher.Preview(ctx, srv.URL+"/page"); err == nil {
		t.Fatal("a link preview reached the trusted host")
	}
}

// TestPruneStaged: staged pictures older than the cut-off go, newer ones
// and other files stay.
func TestPruneStaged(t *testing.T) {
	root := t.TempDir()
	write := func(rel string, age time.Duration) string {
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
		at := time.Now().Add(-age)
		if err := os.Chtimes(p, at, at); err != nil {
			t.Fatal(err)
		}
		return p
	}
	old := write("onebot/default/1/media/inbound/old.png", 200*time.Hour)
	fresh := write("onebot/default/1/media/inbound/new.png", time.Hour)
	download := write("onebot/default/1/downloads/old.pdf", 200*time.Hour)
	system := write("SYSTEM.md", 200*time.Hour)
	n, err := pruneStaged(root, time.Now().Add(-168*time.Hour))
	if err != nil || n != 1 {
		t.Fatalf("pruned %d, %v", n, err)
	}
	if _, err := os.Stat(old); !os.IsNotExist(err) {
		t.Error("the old picture is still there")
	}
	for _, p := range []string{fresh, download, system} {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("%s: %v", p, err)
		}
	}
	if n, err := pruneStaged(filepath.Join(root, "absent"), time.Now()); err != nil || n != 0 {
		t.Errorf("a missing workspace: %d, %v", n, err)
	}
}

// TestQQReplySendsFromTheTempDirectory: by default, as in OpenClaw, a
// reply may send a file from the system's temporary directory; with
// media.sendFromTemp off it is named instead.
func TestQQReplySendsFromTheTempDirectory(t *testing.T) {
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(dir, os.TempDir()) {
		t.Skipf("test directories are not under %s", os.TempDir())
	}
	chart := filepath.Join(dir, "chart.png")
	if err := os.WriteFile(chart, pngBytes(t), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, temp := range []bool{true, false} {
		fake := llmtest.NewOpenAI(t)
		fake.Script(llmtest.Reply{Text: []string{"MEDIA: " + chart}})
		cfg := withOpenAI(fake.URL)
		cfg.Media.SendFromTemp = temp
		r := startQQMedia(t, cfg)
		s := r.ask(t, 9, seg("text", map[string]any{"text": " 图"}))
		var types []string
		var text string
		for _, m := range s.params.Message {
			types = append(types, m.Type)
			if m.Type == "text" {
				text += m.Data["text"].(string)
			}
		}
		switch {
		case temp && !slices.Contains(types, "image"):
			t.Errorf("sendFromTemp on: sent %v %q, want the picture", types, text)
		case !temp && (slices.Contains(types, "image") || !strings.Contains(text, "未能发送 chart.png")):
			t.Errorf("sendFromTemp off: sent %v %q, want it named", types, text)
		}
	}
}

// TestQQRefusedPictureIsDescribedInstead: a model that refuses the
// request with the picture (400) is asked again with the image model's
// description in its place, and the reply goes out.
func TestQQRefusedPictureIsDescribedInstead(t *testing.T) {
	data := pngBytes(t)
	main, describer := llmtest.NewOpenAI(t), llmtest.NewOpenAI(t)
	main.Script(llmtest.Reply{Status: 400, ErrorType: "invalid_request_error"}, llmtest.Reply{Text: []string{"是个红点"}})
	describer.Script(llmtest.Reply{Text: []string{"一张只有红点的图"}})
	cfg := withOpenAI(main.URL)
	cfg.Models.Providers["eyes"] = config.Provider{BaseURL: describer.URL + "/v1", APIKey: "k"}
	cfg.Agents.Defaults.ImageModel.Primary = "eyes/describer-model"
	r := startQQMedia(t, cfg)
	r.peer.SetFile("E5.png", data, "image/png")
	s := r.ask(t, 10, seg("text", map[string]any{"text": " 这是什么"}), seg("image", map[string]any{"file": "E5.png"}))
	var text string
	for _, m := range s.params.Message {
		if m.Type == "text" {
			text += m.Data["text"].(string)
		}
	}
	if !strings.Contains(text, "是个红点") {
		t.Errorf("reply %q", text)
	}
	reqs := main.Requests()
	if len(reqs) != 2 || !strings.Contains(mustString(reqs[0].Body["messages"]), "image_url") {
		t.Fatalf("%d requests to the model; the first must carry the picture", len(reqs))
	}
	if user := mustString(lastUser(t, reqs[1].Body)); !strings.Contains(user, "[图片1描述: 一张只有红点的图]") || strings.Contains(mustString(reqs[1].Body), "image_url") {
		t.Errorf("second request's user message %q", user)
	}
}
