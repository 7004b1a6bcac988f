package onebot

import (
	"cmp"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/pincerbot/pincer/internal/channel"
	"github.com/pincerbot/pincer/internal/channel/onebot/wire"
	"github.com/pincerbot/pincer/internal/msg"
)

var _ channel.Downloader = (*Account)(nil)

// errNothingToFetch: an attachment has neither a URL nor an id to fetch
// it by, or the implementation's answer located no content.
var errNothingToFetch = errors.New("onebot: nothing to fetch the content by")

// Download implements channel.Downloader. It fetches the segment's
// http(s) URL with the account's Fetch; when that fails (QQ's URLs
// expire with their rkey) or there is none, it asks the implementation:
// get_image for an image, get_record (as mp3) for a voice note, get_file
// for a file or a video. The answer's base64 is used first, then its
// file when that path exists on this host, then its url through Fetch.
// Content over limit fails with channel.ErrTooLarge; no more than limit+1
// bytes are read from any source. Errors name the message and the kind
// of media, never a URL's query (which holds the rkey).
func (a *Account) Download(ctx context.Context, att msg.Attachment, limit int64) (channel.Blob, error) {
	seg := att.Segment
	fail := func(err error) (channel.Blob, error) {
		return channel.Blob{}, fmt.Errorf("onebot: download the %s of message %s: %w", seg.Kind, att.Message, err)
	}
	if !msg.IsMedia(seg.Kind) {
		return fail(fmt.Errorf("%w: a %s segment is not media", errNothingToFetch, seg.Kind))
	}
	if seg.Kind == msg.SegVoice && seg.ID != "" {
		// QQ keeps voice as SILK, which speech models do not read: the
		// implementation converts it to mp3 when asked by id.
		if b, err := a.fetchByID(ctx, att, limit); err == nil || errors.Is(err, channel.ErrTooLarge) || ctx.Err() != nil {
			if err != nil {
				return fail(err)
			}
			return b, nil
		}
	}
	var urlErr error
	if isHTTP(seg.URL) {
		b, err := a.fetch(ctx, seg.URL, limit)
		if err == nil {
			return completeBlob(b, att, "", ""), nil
		}
		if errors.Is(err, channel.ErrTooLarge) || ctx.Err() != nil {
			return fail(err)
		}
		urlErr = err
	}
	if seg.ID == "" {
		if urlErr != nil {
			return fail(urlErr)
		}
		return fail(errNothingToFetch)
	}
	b, err := a.fetchByID(ctx, att, limit)
	switch {
	case err == nil:
		return b, nil
	case urlErr != nil && !errors.Is(err, channel.ErrTooLarge):
		return fail(fmt.Errorf("%w; then %w", urlErr, err))
	}
	return fail(err)
}

// fetchByID asks the implementation for an attachment's content by its
// segment's id.
func (a *Account) fetchByID(ctx context.Context, att msg.Attachment, limit int64) (channel.Blob, error) {
	id := att.Segment.ID
	var (
		action string
		params map[string]any
	)
	switch att.Segment.Kind {
	case msg.SegImage:
		action, params = "get_image", map[string]any{"file": id}
	case msg.SegVoice:
		action, params = "get_record", map[string]any{"file": id, "out_format": "mp3"}
	default:
		// NapCat and LLOneBot read either key; both carry the id.
		action, params = "get_file", map[string]any{"file_id": id, "file": id}
	}
	data, err := a.Call(ctx, action, params, 0)
	if err != nil {
		return channel.Blob{}, err
	}
	var ans struct {
		File     string          `json:"file"`
		URL      string          `json:"url"`
		Base64   string          `json:"base64"`
		FileName string          `json:"file_name"`
		FileSize json.RawMessage `json:"file_size"`
	}
	if err := json.Unmarshal(data, &ans); err != nil {
		return channel.Blob{}, fmt.Errorf("%s: %w", action, errUnreadable)
	}
	var size wire.ID
	if size.UnmarshalJSON(ans.FileSize) == nil && size > 0 && int64(size) > limit {
		return channel.Blob{}, fmt.Errorf("%s: %w (%d bytes)", action, channel.ErrTooLarge, size)
	}
	voiceMIME := ""
	if action == "get_record" {
		voiceMIME = "audio/mpeg"
	}
	var errs []error
	if ans.Base64 != "" {
		b, err := decodeBase64(ans.Base64, limit)
		if err == nil {
			return completeBlob(channel.Blob{Data: b}, att, ans.FileName, voiceMIME), nil
		}
		if errors.Is(err, channel.ErrTooLarge) {
			return channel.Blob{}, fmt.Errorf("%s: %w", action, err)
		}
		errs = append(errs, err)
	}
	for _, p := range []string{ans.File, ans.URL} {
		lp, ok := localPath(p)
		if !ok {
			continue
		}
		b, err := readLocal(lp, limit)
		if err == nil {
			return completeBlob(channel.Blob{Data: b}, att, cmp.Or(ans.FileName, filepath.Base(lp)), voiceMIME), nil
		}
		if errors.Is(err, channel.ErrTooLarge) {
			return channel.Blob{}, fmt.Errorf("%s: %w", action, err)
		}
		if !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	if isHTTP(ans.URL) {
		b, err := a.fetch(ctx, ans.URL, limit)
		if err == nil {
			return completeBlob(b, att, ans.FileName, voiceMIME), nil
		}
		if errors.Is(err, channel.ErrTooLarge) {
			return channel.Blob{}, fmt.Errorf("%s: %w", action, err)
		}
		errs = append(errs, err)
	}
	if len(errs) == 0 {
		return channel.Blob{}, fmt.Errorf("%s: %w (no base64, no readable file, no url)", action, errNothingToFetch)
	}
	return channel.Blob{}, fmt.Errorf("%s: %w", action, errors.Join(errs...))
}

// completeBlob completes b with a name and a content type: the segment's name,
// else name; the type the source gave, else sniffed from the content,
// else hint (what the implementation was asked to convert to), else
// guessed from the name's extension.
func completeBlob(b channel.Blob, att msg.Attachment, name, hint string) channel.Blob {
	if b.Name == "" {
		b.Name = cmp.Or(att.Segment.Name, name)
	}
	if b.MIME != "" && b.MIME != "application/octet-stream" {
		return b
	}
	sniffed := http.DetectContentType(b.Data)
	switch {
	case sniffed != "application/octet-stream" && !strings.HasPrefix(sniffed, "text/plain"):
		b.MIME = sniffed
	case hint != "":
		b.MIME = hint
	case mime.TypeByExtension(path.Ext(b.Name)) != "":
		b.MIME = mime.TypeByExtension(path.Ext(b.Name))
	case b.MIME == "":
		b.MIME = sniffed
	}
	return b
}

// fetch downloads u with the account's Fetch (a plain GET when it has
// none). Errors never carry u's query.
func (a *Account) fetch(ctx context.Context, u string, limit int64) (channel.Blob, error) {
	var (
		b   channel.Blob
		err error
	)
	if a.opts.Fetch != nil {
		b, err = a.opts.Fetch(ctx, u, limit)
	} else {
		b, err = plainFetch(ctx, a.opts.httpClient, u, limit)
	}
	if err != nil {
		return channel.Blob{}, fmt.Errorf("fetch %s: %w", redactURL(u), scrubURL(err, u))
	}
	if int64(len(b.Data)) > limit {
		return channel.Blob{}, fmt.Errorf("fetch %s: %w", redactURL(u), channel.ErrTooLarge)
	}
	return b, nil
}

// plainFetch GETs u with client (http.DefaultClient when nil), reading at
// most limit+1 bytes.
func plainFetch(ctx context.Context, client *http.Client, u string, limit int64) (channel.Blob, error) {
	if client == nil {
		client = http.DefaultClient
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return channel.Blob{}, err
	}
	res, err := client.Do(req)
	if err != nil {
		return channel.Blob{}, err
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return channel.Blob{}, fmt.Errorf("HTTP %d", res.StatusCode)
	}
	if res.ContentLength > limit {
		return channel.Blob{}, fmt.Errorf("%w (%d bytes)", channel.ErrTooLarge, res.ContentLength)
	}
	data, err := io.ReadAll(io.LimitReader(res.Body, limit+1))
	if err != nil {
		return channel.Blob{}, err
	}
	if int64(len(data)) > limit {
		return channel.Blob{}, channel.ErrTooLarge
	}
	ct, _, _ := mime.ParseMediaType(res.Header.Get("Content-Type"))
	return channel.Blob{Data: data, MIME: ct}, nil
}

// scrubbed is an error whose text had a URL's query removed; it still
// matches what the original matched.
type scrubbed struct {
	text string
	err  error
}

func (s *scrubbed) Error() string { return s.text }
func (s *scrubbed) Unwrap() error { return s.err }

// scrubURL returns err with every occurrence of u, and of u's query,
// removed from its text (a *url.Error, for one, repeats the whole URL).
func scrubURL(err error, u string) error {
	text := err.Error()
	clean := strings.ReplaceAll(text, u, redactURL(u))
	if p, perr := url.Parse(u); perr == nil && p.RawQuery != "" {
		clean = strings.ReplaceAll(clean, p.RawQuery, "…")
	}
	if clean == text {
		return err
	}
	return &scrubbed{text: clean, err: err}
}

// decodeBase64 decodes an answer's base64 content (with or without a
// base64:// or data: prefix), refusing content over limit before
// decoding it.
func decodeBase64(s string, limit int64) ([]byte, error) {
	s = strings.TrimPrefix(s, "base64://")
	if strings.HasPrefix(s, "data:") {
		if i := strings.IndexByte(s, ','); i >= 0 {
			s = s[i+1:]
		}
	}
	s = strings.TrimRight(s, "\r\n ")
	if int64(len(s)/4*3)-2 > limit {
		return nil, fmt.Errorf("%w (%d base64 characters)", channel.ErrTooLarge, len(s))
	}
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		if b2, err2 := base64.RawStdEncoding.DecodeString(s); err2 == nil {
			b, err = b2, nil
		}
	}
	if err != nil {
		return nil, fmt.Errorf("onebot: malformed base64 content: %w", err)
	}
	if int64(len(b)) > limit {
		return nil, channel.ErrTooLarge
	}
	return b, nil
}

// localPath reads an answer's file or url as a path on this host: an
// absolute path or a file:// URI.
func localPath(s string) (string, bool) {
	if len(s) >= 7 && strings.EqualFold(s[:7], "file://") {
		u, err := url.Parse(s)
		if err != nil || (u.Host != "" && u.Host != "localhost") {
			return "", false
		}
		s = u.Path
	}
	if s == "" || !filepath.IsAbs(s) {
		return "", false
	}
	return filepath.Clean(s), true
}

// readLocal reads a regular file of at most limit bytes.
func readLocal(p string, limit int64) ([]byte, error) {
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", p)
	}
	if fi.Size() > limit {
		return nil, fmt.Errorf("%w (%d bytes)", channel.ErrTooLarge, fi.Size())
	}
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > limit {
		return nil, channel.ErrTooLarge
	}
	return b, nil
}
