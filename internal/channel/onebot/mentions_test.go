package onebot

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"

	"github.com/pincerbot/pincer/internal/channel/onebot/wire"
)

func render(segs []wire.Segment) []string {
	var out []string
	for _, s := range segs {
		if s.Type == "at" {
			out = append(out, "<at "+s.Str("qq")+">")
			continue
		}
		out = append(out, s.Str("text"))
	}
	return out
}

func TestSegmentsMentions(t *testing.T) {
	people := []participant{{QQ: 111, Name: "张三"}, {QQ: 222, Name: "张三丰"}, {QQ: 333, Name: "Bob"}, {QQ: 444, Name: "Bob"}}
	on := outboundOptions{Mentions: true, Participants: people}
	tests := []struct {
		name string
		text string
		opts outboundOptions
		want []string
	}{
		{"names and numbers", "辛苦了@张三，还有@333", on, []string{"辛苦了", "<at 111>", "，还有", "<at 333>"}},
		{"longest name wins", "@张三丰 你好", on, []string{"<at 222>", " 你好"}},
		{"no half match", "@张三x", on, []string{"@张三x"}},
		{"e-mail stays text", "mail foo@Bob.com", on, []string{"mail foo@Bob.com"}},
		{"latest speaker wins a shared name", "@Bob hi", on, []string{"<at 444>", " hi"}},
		{"unknown names stay literal", "@nobody hi", on, []string{"@nobody hi"}},
		{"CQ at becomes a mention", "hi [CQ:at,qq=999] there", on, []string{"hi ", "<at 999>", " there"}},
		{"CQ at with a name, as NapCat and LLOneBot print it", "hi [CQ:at,qq=999,name=张三] there", on, []string{"hi ", "<at 999>", " there"}},
		{"CQ at with the name first", "[CQ:at,name=张三,qq=999]好", on, []string{"<at 999>", "好"}},
		{"CQ at with an escaped comma in the name", "[CQ:at,qq=999,name=A&#44;B]", on, []string{"<at 999>"}},
		{"CQ at without a number stays text", "[CQ:at,name=张三] [CQ:at,qq=abc,name=x]", on, []string{"[CQ:at,name=张三] [CQ:at,qq=abc,name=x]"}},
		{"qq=all is never converted", "[CQ:at,qq=all] hi", on, []string{"[CQ:at,qq=all] hi"}},
		{"qq=all with a name is never converted", "[CQ:at,qq=all,name=全体成员] hi", on, []string{"[CQ:at,qq=all,name=全体成员] hi"}},
		{"an @ inside a code is untouched", "[CQ:image,file=@张三]", on, []string{"[CQ:image,file=@张三]"}},
		{"other codes are text", "[CQ:image,file=x.jpg]", on, []string{"[CQ:image,file=x.jpg]"}},
		{"digests never convert", "@张三 [CQ:at,qq=999]", outboundOptions{Participants: people}, []string{"@张三 [CQ:at,qq=999]"}},
		{"digests never convert the named form", "[CQ:at,qq=999,name=张三]", outboundOptions{Participants: people}, []string{"[CQ:at,qq=999,name=张三]"}},
	}
	for _, tt := range tests {
		if diff := cmp.Diff(tt.want, render(outboundSegments(tt.text, tt.opts))); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tt.name, diff)
		}
	}
}

func FuzzSegments(f *testing.F) {
	f.Add("@张三 hi [CQ:at,qq=1]")
	f.Add("[CQ:at,qq=123,name=张三] hi")
	f.Add("[CQ:at,name=A&#44;B,qq=42][CQ:at,qq=all,name=x][CQ:at,qq=,name=]")
	f.Add("[CQ:at,qq=1,name=[CQ:at,qq=2]]")
	f.Fuzz(func(t *testing.T, text string) {
		segs := outboundSegments(text, outboundOptions{Mentions: true, Participants: []participant{{QQ: 1, Name: "a"}}})
		n := 0
		for _, s := range segs {
			switch s.Type {
			case "text":
				// Counted in runes: a byte that is not UTF-8 goes as U+FFFD.
				n += utf8.RuneCountInString(s.Str("text"))
			case "at":
				// A mention is of a participant or a number the text
				// named, never of all.
				qq := s.Str("qq")
				if qq == "" || strings.Trim(qq, "0123456789") != "" || qq != "1" && !strings.Contains(text, qq) {
					t.Fatalf("mention of %q from %q", qq, text)
				}
			default:
				t.Fatalf("a %s segment from %q: only text and mentions are sent", s.Type, text)
			}
		}
		if n > utf8.RuneCountInString(text) {
			t.Fatalf("segments grew the text: %q", text)
		}
	})
}
