package gateway

import (
	"testing"

	"github.com/pincerbot/pincer/internal/cluster"
	"github.com/pincerbot/pincer/internal/msg"
)

// TestChatPartitionsNeverMove: instances of different versions must put
// a chat in the same partition, so the key a chat is hashed by, and the
// partitions of a few chats, are fixed here.
func TestChatPartitionsNeverMove(t *testing.T) {
	for _, c := range []struct {
		ch   msg.ChannelID
		acct msg.AccountID
		peer msg.Peer
		key  string
	}{
		{"onebot", "default", msg.Peer{Kind: msg.Group, ID: "700000001"}, "onebot\x00default\x00group\x00700000001"},
		{"feishu", "default", msg.Peer{Kind: msg.Group, ID: "oc_a"}, "feishu\x00default\x00group\x00oc_a"},
		{"onebot", "b", msg.Peer{Kind: msg.Direct, ID: "10001"}, "onebot\x00b\x00direct\x0010001"},
	} {
		if got := chatKey(c.ch, c.acct, c.peer); got != c.key {
			t.Errorf("chatKey = %q, want %q", got, c.key)
		}
	}
	// FNV-1a (32 bits) of the key, modulo the partitions.
	if got, want := cluster.PartitionOf(32, "onebot\x00default\x00group\x00700000001"), fnv1a("onebot\x00default\x00group\x00700000001")%32; got != int(want) {
		t.Errorf("partition %d, want %d", got, want)
	}
}

func fnv1a(s string) uint32 {
	h := uint32(2166136261)
	for i := 0; i < len(s); i++ {
		h ^= uint32(s[i])
		h *= 16777619
	}
	return h
}
