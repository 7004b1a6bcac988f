package quote

import (
	"context"
	"testing"
	"time"

	"github.com/pincerbot/pincer/internal/msg"
)

// TestResolvedMediaFollowTheBudgets: the quoted message's pictures come
// first, then those of the forward nodes that were rendered; a node the
// node budget dropped shows none of its media.
func TestResolvedMediaFollowTheBudgets(t *testing.T) {
	img := func(url string) msg.Segment { return msg.Segment{Kind: msg.SegImage, URL: url, ID: url} }
	f := &fetcher{
		messages: map[msg.MessageID]msg.Message{
			"Q": {ID: "Q", Text: "[图片]", Segments: []msg.Segment{img("q.png"), {Kind: msg.SegForward, ID: "F"}}, ForwardIDs: []msg.ForwardID{"F"}},
		},
		forwards: map[msg.ForwardID][]msg.Message{
			"F": {
				{ID: "n1", Text: "[图片]", Segments: []msg.Segment{img("n1.png")}},
				{ID: "n2", Text: "[语音]", Segments: []msg.Segment{{Kind: msg.SegVoice, URL: "n2.amr"}}},
				{ID: "n3", Text: "[图片]", Segments: []msg.Segment{img("n3.png")}},
			},
		},
	}
	s := defaults()
	s.MaxNodes = 2
	_, _, media := New(f, s, time.UTC).Resolved(context.Background(), batch(msg.Message{ID: "m", ReplyTo: "Q"}))
	var got []string
	for _, a := range media {
		got = append(got, a.From+":"+string(a.Message)+":"+a.Segment.URL)
	}
	want := []string{"quote:Q:q.png", "forward:n1:n1.png", "forward:n2:n2.amr"}
	if len(got) != len(want) {
		t.Fatalf("media = %q, want %q", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("media[%d] = %q, want %q", i, got[i], want[i])
		}
	}
	f.fail = map[string]bool{"Q": true}
	if _, _, media := New(f, s, time.UTC).Resolved(context.Background(), batch(msg.Message{ID: "m", ReplyTo: "Q"})); len(media) != 0 {
		t.Errorf("a quote that failed shows media: %+v", media)
	}
}
