package gateway

import (
	"strings"
	"testing"

	"github.com/pincerbot/pincer/internal/channel/webchat"
	"github.com/pincerbot/pincer/internal/channel/webchat/webchattest"
	"github.com/pincerbot/pincer/internal/config"
	"github.com/pincerbot/pincer/internal/llm/llmtest"
)

// chatReplies are model replies, in the pieces they stream in (split
// inside tags and tokens), and what the chat gets of each: nothing, or the
// content without any reasoning or token piece. blocks, when set, is what
// QQ gets with block streaming on.
var chatReplies = []struct {
	name   string
	deltas []string
	want   string
	blocks []string
}{
	// Reasoning the model writes into its content.
	{"think then answer", []string{"<thi", "nk>想一想x</th", "ink>答", "案"}, "答案", nil},
	{"typed think then NO_REPLY", []string{`<think type="reas`, `oning">想一想…</think>`, "\nNO_", "REPLY"}, "", nil},
	{"thinking alone", []string{"<thinking>想一想…</th", "inking>"}, "", nil},
	{"reasoning alone", []string{"<reason", "ing>想一想…</reasoning>"}, "", nil},
	{"unclosed think at the end", []string{"<think>想一想", "，还没想完"}, "", nil},
	{"think, then paragraphs", []string{"<think>想一想</think>\n\n第一段。", "\n\n第二段。 NO_REP", "LY"}, "第一段。\n\n第二段。", []string{"第一段。", "第二段。"}},
	// Decorated and punctuated tokens.
	{"bold token alone", []string{"**NO", "_REPLY"}, "", nil},
	{"bold token after text", []string{"text *", "*NO_REPLY"}, "text", nil},
	{"punctuated heartbeat token", []string{"HEARTBEAT_OK", "."}, "", nil},
	{"token glued to the text after it", []string{"NO_REPLY", "The user is saying"}, "The user is saying", nil},
	{"token then an emoji", []string{"NO_REPLY 👍"}, "👍", nil},
	{"token then a word", []string{"NO_REPLY", " ok"}, "ok", nil},
	{"bold heartbeat token", []string{"**HEARTBEAT_", "OK**"}, "", nil},
	{"heartbeat token in a code tag", []string{"<code>HEART", "BEAT_OK</code> all good"}, "all good", nil},
	// Exact-match rules keep real content.
	{"a token in the middle is content", []string{"Please NO_", "REPLY to this"}, "Please NO_REPLY to this", nil},
}

// TestQQNeverSendsReasoningOrTokens: through a QQ account, with block
// streaming off and on, replies with <think>/<thinking>/<reasoning>
// blocks, decorated tokens and tokens glued to content send exactly their
// content, or nothing; and the transcript the model reads next keeps no
// reasoning.
func TestQQNeverSendsReasoningOrTokens(t *testing.T) {
	for _, blocks := range []bool{false, true} {
		t.Run(map[bool]string{false: "whole", true: "blocks"}[blocks], func(t *testing.T) {
			r := newQQRig(t, func(c *config.Config) {
				c.Agents.Defaults.BlockStreaming.Enabled = blocks
				c.Agents.Defaults.BlockStreaming.MinChars = 2
				c.Agents.Defaults.HumanDelay.Mode = "off"
			})
			for i, tc := range chatReplies {
				r.model.Script(llmtest.Reply{Text: tc.deltas})
				before := len(r.sends())
				r.push(t, privateFrom(int64(100+i), 10001, "问题"))
				r.metric(t, "pincer_turn_duration_seconds_count", float64(i+1))
				got := r.sends()[before:]
				want := []string{}
				switch {
				case blocks && tc.blocks != nil:
					want = tc.blocks
				case tc.want != "":
					want = []string{tc.want}
				}
				if strings.Join(got, "|") != strings.Join(want, "|") || len(got) != len(want) {
					t.Errorf("%s: sent %q, want %q", tc.name, got, want)
				}
			}
			reqs := r.model.Requests()
			for _, m := range reqs[len(reqs)-1].Body["messages"].([]any) {
				mm := m.(map[string]any)
				if text := mustString(mm["content"]); mm["role"] == "assistant" && (strings.Contains(text, "想一想") || strings.Contains(text, "think>")) {
					t.Errorf("the transcript keeps reasoning: %q", text)
				}
			}
		})
	}
}

// TestWebchatLiveStreamNeverShowsReasoningOrTokens: the web chat's live
// stream, which shows every piece as it comes, shows no reasoning and no
// piece of a token, not even for a moment: what it streams is exactly
// what the reply is.
func TestWebchatLiveStreamNeverShowsReasoningOrTokens(t *testing.T) {
	fake := llmtest.NewOpenAI(t)
	g := startGateway(t, withOpenAI(fake.URL))
	c := webchattest.New(g.url)
	for _, tc := range chatReplies {
		fake.Script(llmtest.Reply{Text: tc.deltas})
		res, _, err := c.Post("问题", "")
		if err != nil {
			t.Fatal(err)
		}
		events, err := webchattest.Events(res)
		if err != nil {
			t.Fatal(err)
		}
		var deltas []string
		for _, e := range events {
			if e.Name == webchat.EventDelta {
				deltas = append(deltas, e.Data["text"].(string))
			}
		}
		if got := strings.Join(deltas, ""); got != tc.want {
			t.Errorf("%s: streamed %q, want %q", tc.name, deltas, tc.want)
		}
		if got := webchattest.Text(events, webchat.EventReply); got != tc.want {
			t.Errorf("%s: reply %q, want %q", tc.name, got, tc.want)
		}
	}
	s, err := c.Session()
	if err != nil {
		t.Fatal(err)
	}
	for _, turn := range s["transcript"].([]any) {
		tm := turn.(map[string]any)
		if text := tm["text"].(string); tm["role"] == "assistant" && (strings.Contains(text, "想一想") || strings.Contains(text, "NO_REPLY") && text != "Please NO_REPLY to this" || strings.Contains(text, "HEARTBEAT_OK")) {
			t.Errorf("the conversation shows %q", text)
		}
	}
}
