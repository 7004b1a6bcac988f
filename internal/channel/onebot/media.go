package onebot

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/pincerbot/pincer/internal/msg"
)

// DefaultInlineMediaLimit is the largest local file sent inline (as
// base64://) when AccountOptions.InlineLocalMedia is set and
// InlineMediaLimit is not.
const DefaultInlineMediaLimit = 10 << 20

// mediaTimeout bounds one media send: the implementation reads or
// downloads the file and uploads it to QQ before it answers.
const mediaTimeout = 2 * time.Minute

// errBadMedia: an outbound media item cannot be sent at all (its local
// file is missing, or its location is not a URL or an absolute path).
var errBadMedia = errors.New("onebot: media cannot be sent")

// mediaOptions say how local media files reach the implementation.
type mediaOptions struct {
	// Inline sends local files as base64:// data instead of file:// URIs
	// (local paths for uploads).
	Inline bool
	// InlineLimit is the largest file sent inline; larger ones go by path
	// with a warning. DefaultInlineMediaLimit when 0.
	InlineLimit int64
	// Log takes the warning about a file too large to inline.
	Log *slog.Logger
}

// mediaSegmentType is the segment type m goes as ("image" or "record"),
// or "" when it is uploaded as a file, as a video is: its kind decides,
// and a file (or a kindless item) whose location or name has an image or
// audio extension (msg.MediaKindOf) goes as an image or a voice message.
func mediaSegmentType(m msg.Media) string {
	kinds := []msg.MediaKind{m.Kind}
	if m.Kind == "" || m.Kind == msg.MediaFile {
		kinds = []msg.MediaKind{msg.MediaKindOf(m.URL), msg.MediaKindOf(m.Name)}
	}
	for _, k := range kinds {
		switch k {
		case msg.MediaImage:
			return "image"
		case msg.MediaAudio:
			return "record"
		}
	}
	return ""
}

// mediaLocation is where an outbound media item is: a remote http(s) URL
// the implementation fetches itself, or a local file.
type mediaLocation struct {
	remote string
	path   string
}

// locate reads a media URL: an http(s) URL, an absolute local path or a
// file:// URI. A local file must exist and be a regular file.
func locate(raw string) (mediaLocation, error) {
	if isHTTP(raw) {
		return mediaLocation{remote: raw}, nil
	}
	p := raw
	if len(raw) >= 7 && strings.EqualFold(raw[:7], "file://") {
		u, err := url.Parse(raw)
		if err != nil || (u.Host != "" && u.Host != "localhost") {
			return mediaLocation{}, fmt.Errorf("%w: %q is not a local file URI", errBadMedia, raw)
		}
		p = u.Path
	}
	if !filepath.IsAbs(p) {
		return mediaLocation{}, fmt.Errorf("%w: %q is neither an http(s) URL nor an absolute path", errBadMedia, redactURL(raw))
	}
	p = filepath.Clean(p)
	fi, err := os.Stat(p)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return mediaLocation{}, fmt.Errorf("%w: %s does not exist", errBadMedia, p)
	case err != nil:
		return mediaLocation{}, fmt.Errorf("%w: %v", errBadMedia, err)
	case !fi.Mode().IsRegular():
		return mediaLocation{}, fmt.Errorf("%w: %s is not a regular file", errBadMedia, p)
	}
	return mediaLocation{path: p}, nil
}

// isHTTP reports whether s is an http or https URL.
func isHTTP(s string) bool {
	i := strings.Index(s, "://")
	if i < 0 {
		return false
	}
	scheme := strings.ToLower(s[:i])
	return scheme == "http" || scheme == "https"
}

// fileURI is the file:// URI of an absolute path. Only what would end or
// break the URI's path is escaped ('%', '?', '#' and control
// characters): implementations that strip the scheme by hand still find
// a file whose name has spaces or CJK characters, and the ones that parse
// the URI decode the escapes.
func fileURI(p string) string {
	var b strings.Builder
	b.WriteString("file://")
	for i := 0; i < len(p); i++ {
		c := p[i]
		if c == '%' || c == '?' || c == '#' || c < 0x20 || c == 0x7f {
			fmt.Fprintf(&b, "%%%02X", c)
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}

// inline reads a local file as base64:// data when inlining is on and the
// file fits the limit; ok is false otherwise (the caller sends it by
// path). A file over the limit is logged.
func (o mediaOptions) inline(p string) (data string, ok bool, err error) {
	if !o.Inline {
		return "", false, nil
	}
	limit := o.InlineLimit
	if limit <= 0 {
		limit = DefaultInlineMediaLimit
	}
	f, err := os.Open(p)
	if err != nil {
		return "", false, fmt.Errorf("%w: %v", errBadMedia, err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return "", false, fmt.Errorf("%w: reading %s: %v", errBadMedia, p, err)
	}
	if int64(len(b)) > limit {
		if o.Log != nil {
			o.Log.Warn("media file too large to send inline; sending its path, which the implementation must be able to read", "path", p, "limit", limit)
		}
		return "", false, nil
	}
	return "base64://" + base64.StdEncoding.EncodeToString(b), true, nil
}

// segmentFile is the file value of a media segment for loc: the URL as
// is, else base64:// data or a file:// URI.
func (o mediaOptions) segmentFile(loc mediaLocation) (string, error) {
	if loc.remote != "" {
		return loc.remote, nil
	}
	data, ok, err := o.inline(loc.path)
	if err != nil || ok {
		return data, err
	}
	return fileURI(loc.path), nil
}

// uploadFile is the file value of an upload for loc: the URL as is, else
// base64:// data or the local path.
func (o mediaOptions) uploadFile(loc mediaLocation) (string, error) {
	if loc.remote != "" {
		return loc.remote, nil
	}
	data, ok, err := o.inline(loc.path)
	if err != nil || ok {
		return data, err
	}
	return loc.path, nil
}

// uploadName is the name a file is uploaded under: the media's name, else
// the base name of its location (a URL's path, unescaped).
func uploadName(m msg.Media, loc mediaLocation) string {
	if m.Name != "" {
		return m.Name
	}
	if loc.path != "" {
		return filepath.Base(loc.path)
	}
	if u, err := url.Parse(loc.remote); err == nil {
		if base := path.Base(u.Path); base != "/" && base != "." {
			return base
		}
		return u.Host
	}
	return "file"
}

// uploadAction is the upload action and its target params for a chat.
func uploadAction(p msg.Peer) string {
	if p.Kind == msg.Group {
		return "upload_group_file"
	}
	return "upload_private_file"
}

// carriesReply reports whether a part may carry the reply segment: text
// and images can quote; voice, video and files go as messages of their
// own that cannot.
func carriesReply(segType string) bool { return segType == "image" }

// sendMedia sends one media item as part i of out: a message with its
// segment (and the reply segment when reply is set), or an upload. It
// returns the message id the implementation gave, if any.
func (s *chunkSender) sendMedia(ctx context.Context, out msg.Outbound, m msg.Media, action string, target chatTarget, reply bool) (msg.MessageID, error) {
	loc, err := locate(m.URL)
	if err != nil {
		return "", err
	}
	typ := mediaSegmentType(m)
	if typ == "" {
		file, err := s.Media.uploadFile(loc)
		if err != nil {
			return "", err
		}
		params := map[string]any{"file": file, "name": uploadName(m, loc), target.key: target.id}
		if _, err := s.Caller.Call(ctx, uploadAction(out.Peer), params, mediaTimeout); err != nil {
			return "", err
		}
		return "", nil
	}
	file, err := s.Media.segmentFile(loc)
	if err != nil {
		return "", err
	}
	return s.sendMessage(ctx, action, target, out.ReplyTo, reply, mediaSegment(typ, file), mediaTimeout)
}

// describeMedia names a media item in errors and logs: its local path, or
// its URL without the query (which may hold a token).
func describeMedia(m msg.Media) string {
	if isHTTP(m.URL) {
		return redactURL(m.URL)
	}
	return m.URL
}

// redactURL is u without its query and fragment, which may carry tokens
// (QQ's rkey); anything that does not parse is cut at the first '?'.
func redactURL(u string) string {
	if p, err := url.Parse(u); err == nil {
		p.RawQuery, p.Fragment, p.RawFragment, p.User = "", "", "", nil
		p.ForceQuery = false
		return p.String()
	}
	if i := strings.IndexAny(u, "?#"); i >= 0 {
		return u[:i]
	}
	return u
}
