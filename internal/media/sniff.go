package media

import (
	"bytes"
	"net/http"
)

// Sniff returns the MIME type of data: the audio formats of chat apps
// (AMR, and SILK with or without the leading 0x02 byte QQ and WeChat
// write, as "audio/silk"), HEIC/HEIF images and M4A audio, else what
// http.DetectContentType says ("application/octet-stream" when nothing
// matches).
func Sniff(data []byte) string {
	switch {
	case bytes.HasPrefix(data, []byte("#!AMR")):
		return "audio/amr"
	case bytes.HasPrefix(data, []byte("#!SILK_V3")), bytes.HasPrefix(data, []byte("\x02#!SILK_V3")):
		return "audio/silk"
	}
	if t := isoBrand(data); t != "" {
		return t
	}
	return http.DetectContentType(data)
}

// isoBrand types an ISO base media file (ftyp box first) by its major
// brand, for the brands http.DetectContentType does not know.
func isoBrand(data []byte) string {
	if len(data) < 12 || !bytes.Equal(data[4:8], []byte("ftyp")) {
		return ""
	}
	switch string(data[8:12]) {
	case "heic", "heix", "hevc", "hevx", "heim", "heis":
		return "image/heic"
	case "mif1", "msf1", "heif":
		return "image/heif"
	case "avif", "avis":
		return "image/avif"
	case "M4A ", "M4B ":
		return "audio/mp4"
	}
	return ""
}

// Ext returns the file extension, with its dot, for a MIME type (parameters
// allowed): ".png", ".jpg", ".gif", ".webp", ".heic", ".heif", ".amr",
// ".silk", ".mp3", ".ogg", ".wav", ".m4a", ".mp4", ".pdf", else ".bin".
func Ext(mimeType string) string {
	switch mediaType(mimeType) {
	case "image/png":
		return ".png"
	case "image/jpeg", "image/jpg", "image/pjpeg":
		return ".jpg"
	case "image/gif":
		return ".gif"
	case "image/webp":
		return ".webp"
	case "image/heic":
		return ".heic"
	case "image/heif":
		return ".heif"
	case "audio/amr":
		return ".amr"
	case "audio/silk":
		return ".silk"
	case "audio/mpeg", "audio/mp3":
		return ".mp3"
	case "audio/ogg", "application/ogg", "audio/opus":
		return ".ogg"
	case "audio/wav", "audio/wave", "audio/x-wav", "audio/vnd.wave":
		return ".wav"
	case "audio/mp4", "audio/m4a", "audio/x-m4a":
		return ".m4a"
	case "video/mp4":
		return ".mp4"
	case "application/pdf":
		return ".pdf"
	}
	return ".bin"
}
