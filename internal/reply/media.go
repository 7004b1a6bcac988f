package reply

import (
	"net/url"
	"path"
	"strings"

	"github.com/pincerbot/pincer/internal/msg"
)

// MediaDirective starts a reply line that sends a file instead of saying
// it: "MEDIA: /path/to/chart.png" or "MEDIA: https://example.com/a.pdf".
const MediaDirective = "MEDIA:"

// SplitMedia takes the media lines out of a reply: each line that starts
// with MediaDirective (outside fenced code) names one attachment, by
// local path, file:// URI or http(s) URL, optionally wrapped in backticks,
// quotes or angle brackets. It returns the text without those lines and
// the references in order, de-duplicated.
func SplitMedia(text string) (rest string, refs []string) {
	if !strings.Contains(text, MediaDirective) {
		return text, nil
	}
	lines := strings.Split(text, "\n")
	kept := lines[:0]
	fenced := false
	seen := map[string]bool{}
	for _, line := range lines {
		t := strings.TrimSpace(line)
		if strings.HasPrefix(t, "```") || strings.HasPrefix(t, "~~~") {
			fenced = !fenced
		}
		if fenced || !strings.HasPrefix(t, MediaDirective) {
			kept = append(kept, line)
			continue
		}
		ref := strings.Trim(strings.TrimSpace(t[len(MediaDirective):]), "`'\"<>")
		if ref == "" {
			kept = append(kept, line)
			continue
		}
		if !seen[ref] {
			seen[ref] = true
			refs = append(refs, ref)
		}
	}
	return strings.TrimSpace(strings.Join(kept, "\n")), refs
}

// File extensions by how chats show them: pictures, voice, video; the
// rest are sent as files.
var (
	imageExts = map[string]bool{".jpg": true, ".jpeg": true, ".png": true, ".gif": true, ".webp": true, ".bmp": true, ".heic": true, ".heif": true}
	audioExts = map[string]bool{".mp3": true, ".ogg": true, ".wav": true, ".m4a": true, ".aac": true, ".flac": true, ".amr": true, ".silk": true, ".opus": true}
	videoExts = map[string]bool{".mp4": true, ".mov": true, ".webm": true, ".mkv": true, ".avi": true}
)

// MediaKindOf classifies a reference by its extension (a URL's path's).
func MediaKindOf(ref string) msg.MediaKind {
	p := ref
	if u, err := url.Parse(ref); err == nil && (u.Scheme == "http" || u.Scheme == "https" || u.Scheme == "file") {
		p = u.Path
	}
	switch ext := strings.ToLower(path.Ext(p)); {
	case imageExts[ext]:
		return msg.MediaImage
	case audioExts[ext]:
		return msg.MediaAudio
	case videoExts[ext]:
		return msg.MediaVideo
	}
	return msg.MediaFile
}
