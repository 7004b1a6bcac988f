package wire

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/pincerbot/pincer/internal/msg"
	"github.com/pincerbot/pincer/internal/trigger"
)

// TestAtAfterReply: the at QQ inserts after a reply segment (of the quoted
// message's author) is dropped, but an at of the bot there is the user's
// own mention and counts.
func TestAtAfterReply(t *testing.T) {
	const self = "3300000001"
	tests := map[string]struct {
		message  string
		mentions []msg.UserID
		text     string
		typed    string // the text after the leading mention strip
		quoted   msg.UserID
	}{
		"reply then the bot": {
			message:  `[{"type":"reply","data":{"id":"50"}},{"type":"at","data":{"qq":"3300000001"}},{"type":"text","data":{"text":" 这是什么"}}]`,
			mentions: []msg.UserID{self}, text: "@3300000001 这是什么", typed: "这是什么",
		},
		"reply then the bot by name": {
			message:  `[{"type":"reply","data":{"id":"50"}},{"type":"at","data":{"qq":3300000001,"name":"助手"}},{"type":"text","data":{"text":" 这是什么"}}]`,
			mentions: []msg.UserID{self}, text: "@助手 这是什么", typed: "这是什么",
		},
		"reply then the quoted author": {
			message: `[{"type":"reply","data":{"id":"50"}},{"type":"at","data":{"qq":"10002"}},{"type":"text","data":{"text":" 八点，老地方"}}]`,
			text:    "八点，老地方", typed: "八点，老地方", quoted: "10002",
		},
		"reply, the quoted author, then the bot": {
			message:  `[{"type":"reply","data":{"id":"50"}},{"type":"at","data":{"qq":"10002"}},{"type":"text","data":{"text":" "}},{"type":"at","data":{"qq":"3300000001"}},{"type":"text","data":{"text":" 这是什么"}}]`,
			mentions: []msg.UserID{self}, text: "@3300000001 这是什么", typed: "这是什么", quoted: "10002",
		},
		"CQ string: reply then the bot": {
			message:  `"[CQ:reply,id=-5][CQ:at,qq=3300000001] 在吗"`,
			mentions: []msg.UserID{self}, text: "@3300000001 在吗", typed: "在吗",
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			ev := event(t, `{"post_type":"message","message_type":"group","group_id":1,"message_id":60,"user_id":10001,"self_id":3300000001,
			  "sender":{"user_id":10001,"nickname":"张三"},"message":`+tt.message+`}`)
			m, err := ev.ToMessage(msg.DefaultAccount, 3300000001)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.mentions, m.Mentions); diff != "" {
				t.Errorf("mentions (-want +got):\n%s", diff)
			}
			if m.Text != tt.text {
				t.Errorf("text %q, want %q", m.Text, tt.text)
			}
			if got := trigger.StripLeadingMention(m, self); got != tt.typed {
				t.Errorf("after the leading mention strip %q, want %q", got, tt.typed)
			}
			if m.ReplyTo == "" {
				t.Error("the reply is kept")
			}
			if m.ReplyToSender != tt.quoted {
				t.Errorf("the quoted author %q, want %q (from QQ's @ after the quote)", m.ReplyToSender, tt.quoted)
			}
		})
	}
}

// TestAtAfterReplySelfUnknown: without the bot's number every at after a
// reply is QQ's insert, as before.
func TestAtAfterReplySelfUnknown(t *testing.T) {
	var m msg.Message
	segs, _ := parseMessage([]byte(`[{"type":"reply","data":{"id":"1"}},{"type":"at","data":{"qq":"3300000001"}},{"type":"text","data":{"text":" x"}}]`), false)
	fill(&m, segs, 0, 0)
	if len(m.Mentions) != 0 || m.Text != "x" {
		t.Errorf("mentions %v text %q", m.Mentions, m.Text)
	}
}
