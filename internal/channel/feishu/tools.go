package feishu

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/pincerbot/pincer/internal/agent"
	"github.com/pincerbot/pincer/internal/channel/feishu/larkmsg"
	"github.com/pincerbot/pincer/internal/llm"
	"github.com/pincerbot/pincer/internal/msg"
)

// DownloadToolName is the agent tool that saves a message's attachment.
const DownloadToolName = "feishu_download_file"

// MaxDownload caps one downloaded attachment.
const MaxDownload = 20 << 20

// codeFileNotInMessage: the resource is not reachable through this id
// (a child of a merged forward, whose container's id works).
const codeFileNotInMessage = 234003

// Lookup finds an account by id.
type Lookup func(id msg.AccountID) (*Account, bool)

// DownloadTool is feishu_download_file(message_id, file_key?): it saves
// the image or file of a message (a child of a merged forward included,
// by the child's id as the excerpt shows it) into the chat's workspace
// and answers with the path.
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
				return failed(fmt.Errorf("arguments: %w", err))
			}
			id := msg.AccountID(strings.TrimSpace(in.AccountID))
			if id == "" {
				id = msg.DefaultAccount
			}
			a, ok := lookup(id)
			if !ok {
				return failed(fmt.Errorf("no Feishu account %q", id))
			}
			path, size, err := a.download(ctx, strings.TrimSpace(in.MessageID), strings.TrimSpace(in.FileKey))
			if err != nil {
				return failed(err)
			}
			b, _ := json.Marshal(map[string]any{"status": "ok", "path": path, "bytes": size})
			return string(b), nil
		},
	}
}

func failed(err error) (string, error) {
	b, _ := json.Marshal(map[string]string{"status": "failed", "error": err.Error()})
	return string(b), nil
}

// download saves the attachment of message id (key picks one) and returns
// where.
func (a *Account) download(ctx context.Context, id, key string) (string, int, error) {
	if !strings.HasPrefix(id, "om_") {
		return "", 0, fmt.Errorf("message_id %q: want an om_ id", id)
	}
	items, err := a.api.getMessage(ctx, id)
	if err != nil {
		return "", 0, err
	}
	if len(items) == 0 {
		return "", 0, fmt.Errorf("message %s: not found", id)
	}
	it := items[0]
	kind, name, contentKey := attachment(it)
	if kind == "" {
		return "", 0, fmt.Errorf("message %s (%s) has no attachment that can be downloaded", id, it.MsgType)
	}
	if key == "" {
		key = contentKey
	}
	body, _, err := a.api.resource(ctx, id, key, kind)
	if codeOf(err) == codeFileNotInMessage && it.UpperMessageID != "" {
		// A child of a merged forward: its container's id reaches it.
		body, _, err = a.api.resource(ctx, it.UpperMessageID, key, kind)
	}
	if err != nil {
		return "", 0, err
	}
	if len(body) > MaxDownload {
		return "", 0, fmt.Errorf("the attachment is %d bytes, over the %d-byte limit", len(body), MaxDownload)
	}
	chat := it.ChatID
	for up, hops := it.UpperMessageID, 0; chat == "" && up != "" && hops < 4; hops++ {
		parents, err := a.api.getMessage(ctx, up)
		if err != nil || len(parents) == 0 {
			break
		}
		chat, up = parents[0].ChatID, parents[0].UpperMessageID
	}
	if a.opts.Workspace == nil {
		return "", 0, errors.New("no workspace to save into")
	}
	dir := filepath.Join(a.opts.Workspace(msg.Peer{Kind: msg.Group, ID: firstNonEmpty(chat, "unknown-chat")}), "downloads")
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return "", 0, fmt.Errorf("workspace: %w", err)
	}
	if name == "" {
		name = key
		if kind == "image" {
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

// attachment is what of an item can be downloaded: the resource type
// (image or file), the file name and the key from its content.
func attachment(it larkmsg.Item) (kind, name, key string) {
	var c struct {
		ImageKey string `json:"image_key"`
		FileKey  string `json:"file_key"`
		FileName string `json:"file_name"`
	}
	_ = json.Unmarshal([]byte(it.Body.Content), &c)
	switch it.MsgType {
	case "image":
		return "image", "", c.ImageKey
	case "file", "audio", "media", "video":
		return "file", c.FileName, c.FileKey
	}
	return "", "", ""
}

// fileSafe keeps the characters of a name that are safe in a file name.
func fileSafe(s string) string {
	out := strings.Map(func(r rune) rune {
		if r == '-' || r == '_' || r == '.' || r > 0x7f || (r >= '0' && r <= '9') || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') {
			return r
		}
		return '_'
	}, s)
	out = strings.TrimLeft(out, ".")
	if out == "" {
		return "_"
	}
	return out
}
