package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"image"
	"image/color"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pincerbot/pincer/internal/llm"
	"github.com/pincerbot/pincer/internal/media"
	"github.com/pincerbot/pincer/internal/store"
)

// writePNG writes a small PNG and returns its path and bytes.
func writePNG(t *testing.T, dir, name string) (string, []byte) {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, 2, 2))
	img.Set(0, 0, color.RGBA{R: 255, A: 255})
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, buf.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	return p, buf.Bytes()
}

// TestImagesGoToModelsThatSeeThem: the current exchange's images are sent
// to a model that sees images, older turns' are not, and a fallback model
// that reads text only gets none; a file that is gone or not an image is
// left out.
func TestImagesGoToModelsThatSeeThem(t *testing.T) {
	dir := t.TempDir()
	old, _ := writePNG(t, dir, "old.png")
	now, data := writePNG(t, dir, "now.png")
	notImage := filepath.Join(dir, "notes.png")
	if err := os.WriteFile(notImage, []byte("plain text"), 0o600); err != nil {
		t.Fatal(err)
	}
	tr := []store.Turn{
		{Role: store.RoleUser, Text: "earlier [图片1: old.png]", Images: []string{old}},
		{Role: store.RoleAssistant, Text: "a red dot"},
		{Role: store.RoleUser, Text: "and this? [图片1: now.png]", Images: []string{now, filepath.Join(dir, "gone.png"), notImage}},
	}
	vision := &fakeProvider{id: "v", steps: []step{{err: &llm.Error{Class: llm.Fallback, Reason: llm.ReasonOverloaded}}}}
	text := &fakeProvider{id: "t"}
	r := NewRunner(Options{
		Providers: map[string]llm.Provider{"v": vision, "t": text}, MaxTokens: 100, ContextTokens: 100000,
		SeesImages: func(ref llm.Ref) bool { return ref.Provider == "v" },
	})
	if _, err := r.Run(context.Background(), Input{Models: chain("v/see", "t/read"), Transcript: tr}); err != nil {
		t.Fatal(err)
	}
	if len(vision.reqs) == 0 || len(text.reqs) != 1 {
		t.Fatalf("calls: vision %d, text %d", len(vision.reqs), len(text.reqs))
	}
	vm := vision.reqs[0].Messages
	if len(vm) != 3 || len(vm[0].Images) != 0 {
		t.Fatalf("the older turn's image must not be sent again: %+v", vm)
	}
	if got := vm[2].Images; len(got) != 1 || got[0].MIME != "image/png" || !bytes.Equal(got[0].Data, data) {
		t.Errorf("current turn's images = %d, want the one PNG", len(got))
	}
	for _, m := range text.reqs[0].Messages {
		if len(m.Images) != 0 {
			t.Errorf("a text-only model was sent images: %+v", m)
		}
	}
	if text.reqs[0].Messages[2].Text != tr[2].Text {
		t.Errorf("the text-only model must read the turn's text: %q", text.reqs[0].Messages[2].Text)
	}
}

// TestImagesStayThroughToolRounds: a tool round does not end the exchange;
// the next call still shows the images.
func TestImagesStayThroughToolRounds(t *testing.T) {
	dir := t.TempDir()
	p, _ := writePNG(t, dir, "a.png")
	tools := &Tools{}
	if err := tools.Add(Tool{Spec: llm.Tool{Name: "noop", Parameters: map[string]any{"type": "object"}}, Call: func(context.Context, json.RawMessage) (string, error) { return "done", nil }}); err != nil {
		t.Fatal(err)
	}
	v := &fakeProvider{id: "v", steps: []step{{calls: []llm.ToolCall{{ID: "c1", Name: "noop", Arguments: "{}"}}}, {text: []string{"seen"}}}}
	r := NewRunner(Options{Providers: map[string]llm.Provider{"v": v}, MaxTokens: 100, ContextTokens: 100000, Tools: tools,
		SeesImages: func(llm.Ref) bool { return true }})
	if _, err := r.Run(context.Background(), Input{Models: chain("v/x"), Transcript: []store.Turn{{Role: store.RoleUser, Text: "look", Images: []string{p}}}}); err != nil {
		t.Fatal(err)
	}
	if len(v.reqs) != 2 || len(v.reqs[1].Messages[0].Images) != 1 {
		t.Fatalf("second round's messages: %+v", v.reqs)
	}
}

// TestImagesOfAFailedTurnAreNotSentAgain: a turn that failed leaves its
// user message (and pictures) without a reply; the next run answers only
// its own turns, so the pictures that may have caused the failure are
// not sent again.
func TestImagesOfAFailedTurnAreNotSentAgain(t *testing.T) {
	p, _ := writePNG(t, t.TempDir(), "big.png")
	v := &fakeProvider{id: "v"}
	r := NewRunner(Options{Providers: map[string]llm.Provider{"v": v}, MaxTokens: 100, ContextTokens: 100000, SeesImages: func(llm.Ref) bool { return true }})
	tr := []store.Turn{
		{Role: store.RoleUser, Text: "look [图片1: big.png]", Images: []string{p}}, // its turn failed
		{Role: store.RoleUser, Text: "hello?"},
	}
	if _, err := r.Run(context.Background(), Input{Models: chain("v/x"), Transcript: tr, Fresh: 1}); err != nil {
		t.Fatal(err)
	}
	for _, m := range v.reqs[0].Messages {
		if len(m.Images) != 0 {
			t.Fatalf("the failed turn's picture was sent again: %+v", v.reqs[0].Messages)
		}
	}
}

// TestRefusedPicturesAreDroppedOnce: a model that refuses a request with
// pictures as invalid is asked again with their notes only, and answers.
func TestRefusedPicturesAreDroppedOnce(t *testing.T) {
	p, _ := writePNG(t, t.TempDir(), "a.png")
	v := &fakeProvider{id: "v", steps: []step{{err: &llm.Error{Class: llm.Fatal, Reason: llm.ReasonInvalid, Status: 400}}, {text: []string{"ok"}}}}
	r := NewRunner(Options{Providers: map[string]llm.Provider{"v": v}, MaxTokens: 100, ContextTokens: 100000, SeesImages: func(llm.Ref) bool { return true }})
	out, err := r.Run(context.Background(), Input{Models: chain("v/x"), Transcript: []store.Turn{{Role: store.RoleUser, Text: "look", Images: []string{p}}}})
	if err != nil || out.Text != "ok" {
		t.Fatalf("run: %q %v", out.Text, err)
	}
	if len(v.reqs) != 2 || len(v.reqs[0].Messages[0].Images) != 1 || len(v.reqs[1].Messages[0].Images) != 0 {
		t.Errorf("requests: %d, images %d then %d", len(v.reqs), len(v.reqs[0].Messages[0].Images), len(v.reqs[len(v.reqs)-1].Messages[0].Images))
	}
}

// TestLargePicturesAreFitted: a picture over the providers' limits is
// scaled down before it is sent.
func TestLargePicturesAreFitted(t *testing.T) {
	img := image.NewRGBA(image.Rect(0, 0, 4000, 10))
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "wide.png")
	if err := os.WriteFile(path, buf.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	v := &fakeProvider{id: "v"}
	r := NewRunner(Options{Providers: map[string]llm.Provider{"v": v}, MaxTokens: 100, ContextTokens: 100000, SeesImages: func(llm.Ref) bool { return true }})
	if _, err := r.Run(context.Background(), Input{Models: chain("v/x"), Transcript: []store.Turn{{Role: store.RoleUser, Text: "wide", Images: []string{path}}}}); err != nil {
		t.Fatal(err)
	}
	got := v.reqs[0].Messages[0].Images
	if len(got) != 1 || got[0].MIME != "image/jpeg" {
		t.Fatalf("images %+v", got)
	}
	if cfg, _, err := image.DecodeConfig(bytes.NewReader(got[0].Data)); err != nil || cfg.Width != media.ModelImageSide {
		t.Errorf("sent %dx%d, %v", cfg.Width, cfg.Height, err)
	}
}

// TestBlindFallbackReadsDescriptions: when the model that sees pictures
// fails and a fallback that cannot see them answers, the fallback reads
// the pictures described; the describer is not asked while the first
// model is tried.
func TestBlindFallbackReadsDescriptions(t *testing.T) {
	p, _ := writePNG(t, t.TempDir(), "a.png")
	vision := &fakeProvider{id: "v", steps: []step{{err: &llm.Error{Class: llm.Fallback, Reason: llm.ReasonOverloaded}}}}
	text := &fakeProvider{id: "t"}
	var asked []int
	r := NewRunner(Options{
		Providers: map[string]llm.Provider{"v": vision, "t": text}, MaxTokens: 100, ContextTokens: 100000,
		SeesImages: func(ref llm.Ref) bool { return ref.Provider == "v" },
		Describe: func(_ context.Context, img llm.Image) (string, error) {
			asked = append(asked, len(vision.reqs))
			return "一个红点", nil
		},
	})
	if _, err := r.Run(context.Background(), Input{Models: chain("v/see", "t/read"), Transcript: []store.Turn{{Role: store.RoleUser, Text: "看 [图片1: a.png]", Images: []string{p}}}}); err != nil {
		t.Fatal(err)
	}
	if len(asked) != 1 || asked[0] != 1 {
		t.Errorf("describer asked %v times (after %v vision calls); want once, after the vision model failed", len(asked), asked)
	}
	got := text.reqs[0].Messages[0]
	if got.Text != "看 [图片1: a.png]\n[图片1描述: 一个红点]" || len(got.Images) != 0 {
		t.Errorf("the fallback read %q with %d images", got.Text, len(got.Images))
	}
	if len(vision.reqs[0].Messages[0].Images) != 1 || strings.Contains(vision.reqs[0].Messages[0].Text, "描述") {
		t.Errorf("the vision model's request: %+v", vision.reqs[0].Messages[0])
	}
}

// TestChatDescriberWins: a turn's own describer (a chat's image model)
// describes its pictures in place of the runner's.
func TestChatDescriberWins(t *testing.T) {
	p, _ := writePNG(t, t.TempDir(), "a.png")
	vision := &fakeProvider{id: "v", steps: []step{{err: &llm.Error{Class: llm.Fallback, Reason: llm.ReasonOverloaded}}}}
	text := &fakeProvider{id: "t"}
	r := NewRunner(Options{
		Providers: map[string]llm.Provider{"v": vision, "t": text}, MaxTokens: 100, ContextTokens: 100000,
		SeesImages: func(ref llm.Ref) bool { return ref.Provider == "v" },
		Describe:   func(context.Context, llm.Image) (string, error) { return "默认的描述", nil },
	})
	in := Input{
		Models: chain("v/see", "t/read"), Transcript: []store.Turn{{Role: store.RoleUser, Text: "看", Images: []string{p}}},
		Describe: func(context.Context, llm.Image) (string, error) { return "这个群的描述", nil },
	}
	if _, err := r.Run(context.Background(), in); err != nil {
		t.Fatal(err)
	}
	if got := text.reqs[0].Messages[0].Text; got != "看\n[图片1描述: 这个群的描述]" {
		t.Errorf("the fallback read %q", got)
	}
}
