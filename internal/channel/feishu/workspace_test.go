package feishu

import (
	"path/filepath"
	"testing"

	"github.com/pincerbot/pincer/internal/msg"
)

// TestChatWorkspace: a group's files go under its chat id, a direct
// chat's under private-<open_id>, each name made safe.
func TestChatWorkspace(t *testing.T) {
	ws := ChatWorkspace("/data/ws", "second")
	for peer, want := range map[msg.Peer]string{
		{Kind: msg.Group, ID: "oc_1"}:    "/data/ws/feishu/second/oc_1",
		{Kind: msg.Direct, ID: "ou_2"}:   "/data/ws/feishu/second/private-ou_2",
		{Kind: msg.Group, ID: "../../x"}: "/data/ws/feishu/second/_.._x",
	} {
		if got := ws(peer); got != filepath.FromSlash(want) {
			t.Errorf("%v: %s, want %s", peer, got, want)
		}
	}
}
