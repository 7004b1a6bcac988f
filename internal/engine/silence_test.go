package engine

import (
	"context"
	"strings"
	"testing"

	"github.com/pincerbot/pincer/internal/msg"
)

// TestGroupsAreToldTheyMayStaySilent: the model of a group chat is told
// that NO_REPLY sends nothing, after the configured prompt; a direct
// chat's model is not.
func TestGroupsAreToldTheyMayStaySilent(t *testing.T) {
	p := &echoProvider{}
	e, _ := newEngine(t, p)
	ctx := context.Background()
	group := message("1", "g", "大家好", t0)
	group.Peer.Kind = msg.Group
	for _, m := range []msg.Message{group, message("2", "d", "你好", t0)} {
		if err := e.Dispatch(ctx, m, &recorder{}); err != nil {
			t.Fatal(err)
		}
	}
	if len(p.reqs) != 2 {
		t.Fatalf("%d model requests, want 2", len(p.reqs))
	}
	configured := systemFor(e.chatOf(group), msg.Message{})
	if got := p.reqs[0].System; got != configured+"\n\n"+SilenceGuide || !strings.Contains(got, "exactly NO_REPLY") {
		t.Errorf("a group's system prompt is %q", got)
	}
	if got := p.reqs[1].System; got != configured {
		t.Errorf("a direct chat's system prompt is %q, want %q", got, configured)
	}
}
