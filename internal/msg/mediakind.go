package msg

import (
	"net/url"
	"path"
	"strings"
)

// File extensions by how chats show them: pictures, voice, video; the
// rest are sent as files.
var (
	imageExts = map[string]bool{".jpg": true, ".jpeg": true, ".png": true, ".gif": true, ".webp": true, ".bmp": true, ".heic": true, ".heif": true}
	audioExts = map[string]bool{".mp3": true, ".ogg": true, ".wav": true, ".m4a": true, ".aac": true, ".flac": true, ".amr": true, ".silk": true, ".opus": true}
	videoExts = map[string]bool{".mp4": true, ".mov": true, ".webm": true, ".mkv": true, ".avi": true}
)

// MediaKindOf classifies a medium by the extension of its reference (a
// URL's path's, a file's name): pictures and audio as the reference
// behaviour lists them, and video; anything else is a file.
func MediaKindOf(ref string) MediaKind {
	p := ref
	if u, err := url.Parse(ref); err == nil && (u.Scheme == "http" || u.Scheme == "https" || u.Scheme == "file") {
		p = u.Path
	}
	switch ext := strings.ToLower(path.Ext(p)); {
	case imageExts[ext]:
		return MediaImage
	case audioExts[ext]:
		return MediaAudio
	case videoExts[ext]:
		return MediaVideo
	}
	return MediaFile
}
