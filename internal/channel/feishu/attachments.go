package feishu

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"path"
	"strings"

	"github.com/pincerbot/pincer/internal/channel"
	"github.com/pincerbot/pincer/internal/channel/feishu/larkmsg"
	"github.com/pincerbot/pincer/internal/msg"
)

// Resource types of the message resource API.
const (
	resourceImage = "image"
	resourceFile  = "file"
)

// codeFileNotInMessage: the resource is not reachable through this id
// (a child of a merged forward, whose container's id works).
const codeFileNotInMessage = 234003

// maxForwardHops bounds the walk up from a forward's child to the
// forwards holding it.
const maxForwardHops = 4

// resourceRef is what of a message can be downloaded: the resource type
// (image or file), the file name and the key its content names.
type resourceRef struct {
	kind, name, key string
}

// resourceOf is the downloadable resource of an item; kind is "" when it
// has none (a text, a post, a sticker, a folder).
func resourceOf(it larkmsg.Item) resourceRef {
	var c struct {
		ImageKey string `json:"image_key"`
		FileKey  string `json:"file_key"`
		FileName string `json:"file_name"`
	}
	_ = json.Unmarshal([]byte(it.Body.Content), &c)
	switch it.MsgType {
	case "image":
		return resourceRef{kind: resourceImage, key: c.ImageKey}
	case "file", "audio", "media", "video":
		return resourceRef{kind: resourceFile, name: c.FileName, key: c.FileKey}
	}
	return resourceRef{}
}

// lookupResource reads message id and what of it can be downloaded; a
// recalled message, a sticker, a folder or a message with no image or
// file is an error saying so. The key may be empty when the content names
// none.
func (a *Account) lookupResource(ctx context.Context, id string) (larkmsg.Item, resourceRef, error) {
	if !strings.HasPrefix(id, "om_") {
		return larkmsg.Item{}, resourceRef{}, fmt.Errorf("message_id %q: want an om_ id", id)
	}
	items, err := a.api.getMessage(ctx, id)
	if err != nil {
		return larkmsg.Item{}, resourceRef{}, fmt.Errorf("message %s: %w", id, err)
	}
	if len(items) == 0 {
		return larkmsg.Item{}, resourceRef{}, fmt.Errorf("message %s: not found", id)
	}
	it := items[0]
	ref := resourceOf(it)
	switch {
	case it.Deleted:
		return it, ref, fmt.Errorf("message %s was recalled", id)
	case it.MsgType == "sticker":
		return it, ref, fmt.Errorf("message %s is a sticker: the platform does not let stickers be downloaded", id)
	case it.MsgType == "folder":
		return it, ref, fmt.Errorf("message %s is a folder: the platform does not let folders be downloaded", id)
	case ref.kind == "":
		return it, ref, fmt.Errorf("message %s (%s) has no image or file to download", id, it.MsgType)
	}
	return it, ref, nil
}

// fetchResource downloads the resource key (of type kind) of message id,
// at most limit bytes. When the platform says it is not in that message
// (234003, a child of a merged forward) it is asked for through the
// forwards holding the message, innermost first; it, the message as read
// already, saves reading it again.
func (a *Account) fetchResource(ctx context.Context, id string, it *larkmsg.Item, key, kind string, limit int64) ([]byte, http.Header, error) {
	body, h, err := a.api.resource(ctx, id, key, kind, limit)
	for hops := 0; codeOf(err) == codeFileNotInMessage && hops < maxForwardHops; hops++ {
		if it == nil || it.MessageID != id {
			items, gerr := a.api.getMessage(ctx, id)
			if gerr != nil || len(items) == 0 {
				return nil, nil, err
			}
			it = &items[0]
		}
		if it.UpperMessageID == "" {
			return nil, nil, err
		}
		id = it.UpperMessageID
		body, h, err = a.api.resource(ctx, id, key, kind, limit)
	}
	return body, h, err
}

var _ channel.Downloader = (*Account)(nil)

// Download implements channel.Downloader: the content of an image, voice
// note, video or file of message a.Message (a merged forward's child by
// its own id). Segment.ID is the image_key or file_key to fetch, as
// normalize sets it; an empty one, or a message id, is looked up in the
// message. Content over limit bytes fails with channel.ErrTooLarge. The
// MIME type is the platform's Content-Type (sniffed from the content when
// it says only octet-stream), the name its Content-Disposition, else the
// segment's or the message's file name.
func (a *Account) Download(ctx context.Context, att msg.Attachment, limit int64) (channel.Blob, error) {
	id := string(att.Message)
	switch {
	case att.Channel != "" && att.Channel != ChannelID:
		return channel.Blob{}, fmt.Errorf("feishu: download: an attachment of channel %s", att.Channel)
	case att.Account != "" && att.Account != a.opts.ID:
		return channel.Blob{}, fmt.Errorf("feishu: download: an attachment of account %s, not %s", att.Account, a.opts.ID)
	case !msg.IsMedia(att.Segment.Kind):
		return channel.Blob{}, fmt.Errorf("feishu: download %s: a %s segment is not media", id, att.Segment.Kind)
	case !strings.HasPrefix(id, "om_"):
		return channel.Blob{}, fmt.Errorf("feishu: download: message id %q: want an om_ id", id)
	}
	limit = max(limit, 0)
	key, name := att.Segment.ID, att.Segment.Name
	kind := resourceFile
	if att.Segment.Kind == msg.SegImage {
		kind = resourceImage
	}
	var it *larkmsg.Item
	if key == "" || strings.HasPrefix(key, "om_") {
		item, ref, err := a.lookupResource(ctx, id)
		if err != nil {
			return channel.Blob{}, fmt.Errorf("feishu: download: %w", err)
		}
		if ref.key == "" {
			return channel.Blob{}, fmt.Errorf("feishu: download: message %s (%s) names no file_key", id, item.MsgType)
		}
		it, key, kind = &item, ref.key, ref.kind
		name = firstNonEmpty(name, ref.name)
	}
	body, h, err := a.fetchResource(ctx, id, it, key, kind, limit)
	if err != nil {
		if errors.Is(err, channel.ErrTooLarge) {
			return channel.Blob{}, fmt.Errorf("feishu: download %s: %w (limit %d bytes)", id, channel.ErrTooLarge, limit)
		}
		return channel.Blob{}, fmt.Errorf("feishu: download %s: %w", id, err)
	}
	return channel.Blob{Data: body, MIME: blobMIME(h, body), Name: firstNonEmpty(dispositionName(h), baseName(name))}, nil
}

// blobMIME is the media type of a downloaded body: the Content-Type the
// platform sent, or what the content looks like when that says nothing
// more than octet-stream.
func blobMIME(h http.Header, body []byte) string {
	mt, _, err := mime.ParseMediaType(h.Get("Content-Type"))
	if err == nil && mt != "" && mt != "application/octet-stream" {
		return mt
	}
	if len(body) > 0 {
		if sniffed, _, err := mime.ParseMediaType(http.DetectContentType(body)); err == nil && sniffed != "application/octet-stream" {
			return sniffed
		}
	}
	if err != nil {
		return ""
	}
	return mt
}

// dispositionName is the file name a Content-Disposition header gives,
// without any directory.
func dispositionName(h http.Header) string {
	cd := h.Get("Content-Disposition")
	if cd == "" {
		return ""
	}
	_, params, err := mime.ParseMediaType(cd)
	if err != nil {
		return ""
	}
	return baseName(params["filename"])
}

// baseName is the last element of a file name that may carry a path
// (with either slash); "" for none.
func baseName(name string) string {
	name = strings.TrimSpace(strings.ReplaceAll(name, "\\", "/"))
	if name == "" {
		return ""
	}
	b := path.Base(name)
	if b == "." || b == "/" || b == ".." {
		return ""
	}
	return b
}
