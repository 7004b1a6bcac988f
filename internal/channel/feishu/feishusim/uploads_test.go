package feishusim

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	larkcore "github.com/larksuite/oapi-sdk-go/v3/core"
	larkim "github.com/larksuite/oapi-sdk-go/v3/service/im/v1"
)

func uploadImage(t *testing.T, e *env, imageType string, data []byte) *larkim.CreateImageResp {
	t.Helper()
	resp, err := e.client.Im.Image.Create(context.Background(), larkim.NewCreateImageReqBuilder().
		Body(larkim.NewCreateImageReqBodyBuilder().ImageType(imageType).Image(bytes.NewReader(data)).Build()).Build())
	must(t, err)
	return resp
}

func uploadFile(t *testing.T, e *env, fileType, name string, duration int, data []byte) *larkim.CreateFileResp {
	t.Helper()
	body := larkim.NewCreateFileReqBodyBuilder().FileType(fileType).FileName(name).File(bytes.NewReader(data))
	if duration > 0 {
		body.Duration(duration)
	}
	resp, err := e.client.Im.File.Create(context.Background(), larkim.NewCreateFileReqBuilder().Body(body.Build()).Build())
	must(t, err)
	return resp
}

func sendMedia(t *testing.T, e *env, msgType, content string) *larkim.CreateMessageResp {
	t.Helper()
	resp, err := e.client.Im.Message.Create(context.Background(), larkim.NewCreateMessageReqBuilder().ReceiveIdType("chat_id").
		Body(larkim.NewCreateMessageReqBodyBuilder().ReceiveId(chatGroup).MsgType(msgType).Content(content).Build()).Build())
	must(t, err)
	return resp
}

// TestUploadAndSendImage: the SDK's image upload returns a key the
// simulator records with its type and bytes; an image message naming the
// key is sent, recorded with it, and downloads back through the message.
func TestUploadAndSendImage(t *testing.T) {
	e := newEnv(t, Options{})
	setupChat(t, e.sim)
	png := []byte("\x89PNG\r\n\x1a\n fake image")
	up := uploadImage(t, e, "message", png)
	if !up.Success() || up.Data == nil || !strings.HasPrefix(str(up.Data.ImageKey), "img_") {
		t.Fatalf("upload: %d %s", up.Code, up.Msg)
	}
	key := str(up.Data.ImageKey)
	got, ok := e.sim.Upload(key)
	if !ok || got.Kind != UploadImage || got.ImageType != "message" || got.Size != len(png) || !bytes.Equal(got.Data, png) {
		t.Fatalf("recorded %+v", got)
	}
	if all := e.sim.Uploads(); len(all) != 1 || all[0].Key != key {
		t.Errorf("uploads %+v", all)
	}
	sent := sendMedia(t, e, "image", `{"image_key":"`+key+`"}`)
	if !sent.Success() {
		t.Fatalf("send: %d %s", sent.Code, sent.Msg)
	}
	s := e.sim.Sent()
	if len(s) != 1 || s[0].MsgType != "image" || s[0].Key != key || s[0].MessageID != str(sent.Data.MessageId) {
		t.Fatalf("sent %+v", s)
	}
	res, err := e.client.Im.MessageResource.Get(context.Background(), larkim.NewGetMessageResourceReqBuilder().
		MessageId(s[0].MessageID).FileKey(key).Type("image").Build())
	must(t, err)
	if !res.Success() {
		t.Fatalf("download: %d %s", res.Code, res.Msg)
	}
	if b, _ := io.ReadAll(res.File); !bytes.Equal(b, png) {
		t.Errorf("downloaded %q", b)
	}
	if ct := res.Header.Get("Content-Type"); ct != "image/png" {
		t.Errorf("image Content-Type %q", ct)
	}
}

// TestUploadAndSendFiles: a file upload records its type, name and
// duration; file, audio and media messages need an upload of the right
// type, and a file message reads back with its file name.
func TestUploadAndSendFiles(t *testing.T) {
	e := newEnv(t, Options{})
	setupChat(t, e.sim)
	pdf := uploadFile(t, e, "pdf", "报告.pdf", 0, []byte("%PDF-1.7"))
	opus := uploadFile(t, e, "opus", "voice.opus", 2500, []byte("OggS voice"))
	if !pdf.Success() || !opus.Success() {
		t.Fatalf("uploads: %d %s / %d %s", pdf.Code, pdf.Msg, opus.Code, opus.Msg)
	}
	pk, ok := e.sim.Upload(str(pdf.Data.FileKey))
	if !ok || pk.Kind != UploadFile || pk.FileType != "pdf" || pk.FileName != "报告.pdf" || pk.Duration != 0 || pk.Size != 8 {
		t.Errorf("pdf recorded %+v", pk)
	}
	if ou, _ := e.sim.Upload(str(opus.Data.FileKey)); ou.Duration != 2500 || ou.FileType != "opus" {
		t.Errorf("opus recorded %+v", ou)
	}
	fileContent := func(key string) string { return `{"file_key":"` + key + `"}` }
	for _, c := range []struct {
		msgType, key string
		code         int
	}{
		{"file", str(pdf.Data.FileKey), CodeOK},
		{"audio", str(opus.Data.FileKey), CodeOK},
		{"audio", str(pdf.Data.FileKey), CodeInvalidParam},
		{"media", str(opus.Data.FileKey), CodeInvalidParam},
		{"file", "file_unknown", CodeInvalidParam},
		{"image", str(pdf.Data.FileKey), CodeInvalidParam},
	} {
		content := fileContent(c.key)
		if c.msgType == "image" {
			content = `{"image_key":"` + c.key + `"}`
		}
		if r := sendMedia(t, e, c.msgType, content); r.Code != c.code {
			t.Errorf("%s with %s: code %d, want %d", c.msgType, c.key, r.Code, c.code)
		}
	}
	sent := e.sim.Sent()
	if len(sent) != 2 || sent[0].MsgType != "file" || sent[1].MsgType != "audio" || sent[1].Key != str(opus.Data.FileKey) {
		t.Fatalf("sent %+v", sent)
	}
	m, _ := e.sim.Message(sent[0].MessageID)
	if !strings.Contains(m.Content, `"file_name":"报告.pdf"`) || string(m.Resources[sent[0].Key]) != "%PDF-1.7" {
		t.Errorf("sent file stored as %+v", m)
	}
}

// TestUploadRefusals: empty and oversize uploads, unknown types and a
// body that is not multipart are refused with the platform's codes.
func TestUploadRefusals(t *testing.T) {
	e := newEnv(t, Options{})
	if r := uploadImage(t, e, "message", nil); r.Code != CodeUploadEmpty {
		t.Errorf("empty image: code %d", r.Code)
	}
	if r := uploadImage(t, e, "message", make([]byte, MaxImageUpload+1)); r.Code != CodeUploadTooLarge {
		t.Errorf("oversize image: code %d", r.Code)
	}
	if r := uploadImage(t, e, "sticker", []byte("x")); r.Code != CodeUploadInvalid {
		t.Errorf("unknown image_type: code %d", r.Code)
	}
	if r := uploadFile(t, e, "zip", "a.zip", 0, []byte("x")); r.Code != CodeUploadInvalid {
		t.Errorf("unknown file_type: code %d", r.Code)
	}
	if r := uploadFile(t, e, "stream", "", 0, []byte("x")); r.Code != CodeUploadInvalid {
		t.Errorf("no file_name: code %d", r.Code)
	}
	resp, err := e.client.Post(context.Background(), PathFiles, map[string]string{"file_type": "pdf"}, larkcore.AccessTokenTypeTenant)
	must(t, err)
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(resp.RawBody), "234001") {
		t.Errorf("JSON body: %d %s", resp.StatusCode, resp.RawBody)
	}
	if n := len(e.sim.Uploads()); n != 0 {
		t.Errorf("%d refused uploads recorded", n)
	}
}
