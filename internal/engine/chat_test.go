package engine

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/pincerbot/pincer/internal/llm"
	"github.com/pincerbot/pincer/internal/msg"
)

// TestChatSettings: a chat with settings of its own gets its system
// prompt, model, thinking level, reply prefix and tools in its turns; a
// chat without keeps the engine's, and a session's /think still wins.
func TestChatSettings(t *testing.T) {
	p := &echoProvider{}
	e, st := newEngine(t, p)
	own := &ChatSettings{
		System: func() string { return "tutor" }, Models: []llm.Ref{{Provider: "fake", Model: "tutor-model"}},
		Thinking: "low", ResponsePrefix: "[助教] ", ToolAllowed: func(string) bool { return false },
	}
	e.opts.Chat = func(m msg.Message) *ChatSettings {
		if m.Peer.ID == "study" {
			return own
		}
		return nil
	}
	r := &recorder{}
	ctx := context.Background()
	for i, peer := range []string{"study", "other"} {
		if err := e.Dispatch(ctx, message(string(rune('1'+i)), peer, "hi", t0), r); err != nil {
			t.Fatal(err)
		}
	}
	type req struct{ system, model, thinking string }
	var got []req
	for _, q := range p.reqs {
		got = append(got, req{q.System, q.Model, q.Thinking})
	}
	want := []req{{"tutor", "tutor-model", "low"}, {"sys", "m", ""}}
	if diff := cmp.Diff(want, got, cmp.AllowUnexported(req{})); diff != "" {
		t.Errorf("requests (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"[助教] echo: hi", "echo: hi"}, outTexts(r.delivered)); diff != "" {
		t.Errorf("replies (-want +got):\n%s", diff)
	}
	if err := st.SetSessionOption(ctx, "agent:main:webchat:direct:study", optThink, "high"); err != nil {
		t.Fatal(err)
	}
	if err := e.Dispatch(ctx, message("3", "study", "again", t0), r); err != nil {
		t.Fatal(err)
	}
	if last := p.reqs[len(p.reqs)-1]; last.Thinking != "high" {
		t.Errorf("the session's /think must win over the chat's level: %q", last.Thinking)
	}
	// /think off wins over the chat's level too.
	if err := st.SetSessionOption(ctx, "agent:main:webchat:direct:study", optThink, "off"); err != nil {
		t.Fatal(err)
	}
	if err := e.Dispatch(ctx, message("4", "study", "once more", t0), r); err != nil {
		t.Fatal(err)
	}
	if last := p.reqs[len(p.reqs)-1]; last.Thinking != "" {
		t.Errorf("the session's /think off must win over the chat's level: %q", last.Thinking)
	}
}
