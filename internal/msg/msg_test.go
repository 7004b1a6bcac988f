package msg

import "testing"

func TestParsePeer(t *testing.T) {
	tests := []struct {
		in      string
		want    Peer
		wantErr bool
	}{
		{in: "group:123", want: Peer{Kind: Group, ID: "123"}},
		{in: "private:42", want: Peer{Kind: Direct, ID: "42"}},
		{in: "direct:ou_x", want: Peer{Kind: Direct, ID: "ou_x"}},
		{in: "GROUP:9", want: Peer{Kind: Group, ID: "9"}},
		{in: "group:", wantErr: true},
		{in: "room:1", wantErr: true},
		{in: "123", wantErr: true},
	}
	for _, tt := range tests {
		got, err := ParsePeer(tt.in)
		if (err != nil) != tt.wantErr {
			t.Errorf("ParsePeer(%q) error = %v, wantErr %v", tt.in, err, tt.wantErr)
			continue
		}
		if got != tt.want {
			t.Errorf("ParsePeer(%q) = %v, want %v", tt.in, got, tt.want)
		}
		if !tt.wantErr && tt.want.Kind == Direct && got.String() != "direct:"+tt.want.ID {
			t.Errorf("String() = %q", got.String())
		}
	}
}

func TestMentionedIgnoresEmptySelf(t *testing.T) {
	m := Message{Mentions: []UserID{"1", "2"}, AtAll: true}
	if m.Mentioned("") {
		t.Error("an unknown self id must never count as mentioned")
	}
	if !m.Mentioned("2") || m.Mentioned("3") {
		t.Error("Mentioned does not follow the mention list")
	}
}

func TestOutboundEmpty(t *testing.T) {
	if !(&Outbound{Text: " \n\t"}).Empty() {
		t.Error("whitespace-only text must be empty")
	}
	if (&Outbound{Text: " ", Media: []Media{{Kind: MediaImage, URL: "x"}}}).Empty() {
		t.Error("media makes a payload non-empty")
	}
	if (&Outbound{Text: "hi"}).Empty() {
		t.Error("text makes a payload non-empty")
	}
}

func TestBatchFirstLast(t *testing.T) {
	var b Batch
	if b.First() != nil || b.Last() != nil {
		t.Fatal("empty batch has no first or last")
	}
	b.Messages = []Message{{ID: "a"}, {ID: "b"}}
	if b.First().ID != "a" || b.Last().ID != "b" {
		t.Errorf("First/Last = %s/%s", b.First().ID, b.Last().ID)
	}
}
