package agent

import (
	"io"
	"net/http"
	"os"

	"github.com/pincerbot/pincer/internal/llm"
	"github.com/pincerbot/pincer/internal/store"
)

// maxImageBytes caps one image file read for a model request.
const maxImageBytes = 20 << 20

// imageTypes are the image types every provider that sees images takes.
var imageTypes = map[string]bool{"image/png": true, "image/jpeg": true, "image/gif": true, "image/webp": true}

// hasImages reports whether a user turn of the transcript shows images.
func hasImages(tr []store.Turn) bool {
	for i := len(tr) - 1; i >= 0; i-- {
		if len(tr[i].Images) > 0 {
			return true
		}
	}
	return false
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

// loadImage reads a staged image for a model request; false when it is
// gone, too large or not a type models take (it is logged: the turn's
// text still names the file).
func (r *Runner) loadImage(path string) (llm.Image, bool) {
	f, err := os.Open(path)
	if err != nil {
		r.log.Warn("image not shown to the model", "path", path, "err", err)
		return llm.Image{}, false
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxImageBytes+1))
	if err != nil || len(data) > maxImageBytes {
		r.log.Warn("image not shown to the model", "path", path, "err", err, "bytes", len(data))
		return llm.Image{}, false
	}
	mime := http.DetectContentType(data)
	if !imageTypes[mime] {
		r.log.Warn("image not shown to the model: unsupported type", "path", path, "type", mime)
		return llm.Image{}, false
	}
	return llm.Image{MIME: mime, Data: data}, true
}
