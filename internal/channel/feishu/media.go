package feishu

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/pincerbot/pincer/internal/channel"
	"github.com/pincerbot/pincer/internal/msg"
	"github.com/pincerbot/pincer/internal/outbox"
)

// The platform's upload limits.
const (
	// MaxImageUpload caps an image sent as an image message.
	MaxImageUpload = 10 << 20
	// MaxFileUpload caps a file, a voice note or a video.
	MaxFileUpload = 30 << 20
)

// fetchTimeout bounds the plain GET of a media URL when Options.Fetch is
// nil.
const fetchTimeout = time.Minute

// imageExts are the extensions sent as images (the formats the image
// upload takes).
var imageExts = map[string]bool{
	".jpg": true, ".jpeg": true, ".png": true, ".gif": true, ".webp": true, ".bmp": true,
	".heic": true, ".tiff": true, ".tif": true, ".ico": true,
}

// imageMIMEs are the content types of those formats, for a URL whose
// name says nothing.
var imageMIMEs = map[string]bool{
	"image/jpeg": true, "image/png": true, "image/gif": true, "image/webp": true, "image/bmp": true,
	"image/heic": true, "image/tiff": true, "image/x-icon": true, "image/vnd.microsoft.icon": true,
}

// mediaContent is a loaded attachment: its bytes, its name and the MIME
// type a URL's server gave.
type mediaContent struct {
	data []byte
	name string
	mime string
}

// sendMedia uploads the media of part p and posts the message that shows
// it, as a reply when the text parts are replies. A file it cannot read or
// that is over the platform's limit is a permanent error naming it. A
// voice note or a video the platform refuses as such is posted again as a
// plain file, under the same uuid.
func (a *Account) sendMedia(ctx context.Context, out msg.Outbound, m msg.Media, uuid string) (sentMessage, error) {
	msgType, content, err := a.uploadMedia(ctx, m)
	if err != nil {
		if outbox.IsPermanent(err) {
			// The platform's refusals are logged with the others.
			a.log.Error("Feishu media not sent", "peer", out.Peer.String(), "media", mediaLabel(m), "err", err)
		}
		return sentMessage{}, err
	}
	sent, err := a.post(ctx, out, msgType, content, uuid)
	if err != nil && msgType != "file" && msgType != "image" && codeOf(err) == codeInvalidParam {
		a.log.Warn("Feishu refused a "+msgType+" message; sending it as a file", "peer", out.Peer.String(), "media", mediaLabel(m))
		return a.post(ctx, out, "file", content, uuid)
	}
	return sent, err
}

// uploadMedia loads m and uploads it: an image (by kind, extension or
// content type) through the image upload, anything else through the file
// upload. It returns the msg_type and content of the message that shows
// it: image, audio (an Opus voice note), media (an MP4 video) or file.
func (a *Account) uploadMedia(ctx context.Context, m msg.Media) (msgType, content string, err error) {
	label := mediaLabel(m)
	image := m.Kind == msg.MediaImage || imageExts[extOf(m.Name)] || imageExts[extOf(mediaPath(m.URL))]
	limit := int64(MaxFileUpload)
	if image {
		limit = MaxImageUpload
	}
	c, err := a.loadMedia(ctx, m, limit)
	if err != nil {
		return "", "", err
	}
	if !image && m.Kind == "" && imageMIMEs[c.mime] {
		if len(c.data) > MaxImageUpload {
			return "", "", outbox.Permanent(fmt.Errorf("feishu: media %s: %d bytes, over the %d-byte image limit", label, len(c.data), MaxImageUpload))
		}
		image = true
	}
	if image {
		key, err := a.api.uploadImage(ctx, c.name, c.data)
		if err != nil {
			return "", "", fmt.Errorf("feishu: upload image %s: %w", label, err)
		}
		return "image", marshal(map[string]string{"image_key": key}), nil
	}
	ft := fileType(c.name, c.data)
	duration := 0
	switch ft {
	case "opus":
		duration = opusDuration(c.data)
	case "mp4":
		duration = mp4Duration(c.data)
	}
	key, err := a.api.uploadFile(ctx, ft, c.name, duration, c.data)
	if err != nil {
		return "", "", fmt.Errorf("feishu: upload file %s: %w", label, err)
	}
	content = marshal(map[string]string{"file_key": key})
	switch ft {
	case "opus":
		return "audio", content, nil
	case "mp4":
		return "media", content, nil
	}
	return "file", content, nil
}

// loadMedia reads the content of m, at most limit bytes: a local file (an
// absolute path or a file:// URI) or an http(s) URL through Options.Fetch.
// Every failure but an interrupted or timed-out fetch is permanent.
func (a *Account) loadMedia(ctx context.Context, m msg.Media, limit int64) (mediaContent, error) {
	label := mediaLabel(m)
	permanent := func(format string, args ...any) (mediaContent, error) {
		return mediaContent{}, outbox.Permanent(fmt.Errorf("feishu: media %s: "+format, append([]any{label}, args...)...))
	}
	raw := strings.TrimSpace(m.URL)
	lower := strings.ToLower(raw)
	switch {
	case strings.HasPrefix(lower, "http://"), strings.HasPrefix(lower, "https://"):
		fetch := a.opts.Fetch
		if fetch == nil {
			fetch = plainFetch
		}
		b, err := fetch(ctx, raw, limit)
		switch {
		case errors.Is(err, channel.ErrTooLarge):
			return permanent("over the %d-byte limit", limit)
		case err != nil && (ctx.Err() != nil || isTimeout(err)):
			return mediaContent{}, fmt.Errorf("feishu: media %s: %w", label, err)
		case err != nil:
			return permanent("%w", err)
		case int64(len(b.Data)) > limit:
			return permanent("%d bytes, over the %d-byte limit", len(b.Data), limit)
		case len(b.Data) == 0:
			return permanent("empty")
		}
		name := firstNonEmpty(baseName(m.Name), baseName(b.Name), baseName(mediaPath(raw)), defaultMediaName(m.Kind))
		return mediaContent{data: b.Data, name: name, mime: b.MIME}, nil
	case strings.HasPrefix(lower, "file://"):
		u, err := url.Parse(raw)
		if err != nil || (u.Host != "" && u.Host != "localhost") || !filepath.IsAbs(u.Path) {
			return permanent("not a local file URI")
		}
		raw = u.Path
	case !filepath.IsAbs(raw):
		return permanent("neither an http(s) URL nor an absolute path")
	}
	f, err := os.Open(raw)
	if err != nil {
		return permanent("%w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	switch {
	case err != nil:
		return permanent("%w", err)
	case !st.Mode().IsRegular():
		return permanent("not a regular file")
	case st.Size() > limit:
		return permanent("%d bytes, over the %d-byte limit", st.Size(), limit)
	}
	data, tooLarge, err := readLimited(f, limit)
	switch {
	case err != nil:
		return permanent("%w", err)
	case tooLarge:
		return permanent("over the %d-byte limit", limit)
	case len(data) == 0:
		return permanent("empty")
	}
	return mediaContent{data: data, name: firstNonEmpty(baseName(m.Name), filepath.Base(raw))}, nil
}

// isTimeout reports a network timeout, worth trying again.
func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// plainFetch GETs url with no address checks, at most limit bytes: the
// fetcher of tests and development, when Options.Fetch is nil.
func plainFetch(ctx context.Context, rawURL string, limit int64) (channel.Blob, error) {
	ctx, cancel := context.WithTimeout(ctx, fetchTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, rawURL, nil)
	if err != nil {
		return channel.Blob{}, fmt.Errorf("GET: %w", err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return channel.Blob{}, fmt.Errorf("GET: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4<<10))
		return channel.Blob{}, fmt.Errorf("GET: HTTP %s", resp.Status)
	}
	if resp.ContentLength > limit {
		return channel.Blob{}, fmt.Errorf("GET: %w (%d bytes)", channel.ErrTooLarge, resp.ContentLength)
	}
	data, tooLarge, err := readLimited(resp.Body, limit)
	if err != nil {
		return channel.Blob{}, fmt.Errorf("GET: %w", err)
	}
	if tooLarge {
		return channel.Blob{}, fmt.Errorf("GET: %w", channel.ErrTooLarge)
	}
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	return channel.Blob{Data: data, MIME: mt, Name: dispositionName(resp.Header)}, nil
}

// mediaLabel names m in errors and logs: its name, else its URL without
// the query (which may carry an access key) or its path.
func mediaLabel(m msg.Media) string {
	if n := strings.TrimSpace(m.Name); n != "" {
		return fmt.Sprintf("%q", n)
	}
	u := strings.TrimSpace(m.URL)
	if i := strings.IndexAny(u, "?#"); i >= 0 && strings.Contains(u, "://") {
		u = u[:i]
	}
	return fmt.Sprintf("%q", u)
}

// mediaPath is the path part of a media URL or local path.
func mediaPath(raw string) string {
	if strings.Contains(raw, "://") {
		if u, err := url.Parse(raw); err == nil {
			return u.Path
		}
		return ""
	}
	return raw
}

// extOf is the lower-case extension of a file name or path.
func extOf(name string) string { return strings.ToLower(path.Ext(strings.TrimSpace(name))) }

// defaultMediaName names content that came with no name.
func defaultMediaName(k msg.MediaKind) string {
	switch k {
	case msg.MediaImage:
		return "image"
	case msg.MediaAudio:
		return "audio"
	case msg.MediaVideo:
		return "video"
	}
	return "file"
}

// fileType is the platform's file_type of a file: opus for an Opus voice
// note (.opus, or Ogg that holds Opus), mp4, pdf, doc, xls, ppt, else
// stream.
func fileType(name string, data []byte) string {
	switch extOf(name) {
	case ".opus":
		return "opus"
	case ".ogg", ".oga", "":
		if isOggOpus(data) {
			return "opus"
		}
	case ".mp4":
		return "mp4"
	case ".pdf":
		return "pdf"
	case ".doc", ".docx":
		return "doc"
	case ".xls", ".xlsx":
		return "xls"
	case ".ppt", ".pptx":
		return "ppt"
	}
	return "stream"
}

// Ogg page layout: the fixed header is 27 bytes, the segment count at
// offset 26, the granule position at offset 6.
const (
	oggHeader     = 27
	oggSegCount   = 26
	oggGranule    = 6
	opusRate      = 48000
	opusPreSkipAt = 10
)

// isOggOpus reports whether data is an Ogg stream whose first packet is
// an Opus header.
func isOggOpus(data []byte) bool {
	_, ok := opusHead(data)
	return ok
}

// opusHead returns the OpusHead packet of an Ogg Opus stream.
func opusHead(data []byte) ([]byte, bool) {
	if len(data) < oggHeader || !bytes.HasPrefix(data, []byte("OggS")) {
		return nil, false
	}
	off := oggHeader + int(data[oggSegCount])
	if len(data) < off+19 || !bytes.HasPrefix(data[off:], []byte("OpusHead")) {
		return nil, false
	}
	return data[off:], true
}

// opusDuration is the length of an Ogg Opus stream in milliseconds, from
// its last page's granule position less the pre-skip; 0 when unknown.
func opusDuration(data []byte) int {
	head, ok := opusHead(data)
	if !ok {
		return 0
	}
	preSkip := int64(binary.LittleEndian.Uint16(head[opusPreSkipAt:]))
	for end := len(data); end > 0; {
		i := bytes.LastIndex(data[:end], []byte("OggS"))
		if i < 0 {
			return 0
		}
		if len(data)-i < oggHeader {
			end = i
			continue
		}
		g := int64(binary.LittleEndian.Uint64(data[i+oggGranule:]))
		if g <= 0 { // -1: no packet ends on this page
			end = i
			continue
		}
		if g/opusRate > maxDurationMs/1000 {
			return 0
		}
		ms := (g - preSkip) * 1000 / opusRate
		if ms <= 0 || ms > maxDurationMs {
			return 0
		}
		return int(ms)
	}
	return 0
}

// maxDurationMs bounds a plausible media length (a day).
const maxDurationMs = 24 * 3600 * 1000

// mp4Duration is the length of an MP4 video in milliseconds, from its
// movie header (mvhd); 0 when unknown.
func mp4Duration(data []byte) int {
	i := bytes.Index(data, []byte("mvhd"))
	if i < 4 || len(data) < i+8 {
		return 0
	}
	body := data[i+4:]
	var scale, dur uint64
	switch body[0] { // version
	case 0:
		if len(body) < 20 {
			return 0
		}
		scale, dur = uint64(binary.BigEndian.Uint32(body[12:])), uint64(binary.BigEndian.Uint32(body[16:]))
	case 1:
		if len(body) < 32 {
			return 0
		}
		scale, dur = uint64(binary.BigEndian.Uint32(body[20:])), binary.BigEndian.Uint64(body[24:])
	default:
		return 0
	}
	if scale == 0 || dur/scale > maxDurationMs/1000 {
		return 0
	}
	ms := dur/scale*1000 + dur%scale*1000/scale
	if ms == 0 || ms > maxDurationMs {
		return 0
	}
	return int(ms)
}
