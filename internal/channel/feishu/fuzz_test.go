package feishu

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/pincerbot/pincer/internal/channel/feishu/larkevent"
	"github.com/pincerbot/pincer/internal/msg"
	"github.com/pincerbot/pincer/internal/trigger"
)

// FuzzChunkText: every piece is within both limits and not blank, no
// text is lost, and with room for it every piece is whole markdown (its
// code fences closed).
func FuzzChunkText(f *testing.F) {
	f.Add("hello world", uint16(5), uint16(100))
	f.Add("```go\nfunc f() {}\n\n```\n\n段落"+strings.Repeat("字", 300), uint16(200), uint16(4000))
	f.Add(strings.Repeat("```\nx\n", 50), uint16(130), uint16(300))
	f.Add("\xff\xfe\x80abc  \n\n  def", uint16(2), uint16(4))
	f.Fuzz(func(t *testing.T, s string, limit, maxBytes uint16) {
		lim, mb := int(limit%3000)+1, int(maxBytes%9000)+utf8.UTFMax
		pieces := chunkText(s, lim, mb)
		var joined strings.Builder
		for _, p := range pieces {
			if strings.TrimSpace(p) == "" || utf8.RuneCountInString(p) > lim || len(p) > mb {
				t.Fatalf("limits %d/%d: piece of %d characters, %d bytes: %q", lim, mb, utf8.RuneCountInString(p), len(p), p)
			}
			if lim > 4*fenceSlack && mb > 4*fenceSlack {
				fences := 0
				for _, line := range strings.Split(p, "\n") {
					if isFence(line) {
						fences++
					}
				}
				if fences%2 != 0 {
					t.Fatalf("piece with an open fence: %q", p)
				}
			}
			joined.WriteString(p)
		}
		if !strings.Contains(s, "`") && strip(joined.String()) != strip(s) {
			t.Fatalf("text lost: %q became %q", s, pieces)
		}
	})
}

// FuzzNormalize: any content and mentions normalize without panicking
// into valid text; the bot counts as mentioned only when its open_id is
// in the mentions or the content, and a leading mention segment is one
// the pipeline can strip.
func FuzzNormalize(f *testing.F) {
	f.Add("text", `{"text":"@_user_1 你好"}`, "@_user_1", botID, botName)
	f.Add("text", `{"text":"@_user_1 你好"}`, "@_user_1", userB, botName)
	f.Add("post", `{"title":"","content":[[{"tag":"at","user_id":"`+botID+`","user_name":"x"},{"tag":"text","text":"hi"}]]}`, "", "", "")
	f.Add("post", `{"zh_cn":{"content":[{"tag":"at","user_id":"@_user_1"}]}}`, "@_user_1", botID, "")
	f.Add("interactive", `{"elements":[[{"tag":"text","text":"卡片"}]]}`, "", "", "")
	f.Add("text", `not json @_user_1`, "@_user_1", botID, " "+botName+" ")
	f.Add("post", `{"zh_cn":{"content":[[{"tag":"img","image_key":"img_1"}],[{"tag":"img","image_key":1}]]}}`, "", "", "")
	f.Add("file", `{"file_key":"file_1","file_name":"a.pdf"}`, "", "", "")
	f.Add("audio", `{"file_key":7}`, "", "", "")
	a := New(Options{AppID: "cli_fuzz", AppSecret: "x", BaseURL: "http://127.0.0.1:1"})
	a.self.Store(&identity{openID: botID, name: botName})
	f.Fuzz(func(t *testing.T, typ, content, key, id, name string) {
		ev := larkevent.MessageReceive{
			SenderUnionID: "on_fuzz", SenderType: "user", MessageID: "om_fuzz", ChatID: groupChat,
			ChatType: larkevent.ChatTypeGroup, MessageType: typ, Content: content, CreateTime: 1760000000000,
			Mentions: []larkevent.Mention{{Key: key, OpenID: id, Name: name}},
		}
		m := a.normalize(t.Context(), ev)
		if !utf8.ValidString(m.Text) {
			t.Fatalf("invalid text %q", m.Text)
		}
		if m.Mentioned(botID) && id != botID && !strings.Contains(content, botID) {
			t.Fatalf("the bot mentioned by %q %q", content, id)
		}
		for _, s := range m.Segments {
			if msg.IsMedia(s.Kind) && s.ID == "" {
				t.Fatalf("a %s segment with nothing to fetch it by", s.Kind)
			}
			if s.Kind != msg.SegAt {
				continue
			}
			if s.Target != botID {
				t.Fatalf("mention segment of %q", s.Target)
			}
			if stripped := trigger.StripLeadingMention(m, botID); len(stripped) >= len(strings.TrimLeft(m.Text, " \t\r\n")) {
				t.Fatalf("the leading mention of %q is not stripped", m.Text)
			}
		}
	})
}

// FuzzFileSafe: a saved file's name never leaves its directory, never
// hides, is never empty and stays short.
func FuzzFileSafe(f *testing.F) {
	for _, s := range []string{"a.pdf", "../../x", ".ssh", "", "长文件名.docx", "\x00\xff"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := fileSafe(s)
		if got == "" || got == "." || got == ".." || strings.ContainsAny(got, "/\\\x00") || strings.HasPrefix(got, ".") ||
			len(got) > maxNameBytes || !utf8.ValidString(got) {
			t.Fatalf("fileSafe(%q) = %q", s, got)
		}
	})
}

// FuzzMediaHeaders: the headers of voice notes and videos never panic
// the duration readers, which give 0 or a plausible length.
func FuzzMediaHeaders(f *testing.F) {
	f.Add(oggOpus())
	f.Add(mp4Movie())
	f.Add([]byte("OggS"))
	f.Add([]byte("\x00\x00\x00\x00mvhd\x01"))
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, d := range []int{opusDuration(b), mp4Duration(b)} {
			if d < 0 || d > maxDurationMs {
				t.Fatalf("duration %d of %q", d, b)
			}
		}
		_ = fileType("x.ogg", b)
	})
}
