package feishu

import (
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
	"github.com/pincerbot/pincer/internal/msg"
)

// DownloadToolName is the agent tool that saves a message's attachment.
const DownloadToolName = "feishu_download_file"

// MaxDownload caps one downloaded attachment.
const MaxDownload = 20 << 20

// Lookup finds an account by id.
type Lookup func(id msg.AccountID) (*Account, bool)

// DownloadTool is feishu_download_file(message_id, file_key?): it saves
// the image or file of a message (a child of a merged forward included,
// by the child's id as the excerpt shows it) into the chat's workspace
// and answers with the path. Run for a chat, it takes that chat's
// account and only that chat's messages, as download_attachment does.
func DownloadTool(lookup Lookup) agent.Tool {
	return agent.Tool{
		Spec: llm.Tool{
			Name: DownloadToolName,
			Description: "Download the image or file of a Feishu message (the msg=<id> of a placeholder such as [图片 msg=om_…] or " +
				"[文件 a.pdf msg=om_…]) into the chat's workspace; returns the saved path.",
			Parameters: map[string]any{"type": "object", "properties": map[string]any{
				"message_id": map[string]any{"type": "string", "description": "the message id (om_…)"},
				"file_key":   map[string]any{"type": "string", "description": "the image_key or file_key, when the message has several"},
				"accountId":  map[string]any{"type": "string", "description": "Feishu app account (default \"default\")"},
			}, "required": []string{"message_id"}},
		},
		Call: func(ctx context.Context, raw json.RawMessage) (string, error) {
			var in struct {
				MessageID string `json:"message_id"`
				FileKey   string `json:"file_key"`
				AccountID string `json:"accountId"`
			}
			if err := json.Unmarshal(raw, &in); err != nil {
				return agent.Failed(fmt.Errorf("arguments: %w", err))
			}
			id := msg.AccountID(strings.TrimSpace(in.AccountID))
			chat, inChat := agent.ChatOf(ctx)
			if id == "" && inChat {
				id = chat.Account
			}
			if id == "" {
				id = msg.DefaultAccount
			}
			var only *msg.Peer
			if inChat {
				// Run for a chat, the tool fetches only that chat's files.
				if chat.Channel != ChannelID || chat.Account != id {
					return agent.Failed(fmt.Errorf("only this chat's files can be downloaded here (%s, account %s)", chat.Channel, chat.Account))
				}
				only = &chat.Peer
			}
			a, ok := lookup(id)
			if !ok {
				return agent.Failed(fmt.Errorf("no Feishu account %q", id))
			}
			path, size, err := a.download(ctx, strings.TrimSpace(in.MessageID), strings.TrimSpace(in.FileKey), only)
			if err != nil {
				return agent.Failed(err)
			}
			b, _ := json.Marshal(map[string]any{"status": "ok", "path": path, "bytes": size})
			return string(b), nil
		},
	}
}

// download saves the attachment of message id (key picks one) and returns
// where. A child of a merged forward is downloaded by its own id, then,
// when the platform says the file is not in it (234003), through the
// forward holding it. only, when set, is the chat the message (or the
// forward holding it) must be in.
func (a *Account) download(ctx context.Context, id, key string, only *msg.Peer) (string, int, error) {
	it, ref, err := a.lookupResource(ctx, id)
	if err != nil {
		return "", 0, err
	}
	if key == "" {
		key = ref.key
	}
	if key == "" {
		return "", 0, fmt.Errorf("message %s (%s) names no file_key", id, it.MsgType)
	}
	if a.opts.Workspace == nil {
		return "", 0, errors.New("no workspace to save into")
	}
	chat := it.ChatID
	for up, hops := it.UpperMessageID, 0; chat == "" && up != "" && hops < maxForwardHops; hops++ {
		parents, err := a.api.getMessage(ctx, up)
		if err != nil || len(parents) == 0 {
			break
		}
		chat, up = parents[0].ChatID, parents[0].UpperMessageID
	}
	peer := msg.Peer{Kind: msg.Group, ID: "unknown-chat"}
	if chat != "" {
		peer = a.peerOf(chat)
	}
	if only != nil && (chat == "" || peer != *only) {
		// One chat's files are not fetched into another.
		return "", 0, fmt.Errorf("message %s is not from this chat", id)
	}
	body, _, err := a.fetchResource(ctx, id, &it, key, ref.kind, MaxDownload)
	if errors.Is(err, channel.ErrTooLarge) {
		return "", 0, fmt.Errorf("the attachment of %s is over the %d-byte limit", id, MaxDownload)
	}
	if err != nil {
		return "", 0, fmt.Errorf("download %s: %w", id, err)
	}
	dir := filepath.Join(a.opts.Workspace(peer), "downloads")
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return "", 0, fmt.Errorf("workspace: %w", err)
	}
	name := ref.name
	if name == "" {
		name = key
		if ref.kind == resourceImage {
			name += ".png"
		}
	}
	path := filepath.Join(dir, fileSafe(id)+"-"+fileSafe(filepath.Base(name)))
	if err := os.WriteFile(path, body, 0o640); err != nil {
		return "", 0, fmt.Errorf("save: %w", err)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		abs = path
	}
	return abs, len(body), nil
}

// maxNameBytes bounds a saved file's name part.
const maxNameBytes = 120

// ChatWorkspace is Options.Workspace for the chats of account under root:
// root/feishu/<account>/<chat id>, or private-<open_id> for a direct chat,
// each made safe as a file name.
func ChatWorkspace(root string, account msg.AccountID) func(msg.Peer) string {
	return func(p msg.Peer) string {
		dir := p.ID
		if p.Kind == msg.Direct {
			dir = "private-" + p.ID
		}
		return filepath.Join(root, string(ChannelID), fileSafe(string(account)), fileSafe(dir))
	}
}

// fileSafe keeps the characters of a name that are safe in a file name,
// at most maxNameBytes bytes of it (its extension kept).
func fileSafe(s string) string {
	out := strings.Map(func(r rune) rune {
		switch {
		case r == '-' || r == '_' || r == '.' || (r >= '0' && r <= '9') || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z'):
			return r
		case r > 0x7f && unicode.IsPrint(r) && !unicode.IsSpace(r) && r != utf8.RuneError:
			return r
		}
		return '_'
	}, s)
	out = strings.TrimLeft(out, ".")
	if len(out) > maxNameBytes {
		ext := filepath.Ext(out)
		if len(ext) > 16 {
			ext = ""
		}
		head := out[:maxNameBytes-len(ext)]
		for len(head) > 0 && !utf8.ValidString(head) {
			head = head[:len(head)-1]
		}
		out = head + ext
	}
	if out == "" {
		return "_"
	}
	return out
}
