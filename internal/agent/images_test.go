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
	"testing"

	"github.com/pincerbot/pincer/internal/llm"
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
