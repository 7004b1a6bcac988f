package media

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"testing"

	"golang.org/x/image/bmp"
)

func encodePNG(t *testing.T, w, h int) []byte {
	t.Helper()
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	for x := range w {
		img.Set(x, x%h, color.NRGBA{R: uint8(x), A: 255})
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestFitForModel: small pictures of the types models take pass as they
// are; a wide one is scaled down to fit and sent as JPEG; a BMP becomes a
// JPEG; HEIC, junk and a header claiming billions of pixels are refused.
func TestFitForModel(t *testing.T) {
	small := encodePNG(t, 40, 30)
	got, err := FitForModel(small)
	if err != nil || got.MIME != "image/png" || !bytes.Equal(got.Data, small) {
		t.Fatalf("small PNG: %s %d bytes, %v", got.MIME, len(got.Data), err)
	}

	wide, err := FitForModel(encodePNG(t, 3000, 20))
	if err != nil || wide.MIME != "image/jpeg" {
		t.Fatalf("wide PNG: %s, %v", wide.MIME, err)
	}
	cfg, err := jpeg.DecodeConfig(bytes.NewReader(wide.Data))
	if err != nil || cfg.Width != ModelImageSide || cfg.Height != 20*ModelImageSide/3000 {
		t.Errorf("scaled to %dx%d, %v", cfg.Width, cfg.Height, err)
	}

	var b bytes.Buffer
	if err := bmp.Encode(&b, image.NewRGBA(image.Rect(0, 0, 8, 8))); err != nil {
		t.Fatal(err)
	}
	if got, err := FitForModel(b.Bytes()); err != nil || got.MIME != "image/jpeg" {
		t.Errorf("BMP: %s, %v", got.MIME, err)
	}

	heic := append([]byte{0, 0, 0, 24}, []byte("ftypheic\x00\x00\x00\x00mif1heic")...)
	for name, data := range map[string][]byte{"heic": heic, "junk": []byte("not a picture"), "empty": nil} {
		if _, err := FitForModel(data); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	if _, err := FitForModel(bombPNG(100000, 100000)); !errors.Is(err, ErrImageTooLarge) {
		t.Errorf("bomb: %v, want ErrImageTooLarge", err)
	}
}

// bombPNG is a PNG signature and header claiming w×h pixels, with no data.
func bombPNG(w, h uint32) []byte {
	var ihdr [13]byte
	binary.BigEndian.PutUint32(ihdr[0:], w)
	binary.BigEndian.PutUint32(ihdr[4:], h)
	ihdr[8], ihdr[9] = 8, 6 // 8-bit RGBA
	var out bytes.Buffer
	out.WriteString("\x89PNG\r\n\x1a\n")
	binary.Write(&out, binary.BigEndian, uint32(len(ihdr)))
	chunk := append([]byte("IHDR"), ihdr[:]...)
	out.Write(chunk)
	binary.Write(&out, binary.BigEndian, crc32.ChecksumIEEE(chunk))
	return out.Bytes()
}

func FuzzFitForModel(f *testing.F) {
	f.Add([]byte("\x89PNG\r\n\x1a\n"))
	f.Add(bombPNG(3, 3))
	f.Fuzz(func(t *testing.T, data []byte) {
		got, err := FitForModel(data)
		if err == nil && (!ModelTypes[got.MIME] || len(got.Data) == 0) {
			t.Fatalf("accepted as %q with %d bytes", got.MIME, len(got.Data))
		}
	})
}
