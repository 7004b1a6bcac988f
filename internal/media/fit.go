package media

import (
	"bytes"
	"errors"
	"fmt"
	"image"
	"image/draw"
	_ "image/gif" // decoders for image.Decode
	"image/jpeg"
	_ "image/png"

	_ "golang.org/x/image/bmp" // decoders for image.Decode
	xdraw "golang.org/x/image/draw"
	_ "golang.org/x/image/tiff"
	_ "golang.org/x/image/webp"

	"github.com/pincerbot/pincer/internal/llm"
)

// Limits of a picture shown to a model. Providers refuse larger ones
// (Anthropic: 5 MB and 8000 pixels a side), and larger ones cost tokens
// and memory without helping: a picture over either limit is scaled down
// to ModelImageSide on its long side and sent as a JPEG.
const (
	ModelImageBytes = 4 << 20
	ModelImageSide  = 2048
	// maxPixels refuses pictures whose decoding alone would take too much
	// memory (a "decompression bomb"); a 48-megapixel photo still fits.
	maxPixels = 50_000_000
)

// ErrImageTooLarge reports a picture too large to decode for a model.
var ErrImageTooLarge = errors.New("picture too large to show")

// ModelTypes are the picture types every provider that sees images takes.
var ModelTypes = map[string]bool{"image/png": true, "image/jpeg": true, "image/gif": true, "image/webp": true}

// FitForModel returns data as a picture a model takes: as it is when it
// is a PNG, JPEG, GIF or WebP within ModelImageBytes and ModelImageSide,
// else (a larger one, a BMP or TIFF) scaled down to fit and encoded as
// JPEG. Other types (HEIC among them), and pictures that do not decode,
// are errors.
func FitForModel(data []byte) (llm.Image, error) {
	typ := Sniff(data)
	cfg, format, err := image.DecodeConfig(bytes.NewReader(data))
	if err != nil {
		return llm.Image{}, fmt.Errorf("a %s is not a picture a model takes: %w", typ, err)
	}
	if cfg.Width <= 0 || cfg.Height <= 0 || int64(cfg.Width)*int64(cfg.Height) > maxPixels {
		return llm.Image{}, fmt.Errorf("%dx%d: %w", cfg.Width, cfg.Height, ErrImageTooLarge)
	}
	if ModelTypes["image/"+format] && len(data) <= ModelImageBytes && max(cfg.Width, cfg.Height) <= ModelImageSide {
		return llm.Image{MIME: "image/" + format, Data: data}, nil
	}
	src, _, err := image.Decode(bytes.NewReader(data))
	if err != nil {
		return llm.Image{}, fmt.Errorf("decode picture: %w", err)
	}
	w, h := cfg.Width, cfg.Height
	if long := max(w, h); long > ModelImageSide {
		w, h = max(1, w*ModelImageSide/long), max(1, h*ModelImageSide/long)
	}
	dst := image.NewRGBA(image.Rect(0, 0, w, h))
	// JPEG has no transparency: what was transparent becomes white.
	draw.Draw(dst, dst.Bounds(), image.White, image.Point{}, draw.Src)
	xdraw.CatmullRom.Scale(dst, dst.Bounds(), src, src.Bounds(), xdraw.Over, nil)
	var buf bytes.Buffer
	for _, q := range []int{85, 70, 50} {
		buf.Reset()
		if err := jpeg.Encode(&buf, dst, &jpeg.Options{Quality: q}); err != nil {
			return llm.Image{}, fmt.Errorf("encode picture: %w", err)
		}
		if buf.Len() <= ModelImageBytes {
			break
		}
	}
	return llm.Image{MIME: "image/jpeg", Data: buf.Bytes()}, nil
}
