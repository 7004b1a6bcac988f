package gateway

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pincerbot/pincer/internal/channel/feishu/feishusim"
	"github.com/pincerbot/pincer/internal/config"
	"github.com/pincerbot/pincer/internal/llm/llmtest"
)

// larkDM is the bot's direct chat with larkUserA.
const larkDM = "oc_dm00000000000000000000000000a1"

// newLarkMediaRig is newLarkRig with an OpenAI-compatible provider at
// fake (gpt-4o-mini, which sees images), the direct chat with larkUserA,
// and edit applied last.
func newLarkMediaRig(t *testing.T, fake *llmtest.Server, edit func(*config.Config)) *larkRig {
	t.Helper()
	r := newLarkRig(t, func(cfg *config.Config) {
		o := withOpenAI(fake.URL)
		cfg.Models.Providers["openai"] = o.Models.Providers["openai"]
		cfg.Agents.Defaults.Model.Primary = o.Agents.Defaults.Model.Primary
		if edit != nil {
			edit(cfg)
		}
	})
	if err := r.sim.AddP2PChat(larkDM, larkUserA); err != nil {
		t.Fatal(err)
	}
	return r
}

// imageURLs are the image_url parts of an OpenAI user message content.
func imageURLs(content any) []string {
	parts, _ := content.([]any)
	var urls []string
	for _, p := range parts {
		part, _ := p.(map[string]any)
		if part["type"] != "image_url" {
			continue
		}
		u, _ := part["image_url"].(map[string]any)
		s, _ := u["url"].(string)
		urls = append(urls, s)
	}
	return urls
}

// textOf is the text of an OpenAI user message content: the string, or
// its text parts joined.
func textOf(content any) string {
	if s, ok := content.(string); ok {
		return s
	}
	parts, _ := content.([]any)
	var sb strings.Builder
	for _, p := range parts {
		part, _ := p.(map[string]any)
		if s, ok := part["text"].(string); ok && part["type"] == "text" {
			sb.WriteString(s)
		}
	}
	return sb.String()
}

// TestFeishuImageReachesTheModel: a picture a Feishu user sends — inside
// a rich-text post that @s the bot in a group, or as an image message in
// the direct chat — is downloaded through the message's resource API and
// reaches a model that sees images as the exact PNG, in the user
// message's image_url part.
func TestFeishuImageReachesTheModel(t *testing.T) {
	data := pngBytes(t)
	want := "data:image/png;base64," + base64.StdEncoding.EncodeToString(data)
	cases := []struct {
		name string
		msg  feishusim.Message
		text string // what the user wrote, expected in the text part
	}{
		{
			name: "group post with an @",
			msg: feishusim.Message{
				ID: "om_post_img", ChatID: larkGroup, MsgType: "post", SenderID: larkUserB,
				Content:   `{"title":"","content":[[{"tag":"at","user_id":"@_user_1","user_name":"` + feishusim.DefaultBotName + `"},{"tag":"text","text":" 这张图里是什么"}],[{"tag":"img","image_key":"img_v3_in_post"}]]}`,
				Mentions:  []feishusim.Mention{{Key: "@_user_1", ID: feishusim.DefaultBotOpenID, Name: feishusim.DefaultBotName}},
				Resources: map[string][]byte{"img_v3_in_post": data},
			},
			text: "这张图里是什么",
		},
		{
			name: "direct image message",
			msg: feishusim.Message{
				ID: "om_dm_img", ChatID: larkDM, MsgType: "image", SenderID: larkUserA,
				Content:   `{"image_key":"img_v3_in_dm"}`,
				Resources: map[string][]byte{"img_v3_in_dm": data},
			},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fake := llmtest.NewOpenAI(t)
			fake.Script(llmtest.Reply{Text: []string{"一个红点"}})
			r := newLarkMediaRig(t, fake, nil)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			r.post(t, ctx, c.msg, feishusim.EventOptions{})
			if got := larkText(t, r.waitSent(t, ctx, 1)[0]); got != "一个红点" {
				t.Errorf("reply %q", got)
			}
			reqs := fake.Requests()
			if len(reqs) != 1 {
				t.Fatalf("%d model requests", len(reqs))
			}
			if reqs[0].Body["model"] != "gpt-4o-mini" {
				t.Errorf("model %v", reqs[0].Body["model"])
			}
			content := lastUser(t, reqs[0].Body)
			if urls := imageURLs(content); len(urls) != 1 || urls[0] != want {
				t.Errorf("image parts %q, want one of the PNG sent (%d bytes); content %v", urls, len(data), content)
			}
			if !strings.Contains(textOf(content), c.text) {
				t.Errorf("text %q lacks %q", textOf(content), c.text)
			}
			if n := len(r.sim.Calls("/open-apis/im/v1/messages/" + c.msg.ID + "/resources/" + imageKeyOf(c.msg))); n != 1 {
				t.Errorf("the image was downloaded %d times, want once", n)
			}
		})
	}
}

// imageKeyOf is the one resource key of m.
func imageKeyOf(m feishusim.Message) string {
	for k := range m.Resources {
		return k
	}
	return ""
}

// TestFeishuVoiceIsTranscribed: a voice note in the direct chat is
// downloaded as a file and transcribed by the configured model; the text
// reaches the agent.
func TestFeishuVoiceIsTranscribed(t *testing.T) {
	audio := []byte("OggS\x00\x02\x00\x00\x00\x00\x00\x00\x00\x00 OpusHead opus frames")
	fake := llmtest.NewOpenAI(t)
	fake.SetTranscript("明天下午三点开会")
	fake.Script(llmtest.Reply{Text: []string{"好的"}})
	r := newLarkMediaRig(t, fake, func(cfg *config.Config) {
		cfg.Media.Transcription.Model = "openai/whisper-1"
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r.post(t, ctx, feishusim.Message{
		ID: "om_dm_voice", ChatID: larkDM, MsgType: "audio", SenderID: larkUserA,
		Content:   `{"file_key":"file_v3_voice","duration":2000}`,
		Resources: map[string][]byte{"file_v3_voice": audio},
	}, feishusim.EventOptions{})
	r.waitSent(t, ctx, 1)
	tr := fake.Transcriptions()
	if len(tr) != 1 || tr[0].Model != "whisper-1" || !bytes.Equal(tr[0].Audio, audio) {
		t.Fatalf("transcriptions: %+v", tr)
	}
	reqs := fake.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d model requests", len(reqs))
	}
	if user := textOf(lastUser(t, reqs[0].Body)); !strings.Contains(user, "[语音转写: 明天下午三点开会]") {
		t.Errorf("user message %q lacks the transcript", user)
	}
}

// TestFeishuReplySendsMedia: a reply naming a PNG and a PDF in a
// media.sendFrom directory uploads the picture through the image upload
// and the PDF through the file upload, and the chat gets the caption
// first, then an image message and a file message showing those uploads.
func TestFeishuReplySendsMedia(t *testing.T) {
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	chartData, reportData := pngBytes(t), []byte("%PDF-1.4\n% report\n%%EOF\n")
	chart, report := filepath.Join(dir, "chart.png"), filepath.Join(dir, "report.pdf")
	if err := os.WriteFile(chart, chartData, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(report, reportData, 0o600); err != nil {
		t.Fatal(err)
	}
	fake := llmtest.NewOpenAI(t)
	fake.Script(llmtest.Reply{Text: []string{"说明\nMEDIA: " + chart + "\n", "MEDIA: " + report}})
	r := newLarkMediaRig(t, fake, func(cfg *config.Config) {
		cfg.Media.SendFrom = []string{dir}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r.post(t, ctx, feishusim.Message{ID: "om_dm_ask", ChatID: larkDM, SenderID: larkUserA, Content: `{"text":"发我图表和报告"}`}, feishusim.EventOptions{})
	sent := r.waitSent(t, ctx, 3)
	if len(sent) != 3 {
		t.Fatalf("%d messages sent, want 3: %+v", len(sent), sent)
	}

	ups := r.sim.Uploads()
	if len(ups) != 2 {
		t.Fatalf("uploads %+v, want an image and a file", ups)
	}
	var img, file feishusim.Upload
	for _, u := range ups {
		switch u.Kind {
		case feishusim.UploadImage:
			img = u
		case feishusim.UploadFile:
			file = u
		}
	}
	if img.Key == "" || img.ImageType != "message" || !bytes.Equal(img.Data, chartData) {
		t.Errorf("image upload %+v", img)
	}
	if file.Key == "" || file.FileType != "pdf" || file.FileName != "report.pdf" || !bytes.Equal(file.Data, reportData) {
		t.Errorf("file upload %+v", file)
	}

	for i, s := range sent {
		if s.ChatID != larkDM {
			t.Errorf("message %d went to chat %s, want %s", i, s.ChatID, larkDM)
		}
	}
	if text := larkText(t, sent[0]); sent[0].MsgType != "text" || !strings.HasPrefix(text, "说明") || strings.Contains(text, "MEDIA:") || strings.Contains(text, dir) {
		t.Errorf("first message %s %q, want the caption 说明 alone", sent[0].MsgType, text)
	}
	var imgContent struct {
		ImageKey string `json:"image_key"`
	}
	if err := json.Unmarshal([]byte(sent[1].Content), &imgContent); sent[1].MsgType != "image" || err != nil || imgContent.ImageKey != img.Key || sent[1].Key != img.Key {
		t.Errorf("second message %+v, want an image message of %s", sent[1], img.Key)
	}
	var fileContent struct {
		FileKey string `json:"file_key"`
	}
	if err := json.Unmarshal([]byte(sent[2].Content), &fileContent); sent[2].MsgType != "file" || err != nil || fileContent.FileKey != file.Key || sent[2].Key != file.Key {
		t.Errorf("third message %+v, want a file message of %s", sent[2], file.Key)
	}
}
