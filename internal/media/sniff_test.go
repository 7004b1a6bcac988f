package media

import "testing"

func TestSniff(t *testing.T) {
	for _, c := range []struct {
		name string
		data string
		want string
	}{
		{"amr", "#!AMR\n\x3c\x00", "audio/amr"},
		{"silk", "#!SILK_V3\x0c\x00", "audio/silk"},
		{"qq silk", "\x02#!SILK_V3\x0c\x00", "audio/silk"},
		{"heic", "\x00\x00\x00\x18ftypheic\x00\x00\x00\x00mif1heic", "image/heic"},
		{"heif", "\x00\x00\x00\x18ftypmif1\x00\x00\x00\x00mif1heic", "image/heif"},
		{"m4a", "\x00\x00\x00\x20ftypM4A \x00\x00\x02\x00M4A mp42isom", "audio/mp4"},
		{"mp4", "\x00\x00\x00\x18ftypmp42\x00\x00\x00\x00mp42isom", "video/mp4"},
		{"png", "\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", "image/png"},
		{"jpeg", "\xff\xd8\xff\xe0\x00\x10JFIF", "image/jpeg"},
		{"gif", "GIF89a\x01\x00", "image/gif"},
		{"webp", "RIFF\x24\x00\x00\x00WEBPVP8 ", "image/webp"},
		{"pdf", "%PDF-1.7\n", "application/pdf"},
		{"html", "<!DOCTYPE html><title>x</title>", "text/html; charset=utf-8"},
		{"empty", "", "text/plain; charset=utf-8"},
		{"binary", "\x00\x01\x02\x03", "application/octet-stream"},
		{"short ftyp", "\x00\x00\x00\x18ftyp", "application/octet-stream"},
	} {
		if got := Sniff([]byte(c.data)); got != c.want {
			t.Errorf("%s: Sniff = %q, want %q", c.name, got, c.want)
		}
	}
}

func TestExt(t *testing.T) {
	for mime, want := range map[string]string{
		"image/png": ".png", "image/jpeg": ".jpg", "IMAGE/JPEG; q=1": ".jpg", "image/gif": ".gif",
		"image/webp": ".webp", "audio/amr": ".amr", "audio/silk": ".silk", "audio/mpeg": ".mp3",
		"audio/ogg": ".ogg", "application/ogg": ".ogg", "audio/wave": ".wav", "audio/x-wav": ".wav",
		"audio/mp4": ".m4a", "audio/x-m4a": ".m4a", "application/pdf": ".pdf", "image/heic": ".heic",
		"text/html; charset=utf-8": ".bin", "application/octet-stream": ".bin", "": ".bin", ";;": ".bin",
	} {
		if got := Ext(mime); got != want {
			t.Errorf("Ext(%q) = %q, want %q", mime, got, want)
		}
	}
}
