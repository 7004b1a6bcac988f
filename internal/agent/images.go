package agent

import (
	"context"
	"fmt"
	"io"
	"os"
	"slices"

	"github.com/pincerbot/pincer/internal/llm"
	"github.com/pincerbot/pincer/internal/media"
	"github.com/pincerbot/pincer/internal/store"
)

// maxImageBytes caps one image file read for a model request.
const maxImageBytes = 64 << 20

// hasImages reports whether a user turn of the transcript shows images.
func hasImages(tr []store.Turn) bool {
	for i := len(tr) - 1; i >= 0; i-- {
		if len(tr[i].Images) > 0 {
			return true
		}
	}
	return false
}

// afterLastReply is the index of the first turn after the transcript's
// last final reply (an assistant turn that called no tools).
func afterLastReply(tr []store.Turn) int {
	for i := len(tr) - 1; i >= 0; i-- {
		if tr[i].Role == store.RoleAssistant && len(tr[i].ToolCalls) == 0 {
			return i + 1
		}
	}
	return 0
}

// withoutImages returns msgs with no images, sharing nothing it changes.
func withoutImages(msgs []llm.Message) []llm.Message {
	out := make([]llm.Message, len(msgs))
	for i, m := range msgs {
		m.Images = nil
		out[i] = m
	}
	return out
}

// imageLoader reads staged images for one run's model requests, each file
// once: a tool round sends the same pictures again without reading them
// again. A picture is fitted to what providers take (media.FitForModel);
// one that is gone or cannot be shown is logged and left out (the turn's
// text still names the file).
func (r *Runner) imageLoader() func(path string) (llm.Image, bool) {
	loaded := map[string]*llm.Image{}
	return func(path string) (llm.Image, bool) {
		if img, ok := loaded[path]; ok {
			return *img, img != nil
		}
		img, err := readImage(path)
		if err != nil {
			r.log.Warn("image not shown to the model", "path", path, "err", err)
			loaded[path] = nil
			return llm.Image{}, false
		}
		loaded[path] = &img
		return img, true
	}
}

// readImage reads and fits one staged image.
func readImage(path string) (llm.Image, error) {
	f, err := os.Open(path)
	if err != nil {
		return llm.Image{}, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxImageBytes+1))
	if err != nil {
		return llm.Image{}, err
	}
	if len(data) > maxImageBytes {
		return llm.Image{}, fmt.Errorf("over %d bytes", maxImageBytes)
	}
	return media.FitForModel(data)
}

// describeFunc describes a picture in text (Options.Describe).
type describeFunc = func(ctx context.Context, img llm.Image) (string, error)

// describeImages returns text (seen without its pictures) with each
// picture of seen described after its message's text; a picture that
// cannot be described is left to the note already in the text.
func (r *Runner) describeImages(ctx context.Context, seen, text []llm.Message, describe describeFunc) []llm.Message {
	out := slices.Clone(text)
	for i, m := range seen {
		for j, img := range m.Images {
			d, err := describe(ctx, img)
			if err != nil {
				r.log.Warn("picture not described for a model that cannot see it", "err", err)
				continue
			}
			out[i].Text += fmt.Sprintf("\n[图片%d描述: %s]", j+1, d)
		}
	}
	return out
}
