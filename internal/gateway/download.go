package gateway

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/pincerbot/pincer/internal/agent"
	"github.com/pincerbot/pincer/internal/channel"
	"github.com/pincerbot/pincer/internal/llm"
	"github.com/pincerbot/pincer/internal/media"
	"github.com/pincerbot/pincer/internal/msg"
)

// downloadToolName is the agent tool that saves a message's attachment.
const downloadToolName = "download_attachment"

// attachmentSource finds what the download tool needs of a channel
// account: reading a message by id, and downloading its media.
type attachmentSource func(ch msg.ChannelID, account msg.AccountID) (channel.Fetcher, channel.Downloader, bool)

// downloadTool is download_attachment(message_id, index?, channel?,
// accountId?): it saves the index-th picture, voice note, video or file of
// a message into the workspace of the chat the message is in, at most
// limit bytes, and answers with the path. Run for a chat, it takes that
// chat's channel and account and only that chat's messages.
func downloadTool(find attachmentSource, chatDir func(msg.Message) string, limit int64) agent.Tool {
	return agent.Tool{
		Spec: llm.Tool{
			Name: downloadToolName,
			Description: "Download a picture, voice note, video or file of a chat message (by its message_id, as a note such as " +
				"[文件 a.pdf: message_id=…] names it) into the chat's workspace; returns the saved path.",
			Parameters: map[string]any{"type": "object", "properties": map[string]any{
				"message_id": map[string]any{"type": "string", "description": "the message's id"},
				"index":      map[string]any{"type": "integer", "description": "which attachment of the message, from 1 (default 1)"},
				"channel":    map[string]any{"type": "string", "description": "the channel of the message, as the message header names it (default \"onebot\")"},
				"accountId":  map[string]any{"type": "string", "description": "the channel account (default \"default\")"},
			}, "required": []string{"message_id"}},
		},
		Call: func(ctx context.Context, raw json.RawMessage) (string, error) {
			var in struct {
				MessageID string `json:"message_id"`
				Index     int    `json:"index"`
				Channel   string `json:"channel"`
				AccountID string `json:"accountId"`
			}
			if err := json.Unmarshal(raw, &in); err != nil {
				return agent.Failed(fmt.Errorf("arguments: %w", err))
			}
			ch, acct := msg.ChannelID(strings.TrimSpace(in.Channel)), msg.AccountID(strings.TrimSpace(in.AccountID))
			chat, inChat := agent.ChatOf(ctx)
			if ch == "" {
				ch = chat.Channel
			}
			if ch == "" {
				ch = "onebot"
			}
			if acct == "" {
				acct = chat.Account
			}
			if acct == "" {
				acct = msg.DefaultAccount
			}
			if inChat && (ch != chat.Channel || acct != chat.Account) {
				return agent.Failed(fmt.Errorf("only this chat's attachments can be downloaded here (%s, account %s)", chat.Channel, chat.Account))
			}
			f, d, ok := find(ch, acct)
			if ok && f == nil {
				return agent.Failed(fmt.Errorf("%s attachments are downloaded with that channel's own tool", ch))
			}
			if !ok {
				return agent.Failed(fmt.Errorf("no %s account %q that can download attachments", ch, acct))
			}
			var peer *msg.Peer
			if inChat {
				peer = &chat.Peer
			}
			path, size, err := saveAttachment(ctx, f, d, chatDir, peer, msg.MessageID(strings.TrimSpace(in.MessageID)), max(in.Index, 1), limit)
			if err != nil {
				return agent.Failed(err)
			}
			b, _ := json.Marshal(map[string]any{"status": "ok", "path": path, "bytes": size})
			return string(b), nil
		},
	}
}

// saveAttachment downloads attachment index (from 1) of message id and
// writes it under the chat's downloads directory; peer, when set, is the
// chat the message must be from.
func saveAttachment(ctx context.Context, f channel.Fetcher, d channel.Downloader, chatDir func(msg.Message) string, peer *msg.Peer, id msg.MessageID, index int, limit int64) (string, int, error) {
	if id == "" {
		return "", 0, errors.New("message_id is empty")
	}
	m, err := f.FetchMessage(ctx, id)
	if err != nil {
		return "", 0, fmt.Errorf("message %s: %w", id, err)
	}
	if peer != nil && m.Peer != *peer {
		// One chat's files are not fetched into another.
		return "", 0, fmt.Errorf("message %s is not from this chat", id)
	}
	atts := m.Attachments(msg.AttachedHere)
	if len(atts) == 0 {
		return "", 0, fmt.Errorf("message %s has no picture, voice note, video or file", id)
	}
	if index > len(atts) {
		return "", 0, fmt.Errorf("message %s has %d attachment(s), not %d", id, len(atts), index)
	}
	a := atts[index-1]
	b, err := d.Download(ctx, a, limit)
	if errors.Is(err, channel.ErrTooLarge) {
		return "", 0, fmt.Errorf("the attachment is over the %d-byte limit", limit)
	}
	if err != nil {
		return "", 0, fmt.Errorf("download: %w", err)
	}
	name := fileName(cmp.Or(b.Name, a.Segment.Name), string(id), index, cmp.Or(b.MIME, media.Sniff(b.Data)))
	dir := filepath.Join(chatDir(m), "downloads")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", 0, fmt.Errorf("save: %w", err)
	}
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, b.Data, 0o600); err != nil {
		return "", 0, fmt.Errorf("save: %w", err)
	}
	return path, len(b.Data), nil
}

// fileName is a safe file name for a download: the platform's name, else
// the message id and index with the extension of its type (media.Ext).
func fileName(name, id string, index int, typ string) string {
	if name = safeName(filepath.Base(name)); name != "" && name != "." {
		return name
	}
	return safeName(fmt.Sprintf("%s-%d", id, index)) + media.Ext(typ)
}

// safeName keeps the characters of a name that are safe in a file name:
// letters and digits of any script, '-', '_' and '.', at most 120 bytes;
// no leading dot.
func safeName(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '-' || r == '_' || r == '.' || r != utf8.RuneError && (unicode.IsLetter(r) || unicode.IsDigit(r)):
			if b.Len()+len(string(r)) > 120 {
				return strings.TrimLeft(b.String(), ".")
			}
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	return strings.TrimLeft(b.String(), ".")
}
