package agent

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/pincerbot/pincer/internal/llm"
	"github.com/pincerbot/pincer/internal/store"
)

func toolRunner(t *testing.T, ps ...*fakeProvider) (*Runner, *Tools) {
	t.Helper()
	tools := &Tools{}
	add := func(tl Tool) {
		if err := tools.Add(tl); err != nil {
			t.Fatal(err)
		}
	}
	add(Tool{Spec: llm.Tool{Name: "upper", Description: "upper-cases text"}, Call: func(_ context.Context, args json.RawMessage) (string, error) {
		var a struct{ Text string }
		if err := json.Unmarshal(args, &a); err != nil {
			return "", err
		}
		return strings.ToUpper(a.Text), nil
	}})
	add(Tool{Spec: llm.Tool{Name: "fail"}, Call: func(context.Context, json.RawMessage) (string, error) { return "", errors.New("disk on fire") }})
	add(Tool{Spec: llm.Tool{Name: "boom"}, Call: func(context.Context, json.RawMessage) (string, error) { panic("bug") }})
	add(Tool{Spec: llm.Tool{Name: "sudo"}, Elevated: true, Call: func(context.Context, json.RawMessage) (string, error) { return "root", nil }})
	m := map[string]llm.Provider{}
	for _, p := range ps {
		m[p.id] = p
	}
	return NewRunner(Options{Providers: m, MaxTokens: 100, ContextTokens: 10000, Tools: tools, MaxToolRounds: 3}), tools
}

func call(id, name, args string) llm.ToolCall {
	return llm.ToolCall{ID: id, Name: name, Arguments: args}
}

func TestToolRound(t *testing.T) {
	p := &fakeProvider{id: "a", steps: []step{
		{text: []string{"Checking."}, calls: []llm.ToolCall{call("c1", "upper", `{"text":"hi"}`), call("c2", "fail", `{}`), call("c3", "boom", `{}`), call("c4", "nope", `{}`), call("c5", "sudo", `{}`)}},
		{text: []string{"It says HI."}},
	}}
	r, _ := toolRunner(t, p)
	out, err := r.Run(context.Background(), Input{Models: chain("a/m"), Transcript: userTurn("shout hi")})
	if err != nil {
		t.Fatal(err)
	}
	if out.Text != "Checking.\n\nIt says HI." {
		t.Errorf("text %q", out.Text)
	}
	var results []string
	for _, turn := range out.Turns {
		if turn.Role == store.RoleTool {
			results = append(results, turn.ToolCallID+"="+turn.Text)
		}
	}
	want := []string{"c1=HI", "c2=error: disk on fire", "c3=error: the tool failed: bug", `c4=error: there is no tool named "nope"`, `c5=error: there is no tool named "sudo"`}
	if diff := cmp.Diff(want, results); diff != "" {
		t.Errorf("tool results (-want +got):\n%s", diff)
	}
	if n := len(out.Turns); n != 7 || out.Turns[0].Role != store.RoleAssistant || len(out.Turns[0].ToolCalls) != 5 || out.Turns[6].Text != "It says HI." {
		t.Errorf("turns %+v", out.Turns)
	}
	second := p.reqs[1].Messages
	if last := second[len(second)-1]; last.Role != llm.RoleTool || last.ToolCallID != "c5" {
		t.Errorf("the second call must end with the tool results: %+v", last)
	}
	var offered []string
	for _, tl := range p.reqs[0].Tools {
		offered = append(offered, tl.Name)
	}
	if diff := cmp.Diff([]string{"boom", "fail", "upper"}, offered); diff != "" {
		t.Errorf("offered tools, elevated ones hidden (-want +got):\n%s", diff)
	}
}

func TestElevatedToolsForElevatedSessions(t *testing.T) {
	p := &fakeProvider{id: "a", steps: []step{{calls: []llm.ToolCall{call("c1", "sudo", `{}`)}}, {text: []string{"done"}}}}
	r, _ := toolRunner(t, p)
	out, err := r.Run(context.Background(), Input{Models: chain("a/m"), Transcript: userTurn("x"), Elevated: true})
	if err != nil || out.Turns[1].Text != "root" {
		t.Errorf("%+v %v", out.Turns, err)
	}
}

// TestChatToolLimits: a chat's tool limits keep the other tools from
// being offered, and from running when the model calls them anyway.
func TestChatToolLimits(t *testing.T) {
	p := &fakeProvider{id: "a", steps: []step{{calls: []llm.ToolCall{call("c1", "fail", `{}`)}}, {text: []string{"done"}}}}
	r, _ := toolRunner(t, p)
	out, err := r.Run(context.Background(), Input{Models: chain("a/m"), Transcript: userTurn("x"), ToolAllowed: func(name string) bool { return name == "upper" }})
	if err != nil || out.Turns[1].Text != `error: there is no tool named "fail"` {
		t.Errorf("%+v %v", out.Turns, err)
	}
	var offered []string
	for _, tl := range p.reqs[0].Tools {
		offered = append(offered, tl.Name)
	}
	if !cmp.Equal(offered, []string{"upper"}) {
		t.Errorf("offered %v", offered)
	}
}

func TestSteeringSkipsPendingToolCalls(t *testing.T) {
	p := &fakeProvider{id: "a", steps: []step{{calls: []llm.ToolCall{call("c1", "upper", `{"text":"a"}`)}}, {text: []string{"ok, b instead"}}}}
	r, _ := toolRunner(t, p)
	steered := false
	out, err := r.Run(context.Background(), Input{Models: chain("a/m"), Transcript: userTurn("do a"), Steer: func() []store.Turn {
		if steered {
			return nil
		}
		steered = true
		return []store.Turn{{Role: store.RoleUser, Text: "no, do b"}}
	}})
	if err != nil {
		t.Fatal(err)
	}
	if out.Turns[1].Text != "skipped: the user sent a new message first" || out.Turns[2].Text != "no, do b" {
		t.Errorf("turns %+v", out.Turns)
	}
	msgs := p.reqs[1].Messages
	if msgs[len(msgs)-1].Text != "no, do b" {
		t.Errorf("the steered message must reach the next call: %+v", msgs)
	}
}

func TestToolRoundsAreBounded(t *testing.T) {
	loop := step{calls: []llm.ToolCall{call("c", "upper", `{"text":"x"}`)}}
	p := &fakeProvider{id: "a", steps: []step{loop, loop, loop, {text: []string{"giving up on tools"}}}}
	r, _ := toolRunner(t, p)
	out, err := r.Run(context.Background(), Input{Models: chain("a/m"), Transcript: userTurn("x")})
	if err != nil || out.Text != "giving up on tools" {
		t.Fatalf("%q %v", out.Text, err)
	}
	if len(p.reqs[3].Tools) != 0 {
		t.Error("after MaxToolRounds the model is offered no tools")
	}
}

func TestToolRegistryRejects(t *testing.T) {
	var ts Tools
	if err := ts.Add(Tool{Spec: llm.Tool{Name: "bad name"}, Call: func(context.Context, json.RawMessage) (string, error) { return "", nil }}); err == nil {
		t.Error("invalid name accepted")
	}
	if err := ts.Add(Tool{Spec: llm.Tool{Name: "x"}}); err == nil {
		t.Error("a tool without Call accepted")
	}
	ok := Tool{Spec: llm.Tool{Name: "x"}, Call: func(context.Context, json.RawMessage) (string, error) { return "", nil }}
	if err := ts.Add(ok); err != nil {
		t.Fatal(err)
	}
	if err := ts.Add(ok); err == nil {
		t.Error("duplicate accepted")
	}
}

func TestMessagesReplayToolTurns(t *testing.T) {
	tr := []store.Turn{
		{Role: store.RoleTool, ToolCallID: "orphan", Text: "x"},
		{Role: store.RoleUser, Text: "q"},
		{Role: store.RoleAssistant, ToolCalls: []store.ToolCall{{ID: "c1", Name: "upper", Arguments: "{}"}}},
		{Role: store.RoleTool, ToolCallID: "c1", Text: "R"},
		{Role: store.RoleAssistant, Text: "a"},
	}
	msgs := Messages(tr)
	if len(msgs) != 4 || msgs[1].ToolCalls[0].ID != "c1" || msgs[2].ToolCallID != "c1" {
		t.Errorf("%+v", msgs)
	}
	fit := Fit(append(msgs, llm.Message{Role: llm.RoleTool, ToolCallID: "c9", Text: "late"}), 1)
	if fit[0].Role != llm.RoleUser {
		t.Errorf("Fit must keep everything from the last user message: %+v", fit)
	}
}

func TestCurrentTime(t *testing.T) {
	cst := time.FixedZone("CST", 8*3600)
	got, err := CurrentTime(cst).Call(context.Background(), json.RawMessage(`{}`))
	if err != nil || !strings.Contains(got, "CST (UTC+08:00)") {
		t.Errorf("%q %v", got, err)
	}
}
