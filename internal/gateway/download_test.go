package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pincerbot/pincer/internal/agent"
	"github.com/pincerbot/pincer/internal/channel"
	"github.com/pincerbot/pincer/internal/msg"
)

// fakeFiles is a channel account that knows one message with a picture
// and a file.
type fakeFiles struct{ asked []int64 }

func (f *fakeFiles) FetchMessage(_ context.Context, id msg.MessageID) (msg.Message, error) {
	if id != "42" {
		return msg.Message{}, errors.New("message not found")
	}
	return msg.Message{ID: "42", Channel: "onebot", Account: msg.DefaultAccount, Peer: msg.Peer{Kind: msg.Group, ID: "7001"}, Segments: []msg.Segment{
		msg.Text("看附件"),
		{Kind: msg.SegImage, ID: "a.png"},
		{Kind: msg.SegFile, ID: "/f1", Name: "../../周报 v2.pdf"},
	}}, nil
}

func (f *fakeFiles) FetchForward(context.Context, msg.ForwardID) ([]msg.Message, error) {
	return nil, errors.New("no forwards")
}

func (f *fakeFiles) Download(_ context.Context, a msg.Attachment, limit int64) (channel.Blob, error) {
	f.asked = append(f.asked, limit)
	if a.Segment.Kind == msg.SegImage {
		return channel.Blob{Data: []byte("\x89PNG"), MIME: "image/png"}, nil
	}
	if limit < 10 {
		return channel.Blob{}, channel.ErrTooLarge
	}
	return channel.Blob{Data: []byte("%PDF-1.4")}, nil
}

func callTool(t *testing.T, args string, limit int64, root string, f *fakeFiles) map[string]any {
	t.Helper()
	return callToolIn(t, context.Background(), args, limit, root, f)
}

func callToolIn(t *testing.T, ctx context.Context, args string, limit int64, root string, f *fakeFiles) map[string]any {
	t.Helper()
	tool := downloadTool(func(ch msg.ChannelID, acct msg.AccountID) (channel.Fetcher, channel.Downloader, bool) {
		if ch != "onebot" || acct != msg.DefaultAccount {
			return nil, nil, false
		}
		return f, f, true
	}, func(m msg.Message) string { return chatWorkspace(root, m) }, limit)
	out, err := tool.Call(ctx, json.RawMessage(args))
	if err != nil {
		t.Fatal(err)
	}
	var res map[string]any
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatal(err)
	}
	return res
}

// TestDownloadAttachmentTool: the tool saves the chosen attachment of a
// message into its chat's workspace, under a safe name, within the size
// limit, and says clearly what went wrong otherwise.
func TestDownloadAttachmentTool(t *testing.T) {
	root := t.TempDir()
	f := &fakeFiles{}
	res := callTool(t, `{"message_id":"42","index":2}`, 1<<20, root, f)
	want := filepath.Join(root, "onebot", "default", "7001", "downloads", "周报_v2.pdf")
	if res["status"] != "ok" || res["path"] != want {
		t.Fatalf("result %v, want the file at %s", res, want)
	}
	if b, err := os.ReadFile(want); err != nil || string(b) != "%PDF-1.4" {
		t.Errorf("saved %q, %v", b, err)
	}
	res = callTool(t, `{"message_id":"42"}`, 1<<20, root, f)
	if p, _ := res["path"].(string); res["status"] != "ok" || filepath.Ext(p) != ".png" || !strings.HasPrefix(filepath.Base(p), "42-1") {
		t.Errorf("the first attachment: %v", res)
	}
	for _, tt := range []struct{ args, want string }{
		{`{"message_id":"42","index":3}`, "has 2 attachment(s), not 3"},
		{`{"message_id":"9"}`, "message not found"},
		{`{"message_id":""}`, "message_id is empty"},
		{`{"message_id":"42","channel":"telegram"}`, "no telegram account"},
		{`{"message_id":42}`, "arguments"},
	} {
		if res := callTool(t, tt.args, 1<<20, root, f); res["status"] != "failed" || !strings.Contains(res["error"].(string), tt.want) {
			t.Errorf("%s: %v, want an error with %q", tt.args, res, tt.want)
		}
	}
	if res := callTool(t, `{"message_id":"42","index":2}`, 5, root, f); res["status"] != "failed" || !strings.Contains(res["error"].(string), "over the 5-byte limit") {
		t.Errorf("oversize: %v", res)
	}
}

// TestDownloadAttachmentKeepsToTheChat: run for a chat, the tool takes its
// channel and account and refuses another chat's messages.
func TestDownloadAttachmentKeepsToTheChat(t *testing.T) {
	root := t.TempDir()
	f := &fakeFiles{}
	here := agent.WithChat(context.Background(), agent.Chat{Channel: "onebot", Account: msg.DefaultAccount, Peer: msg.Peer{Kind: msg.Group, ID: "7001"}})
	if res := callToolIn(t, here, `{"message_id":"42","index":2}`, 1<<20, root, f); res["status"] != "ok" {
		t.Errorf("own chat: %v", res)
	}
	other := agent.WithChat(context.Background(), agent.Chat{Channel: "onebot", Account: msg.DefaultAccount, Peer: msg.Peer{Kind: msg.Direct, ID: "10001"}})
	if res := callToolIn(t, other, `{"message_id":"42","index":2}`, 1<<20, root, f); res["status"] != "failed" || !strings.Contains(res["error"].(string), "not from this chat") {
		t.Errorf("another chat's message: %v", res)
	}
	lark := agent.WithChat(context.Background(), agent.Chat{Channel: "feishu", Account: msg.DefaultAccount, Peer: msg.Peer{Kind: msg.Group, ID: "oc_1"}})
	if res := callToolIn(t, lark, `{"message_id":"42","channel":"onebot"}`, 1<<20, root, f); res["status"] != "failed" || !strings.Contains(res["error"].(string), "only this chat") {
		t.Errorf("another channel: %v", res)
	}
}
