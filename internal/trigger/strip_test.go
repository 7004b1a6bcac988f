package trigger

import (
	"strings"
	"testing"

	"github.com/pincerbot/pincer/internal/msg"
)

const stripSelf msg.UserID = "3300000001"

// typed is a message whose text the user typed, CQ codes and all.
func typed(text string) msg.Message {
	return msg.Message{Text: text, Segments: []msg.Segment{msg.Text(text)}}
}

// TestStripTypedMentionWithParameters: an at code of the bot typed as
// text at the start is stripped with the whitespace after it, bare or
// with a name (as NapCat and LLOneBot print it) or other parameters in
// any order; an at code of someone else, of all, or not at the start
// stays.
func TestStripTypedMentionWithParameters(t *testing.T) {
	tests := []struct{ name, text, want string }{
		{"bare", "[CQ:at,qq=3300000001] 帮我查天气", "帮我查天气"},
		{"with a name", "[CQ:at,qq=3300000001,name=机器人] 帮我查天气", "帮我查天气"},
		{"name first", "[CQ:at,name=机器人,qq=3300000001]帮我", "帮我"},
		{"more parameters", "[CQ:at,qq=3300000001,name=A&#44;B,extra=1]\u3000/summary 5", "/summary 5"},
		{"ideographic space", "[CQ:at,qq=3300000001,name=机器人]\u3000\u3000你好", "你好"},
		{"leading whitespace", "  [CQ:at,qq=3300000001,name=机器人] hi", "hi"},
		{"only the code", "[CQ:at,qq=3300000001,name=机器人]", ""},
		{"only once", "[CQ:at,qq=3300000001,name=b] [CQ:at,qq=3300000001,name=b] hi", "[CQ:at,qq=3300000001,name=b] hi"},
		{"someone else", "[CQ:at,qq=10001,name=机器人] hi", "[CQ:at,qq=10001,name=机器人] hi"},
		{"a longer number", "[CQ:at,qq=33000000011,name=x] hi", "[CQ:at,qq=33000000011,name=x] hi"},
		{"all", "[CQ:at,qq=all,name=全体成员] hi", "[CQ:at,qq=all,name=全体成员] hi"},
		{"no qq", "[CQ:at,name=3300000001] hi", "[CQ:at,name=3300000001] hi"},
		{"not an at", "[CQ:ats,qq=3300000001] hi", "[CQ:ats,qq=3300000001] hi"},
		{"unclosed", "[CQ:at,qq=3300000001,name=x hi", "[CQ:at,qq=3300000001,name=x hi"},
		{"not at the start", "hi [CQ:at,qq=3300000001,name=x]", "hi [CQ:at,qq=3300000001,name=x]"},
	}
	for _, tt := range tests {
		if got := StripLeadingMention(typed(tt.text), stripSelf); got != tt.want {
			t.Errorf("%s: got %q, want %q", tt.name, got, tt.want)
		}
	}
	if got := StripLeadingMention(typed("[CQ:at,qq=3300000001,name=x] hi"), ""); got != "[CQ:at,qq=3300000001,name=x] hi" {
		t.Errorf("an unknown self strips nothing: %q", got)
	}
}

func FuzzStripLeadingMention(f *testing.F) {
	f.Add("[CQ:at,qq=3300000001,name=机器人]\u3000hi")
	f.Add("[CQ:at,name=x,qq=3300000001] hi")
	f.Add("@机器人 hi")
	f.Add("[CQ:at,qq=1,qq=3300000001]")
	f.Fuzz(func(t *testing.T, text string) {
		m := msg.Message{Text: text, Segments: []msg.Segment{{Kind: msg.SegAt, Target: stripSelf, Name: "机器人"}, msg.Text(text)}}
		got := StripLeadingMention(m, stripSelf)
		// Only a prefix is ever cut.
		if !strings.HasSuffix(text, got) {
			t.Fatalf("%q became %q, which does not end it", text, got)
		}
		if got != text && strings.HasPrefix(got, " ") {
			t.Fatalf("%q: the space after the mention stays in %q", text, got)
		}
	})
}
