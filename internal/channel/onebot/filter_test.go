package onebot

import (
	"testing"

	"github.com/pincerbot/pincer/internal/msg"
)

func TestPeerFilter(t *testing.T) {
	g := func(id string) msg.Peer { return msg.Peer{Kind: msg.Group, ID: id} }
	p := func(id string) msg.Peer { return msg.Peer{Kind: msg.Direct, ID: id} }
	tests := []struct {
		allow, deny []string
		peer        msg.Peer
		want        bool
	}{
		{nil, nil, g("1"), true},
		{[]string{"group:1"}, nil, g("1"), true},
		{[]string{"group:1"}, nil, g("2"), false},
		{[]string{"group:1"}, nil, p("1"), false},
		{[]string{"PRIVATE:42"}, nil, p("42"), true},
		{[]string{"*"}, []string{"group:1"}, g("1"), false},
		{[]string{"group:1"}, []string{"group:1"}, g("1"), false},
		{nil, []string{"*"}, p("5"), false},
	}
	for _, tt := range tests {
		f, err := NewPeerFilter(tt.allow, tt.deny)
		if err != nil {
			t.Fatal(err)
		}
		if got := f.allowed(tt.peer); got != tt.want {
			t.Errorf("allow %v deny %v: %v = %v, want %v", tt.allow, tt.deny, tt.peer, got, tt.want)
		}
	}
	for _, bad := range []string{"group:", "group:x", "room:1", "42"} {
		if _, err := NewPeerFilter([]string{bad}, nil); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
