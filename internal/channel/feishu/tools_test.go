package feishu

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pincerbot/pincer/internal/agent"
	"github.com/pincerbot/pincer/internal/channel/feishu/feishusim"
	"github.com/pincerbot/pincer/internal/msg"
)

// otherChat is a group chat the tests' messages are not in.
const otherChat = "oc_other0000000000000000000000001"

// download calls feishu_download_file with args and returns its answer.
func (r *rig) download(t *testing.T, args string) (status, path, errText string) {
	t.Helper()
	tool := DownloadTool(func(id msg.AccountID) (*Account, bool) { return r.a, id == msg.DefaultAccount })
	out, err := tool.Call(context.Background(), json.RawMessage(args))
	must(t, err)
	var v struct{ Status, Path, Error string }
	must(t, json.Unmarshal([]byte(out), &v))
	return v.Status, v.Path, v.Error
}

// TestDownloadForwardChild: an image inside a merged forward is
// downloaded by the child's id, through the forward's id when the
// platform says the file is not in the child (234003), into the chat's
// workspace.
func TestDownloadForwardChild(t *testing.T) {
	r := newRig(t, nil)
	png := []byte("\x89PNG fake image")
	fwd := forwardOf("om_dl_fwd", groupChat)
	fwd.Children[0].Resources = map[string][]byte{"img_1": png}
	_, err := r.sim.AddMessage(fwd)
	must(t, err)
	status, path, errText := r.download(t, `{"message_id":"om_dl_fwd_img"}`)
	if status != "ok" {
		t.Fatalf("download: %s %s", status, errText)
	}
	want := filepath.Join(r.dir, "group-"+groupChat, "downloads", "om_dl_fwd_img-img_1.png")
	if path != want {
		t.Errorf("saved to %s, want %s", path, want)
	}
	if got, err := os.ReadFile(path); err != nil || !bytes.Equal(got, png) {
		t.Errorf("saved %q (%v)", got, err)
	}
	r.sim.FailNext(feishusim.PathMessages+"/om_dl_fwd_img/resources/img_1", feishusim.CodeFileNotInMessage)
	if status, _, errText := r.download(t, `{"message_id":"om_dl_fwd_img","file_key":"img_1"}`); status != "ok" {
		t.Fatalf("with 234003 on the child: %s", errText)
	}
	child := r.sim.Calls(feishusim.PathMessages + "/om_dl_fwd_img/resources/img_1")
	parent := r.sim.Calls(feishusim.PathMessages + "/om_dl_fwd/resources/img_1")
	if len(child) != 2 || child[1].Code != feishusim.CodeFileNotInMessage || len(parent) != 1 || parent[0].Status != http.StatusOK {
		t.Errorf("child calls %d, container calls %d", len(child), len(parent))
	}
}

// TestDownloadRefusals: stickers cannot be downloaded, a text has
// nothing to download, an attachment over MaxDownload is refused, and an
// id that is not a message id is refused before any call.
func TestDownloadRefusals(t *testing.T) {
	r := newRig(t, nil)
	sticker, err := r.sim.AddMessage(feishusim.Message{ChatID: groupChat, SenderID: userA, MsgType: "sticker", Content: `{"file_key":"stk_1"}`})
	must(t, err)
	text, err := r.sim.AddMessage(feishusim.Message{ChatID: groupChat, SenderID: userA, Content: `{"text":"没有附件"}`})
	must(t, err)
	big, err := r.sim.AddMessage(feishusim.Message{ChatID: groupChat, SenderID: userA, MsgType: "file",
		Content: `{"file_key":"file_big","file_name":"big.bin"}`, Resources: map[string][]byte{"file_big": make([]byte, MaxDownload+1)}})
	must(t, err)
	for _, c := range []struct{ args, want string }{
		{`{"message_id":"` + sticker + `"}`, "sticker"},
		{`{"message_id":"` + text + `"}`, "no image or file"},
		{`{"message_id":"` + big + `"}`, "over the"},
		{`{"message_id":"../etc/passwd"}`, "want an om_ id"},
		{`{"message_id":"om_x","accountId":"other"}`, "no Feishu account"},
		{`not json`, "arguments"},
	} {
		status, path, errText := r.download(t, c.args)
		if status != "failed" || !strings.Contains(errText, c.want) || path != "" {
			t.Errorf("%s: %s %q %q", c.args, status, path, errText)
		}
	}
	if _, err := os.Stat(filepath.Join(r.dir, "group-"+groupChat, "downloads")); err == nil {
		entries, _ := os.ReadDir(filepath.Join(r.dir, "group-"+groupChat, "downloads"))
		if len(entries) != 0 {
			t.Errorf("files saved: %v", entries)
		}
	}
}

// TestDownloadSafeName: a file's name from the platform cannot leave the
// workspace or hide; a direct chat's file is saved in its workspace.
func TestDownloadSafeName(t *testing.T) {
	r := newRig(t, nil)
	r.run()
	m := r.take(feishusim.Message{ChatID: p2pChat, MsgType: "file",
		Content:   `{"file_key":"file_1","file_name":"../../.ssh/pa ss?wd.txt"}`,
		Resources: map[string][]byte{"file_1": []byte("secret")}})
	status, path, errText := r.download(t, `{"message_id":"`+string(m.ID)+`"}`)
	if status != "ok" {
		t.Fatal(errText)
	}
	dir := filepath.Join(r.dir, "direct-"+userA, "downloads")
	if filepath.Dir(path) != dir || filepath.Base(path) != string(m.ID)+"-pa_ss_wd.txt" {
		t.Errorf("saved to %s", path)
	}
	for _, name := range []string{"..", ".hidden", "a/b\\c", strings.Repeat("长", 100) + ".pdf", "\xff\xfe", ""} {
		got := fileSafe(name)
		if got == "" || strings.ContainsAny(got, `/\`) || strings.HasPrefix(got, ".") || len(got) > maxNameBytes {
			t.Errorf("fileSafe(%q) = %q", name, got)
		}
	}
	if got := fileSafe(strings.Repeat("长", 100) + ".pdf"); !strings.HasSuffix(got, ".pdf") {
		t.Errorf("a long name lost its extension: %q", got)
	}
}

// TestDownloadOnlyThisChat: run for a chat, the tool downloads only that
// chat's files (a merged forward's child by the chat the forward is in),
// with that chat's account, and fetches nothing for another chat's.
func TestDownloadOnlyThisChat(t *testing.T) {
	r := newRig(t, nil)
	must(t, r.sim.AddChat(otherChat, feishusim.ChatGroup))
	file, err := r.sim.AddMessage(feishusim.Message{ChatID: groupChat, SenderID: userA, MsgType: "file",
		Content: `{"file_key":"file_1","file_name":"a.txt"}`, Resources: map[string][]byte{"file_1": []byte("group file")}})
	must(t, err)
	fwd := forwardOf("om_dl_only", groupChat)
	fwd.Children[0].Resources = map[string][]byte{"img_1": []byte("\x89PNG")}
	_, err = r.sim.AddMessage(fwd)
	must(t, err)
	tool := DownloadTool(func(id msg.AccountID) (*Account, bool) { return r.a, id == msg.DefaultAccount })
	call := func(chat agent.Chat, args string) (status, errText string) {
		t.Helper()
		out, err := tool.Call(agent.WithChat(context.Background(), chat), json.RawMessage(args))
		must(t, err)
		var v struct{ Status, Error string }
		must(t, json.Unmarshal([]byte(out), &v))
		return v.Status, v.Error
	}
	here := agent.Chat{Channel: ChannelID, Account: msg.DefaultAccount, Peer: msg.Peer{Kind: msg.Group, ID: groupChat}}
	elsewhere := agent.Chat{Channel: ChannelID, Account: msg.DefaultAccount, Peer: msg.Peer{Kind: msg.Group, ID: otherChat}}
	for _, c := range []struct {
		name string
		chat agent.Chat
		args string
		want string
	}{
		{"another chat's file", elsewhere, `{"message_id":"` + file + `"}`, "not from this chat"},
		{"another chat's forward child", elsewhere, `{"message_id":"om_dl_only_img"}`, "not from this chat"},
		{"another account", here, `{"message_id":"` + file + `","accountId":"other"}`, "only this chat's files"},
		{"another channel", agent.Chat{Channel: "onebot", Account: msg.DefaultAccount, Peer: here.Peer}, `{"message_id":"` + file + `"}`, "only this chat's files"},
	} {
		if status, errText := call(c.chat, c.args); status != "failed" || !strings.Contains(errText, c.want) {
			t.Errorf("%s: %s %q, want failed with %q", c.name, status, errText, c.want)
		}
	}
	if n := len(r.sim.Calls(feishusim.PathMessages+"/"+file+"/resources/file_1")) + len(r.sim.Calls(feishusim.PathMessages+"/om_dl_only_img/resources/img_1")); n != 0 {
		t.Errorf("%d downloads for another chat's messages", n)
	}
	for _, args := range []string{`{"message_id":"` + file + `"}`, `{"message_id":"om_dl_only_img"}`} {
		if status, errText := call(here, args); status != "ok" {
			t.Errorf("this chat's %s: %s", args, errText)
		}
	}
}
