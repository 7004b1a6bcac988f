package larkmsg

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
)

func FuzzRenderText(f *testing.F) {
	f.Add(`{"text":"@_user_1 看 @_user_10 的方案 @_all"}`, "张三", "李四")
	f.Add(`{"text":"[看板](https://example.com/b)"}`, "", "@_user_1")
	f.Add("raw \xff text", "x", "y")
	f.Add(`{"text":5}`, "", "")
	f.Fuzz(func(t *testing.T, content, name1, name10 string) {
		mentions := []Mention{
			{Key: "@_user_1", ID: "ou_1", IDType: "open_id", Name: name1},
			{Key: "@_user_10", ID: "ou_10", IDType: "open_id", Name: name10},
		}
		got := Render("text", content, "om_1", mentions)
		if !utf8.ValidString(got) {
			t.Fatalf("invalid UTF-8: %q", got)
		}
		// Text without mention keys comes back as written, trimmed.
		if !utf8.ValidString(content) || strings.Contains(content, "@_") {
			return
		}
		raw, _ := json.Marshal(map[string]string{"text": content})
		if got := Render("text", string(raw), "om_1", mentions); got != strings.TrimSpace(content) {
			t.Fatalf("Render(%s) = %q", raw, got)
		}
	})
}

func FuzzRenderPost(f *testing.F) {
	f.Add(`{"title":"周报","content":[[{"tag":"text","text":"进度 "},{"tag":"at","user_id":"@_user_1","user_name":"张三"}],[{"tag":"a","text":"看板","href":"https://example.com/b"}],[{"tag":"img","image_key":"img_v3_x"}]]}`, "x")
	f.Add(`{"zh_cn":{"title":"t","content":[{"tag":"text","text":"flat"}]},"en_us":{"content":[]}}`, "")
	f.Add(`{"content_v2":[[{"tag":"code_block","language":"go","text":"x\n"}],[{"tag":"hr"}]],"files":[{"file_name":"a","is_folder":true}]}`, " a ")
	f.Add(`{"content":[[{"tag":"emotion","emoji_type":"OK"},{"tag":"media"},{"tag":"text","text":"&lt;","un_escape":"true"}]]}`, "\n")
	f.Fuzz(func(t *testing.T, content, text string) {
		mentions := []Mention{{Key: "@_user_1", ID: "ou_1", IDType: "open_id", Name: "张三"}}
		got := Render("post", content, "om_p", mentions)
		if !utf8.ValidString(got) {
			t.Fatalf("invalid UTF-8: %q", got)
		}
		_ = MentionedOpenIDs("post", content, mentions)
		_ = MentionsAll("post", content, mentions)
		// A body reads the same inside a locale wrapper.
		if o := object(content); o != nil && o["content"] != nil {
			if wrapped := Render("post", `{"zh_cn":`+content+`}`, "om_p", mentions); wrapped != got {
				t.Fatalf("wrapped = %q, bare = %q", wrapped, got)
			}
		}
		// One text element reads as its text.
		if !utf8.ValidString(text) {
			return
		}
		raw, _ := json.Marshal(map[string]any{"title": "", "content": [][]map[string]string{{{"tag": "text", "text": text}}}})
		if got := Render("post", string(raw), "om_p", nil); got != strings.TrimSpace(text) {
			t.Fatalf("Render(%s) = %q", raw, got)
		}
	})
}

func FuzzRenderCard(f *testing.F) {
	f.Add(`{"title":"","elements":[[{"tag":"text","text":"[图片]请升级至最新版本客户端，以查看内容"}],[{"tag":"img","image_key":"img_x"}]]}`)
	f.Add(`{"schema":"2.0","header":{"title":{"tag":"plain_text","content":"构建结果"}},"body":{"elements":[{"tag":"markdown","content":"**失败** <at id=ou_7c></at> <font color='red'>x</font>"}]}}`)
	f.Add(`{"elements":[{"tag":"div","text":{"tag":"lark_md","content":"a"},"fields":[{"text":{"content":"b"}}]},{"tag":"note","elements":[{"tag":"plain_text","content":"c"}]},{"tag":"column_set","columns":[{"elements":[{"tag":"markdown","content":"d"}]}]}]}`)
	f.Add(`{"i18n_elements":{"zh_cn":[{"tag":"markdown","content":"<at user_id=\"ou_1\">甲</at>"}]},"user_dsl":"{\"elements\":[]}"}`)
	f.Add(`{"type":"template","data":{"template_id":"x"}}`)
	f.Fuzz(func(t *testing.T, content string) {
		got := Render("interactive", content, "om_c", []Mention{{Key: "@_user_1", ID: "ou_7c", Name: "王五"}})
		if !utf8.ValidString(got) || got == "" {
			t.Fatalf("Render = %q", got)
		}
		if strings.Contains(got, "请升级至最新版本客户端") {
			t.Fatalf("the upgrade notice survived: %q", got)
		}
	})
}

func FuzzDecodeItems(f *testing.F) {
	f.Add([]byte(`{"code":0,"msg":"success","data":{"items":[{"message_id":"om_a1","msg_type":"text","create_time":"1760000000321","deleted":false,"sender":{"id":"ou_7c","id_type":"open_id","sender_type":"user"},"body":{"content":"{\"text\":\"@_user_1 hi\"}"},"mentions":[{"key":"@_user_1","id":"ou_3b","id_type":"open_id","name":"张三"}],"upper_message_id":""}]}}`))
	f.Add([]byte(`{"code":0,"data":{"has_more":true,"page_token":"x","items":[{"message_id":"om_h2","msg_type":"merge_forward","body":{"content":"Merged and Forwarded Message"}}]}}`))
	f.Add([]byte(`{"code":0,"data":{"items":[1,"x",{"create_time":17,"deleted":"true","body":{"content":{"a":[1]}},"mentions":[{"id":{"open_id":"ou"}}]}]}}`))
	f.Add([]byte(`{"code":230027,"msg":"no"}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		p, err := DecodeItems(raw)
		if err != nil {
			return
		}
		// What decodes re-encodes to an answer that decodes the same.
		again, err := json.Marshal(map[string]any{"code": 0, "data": map[string]any{"items": p.Items, "has_more": p.HasMore, "page_token": p.PageToken}})
		if err != nil {
			t.Fatal(err)
		}
		q, err := DecodeItems(again)
		if err != nil {
			t.Fatalf("re-decoding %s: %v", again, err)
		}
		if d := cmp.Diff(p, q); d != "" {
			t.Fatalf("round trip (-first +second):\n%s", d)
		}
	})
}
