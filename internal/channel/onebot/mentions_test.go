package onebot

import (
	"testing"

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
		{"qq=all is never converted", "[CQ:at,qq=all] hi", on, []string{"[CQ:at,qq=all] hi"}},
		{"an @ inside a code is untouched", "[CQ:image,file=@张三]", on, []string{"[CQ:image,file=@张三]"}},
		{"other codes are text", "[CQ:image,file=x.jpg]", on, []string{"[CQ:image,file=x.jpg]"}},
		{"digests never convert", "@张三 [CQ:at,qq=999]", outboundOptions{Participants: people}, []string{"@张三 [CQ:at,qq=999]"}},
	}
	for _, tt := range tests {
		if diff := cmp.Diff(tt.want, render(outboundSegments(tt.text, tt.opts))); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tt.name, diff)
		}
	}
}

func FuzzSegments(f *testing.F) {
	f.Add("@张三 hi [CQ:at,qq=1]")
	f.Fuzz(func(t *testing.T, text string) {
		segs := outboundSegments(text, outboundOptions{Mentions: true, Participants: []participant{{QQ: 1, Name: "a"}}})
		n := 0
		for _, s := range segs {
			if s.Type == "text" {
				n += len(s.Str("text"))
			}
		}
		if n > len(text) {
			t.Fatalf("segments grew the text: %q", text)
		}
	})
}
