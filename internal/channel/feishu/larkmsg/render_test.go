package larkmsg

import (
	"slices"
	"testing"
	"unicode/utf8"
)

func TestRenderText(t *testing.T) {
	mentions := []Mention{
		{Key: "@_user_1", ID: "ou_1", IDType: "open_id", Name: "张三"},
		{Key: "@_user_10", ID: "ou_10", IDType: "open_id", Name: "李四"},
		{Key: "@_user_2", ID: "ou_2", IDType: "open_id", Name: "@_user_1"},
		{Key: "@_user_3", ID: "ou_3", IDType: "open_id"},
	}
	for _, tc := range []struct{ name, content, want string }{
		{"keys", `{"text":"@_user_1 看 @_user_10 的方案"}`, "@张三 看 @李四 的方案"},
		{"longest key first", `{"text":"@_user_10@_user_1"}`, "@李四@张三"},
		{"a name that looks like a key is not replaced again", `{"text":"hi @_user_2"}`, "hi @@_user_1"},
		{"no name: the id", `{"text":"@_user_3 好"}`, "@ou_3 好"},
		{"unknown key kept", `{"text":"@_user_9 在吗"}`, "@_user_9 在吗"},
		{"all", `{"text":"@_all 开会"}`, "@所有人 开会"},
		{"links as written", `{"text":"见 [看板](https://example.com/b) 和 https://x.y"}`, "见 [看板](https://example.com/b) 和 https://x.y"},
		{"trimmed", `{"text":"  你好\n"}`, "你好"},
		{"not JSON: raw", `你好 @_user_1`, "你好 @_user_1"},
		{"JSON of another shape: raw", `{"text":5}`, `{"text":5}`},
		{"no text", `{}`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Render("text", tc.content, "om_1", mentions); got != tc.want {
				t.Errorf("Render = %q, want %q", got, tc.want)
			}
		})
	}
	// A broadcast mention entry reads @所有人 too.
	if got := Render("text", `{"text":"@_all 看"}`, "", []Mention{{Key: "@_all", ID: "all", Name: "所有人"}}); got != "@所有人 看" {
		t.Errorf("broadcast entry: %q", got)
	}
}

func TestRenderPlaceholders(t *testing.T) {
	for _, tc := range []struct{ typ, content, id, want string }{
		{"image", `{"image_key":"img_v3_x"}`, "om_i", "[图片 msg=om_i]"},
		{"image", `not json`, "om_i", "[图片 msg=om_i]"},
		{"image", `{"image_key":"img_v3_x"}`, "", "[图片]"},
		{"file", `{"file_key":"file_x","file_name":"a.pdf"}`, "om_f", "[文件 a.pdf msg=om_f]"},
		{"file", `{"file_key":"file_x"}`, "om_f", "[文件 msg=om_f]"},
		{"file", `}{`, "om_f", "[文件 msg=om_f]"},
		{"folder", `{"file_key":"file_x","file_name":"资料"}`, "om_d", "[文件夹 资料]"},
		{"audio", `{"file_key":"f","duration":2000}`, "om_a", "[语音 msg=om_a]"},
		{"audio", `{"file_key":"f","duration":2000,"speech_to_text":"明天见"}`, "om_a", "[语音 msg=om_a] 明天见"},
		{"media", `{"file_key":"f","image_key":"i","file_name":"v.mp4","duration":3}`, "om_v", "[视频 msg=om_v]"},
		{"video", `{"file_key":"f"}`, "om_v", "[视频 msg=om_v]"},
		{"sticker", `{"file_key":"f"}`, "om_s", "[表情包 msg=om_s]"},
		{"share_chat", `{"chat_id":"oc_1"}`, "om", "[群名片 oc_1]"},
		{"share_user", `{"user_id":"ou_1"}`, "om", "[个人名片 ou_1]"},
		{"merge_forward", `{"content":"Merged and Forwarded Message"}`, "om", "[合并转发]"},
		{"merge_forward", MergeForwardText, "om", "[合并转发]"},
		{"hongbao", `{"text":"[红包]"}`, "om", "[红包]"},
		{"hongbao", `x`, "om", "[红包]"},
		{"share_calendar_event", `{"summary":"周会","start_time":"1760000000000","end_time":"1760003600000"}`, "om", "[日程 周会 2025-10-09 16:53~2025-10-09 17:53]"},
		{"calendar", `{"summary":"周会"}`, "om", "[日程 周会]"},
		{"location", `{"name":"西溪园区","longitude":"120.0","latitude":"30.2"}`, "om", "[位置 西溪园区]"},
		{"location", `{"longitude":"120.0","latitude":"30.2"}`, "om", "[位置 30.2,120.0]"},
		{"video_chat", `{"topic":"评审","start_time":"1760000000000"}`, "om", "[视频会议 评审 2025-10-09 16:53]"},
		{"todo", `{"task_id":"t","summary":{"title":"","content":[[{"tag":"text","text":"写周报"}]]},"due_time":"1760000000000"}`, "om", "[任务 写周报 截止 2025-10-09 16:53]"},
		{"todo", `{"task_id":"t","summary":"写周报"}`, "om", "[任务 写周报]"},
		{"vote", `{"topic":"午饭","options":["面","饭"]}`, "om", "[投票 午饭: 面 / 饭]"},
		{"vote", `{"topic":"午饭"}`, "om", "[投票 午饭]"},
		{"new_type", `{}`, "om", "[new_type]"},
		{"", `{}`, "om", "[消息]"},
	} {
		if got := Render(tc.typ, tc.content, tc.id, nil); got != tc.want {
			t.Errorf("Render(%s, %s) = %q, want %q", tc.typ, tc.content, got, tc.want)
		}
	}
}

func TestRenderSystem(t *testing.T) {
	for _, tc := range []struct{ content, want string }{
		{`{"template":"{from_user} invited {to_chatters} to this chat.","from_user":["Helper"],"to_chatters":["张三","李四"]}`, "Helper invited 张三、李四 to this chat."},
		{`{"template":"{divider_text}","divider_text":{"text":"以下为新消息","i18n_text":{"en_us":"New messages"}}}`, "以下为新消息"},
		{`{"template":"{divider_text}","divider_text":{"i18n_text":{"en_us":"New messages"}}}`, "New messages"},
		{`{"template":"{who} 加入了群聊{missing}","who":"王五"}`, "王五 加入了群聊"},
		{`{"template":"{x}"}`, "[系统消息]"},
		{`{}`, "[系统消息]"},
		{`oops`, "[系统消息]"},
	} {
		if got := Render("system", tc.content, "om", nil); got != tc.want {
			t.Errorf("Render(system, %s) = %q, want %q", tc.content, got, tc.want)
		}
	}
}

func TestRenderPost(t *testing.T) {
	mentions := []Mention{{Key: "@_user_1", ID: "ou_1", IDType: "open_id", Name: "张三"}}
	for _, tc := range []struct{ name, content, want string }{
		{"reference example",
			`{"title":"周报","content":[[{"tag":"text","text":"进度 "},{"tag":"at","user_id":"@_user_1","user_name":"张三"}],[{"tag":"a","text":"看板","href":"https://example.com/b"}],[{"tag":"img","image_key":"img_v3_x"}]]}`,
			"周报\n进度 @张三\n[看板](https://example.com/b)\n [图片]"},
		{"zh_cn preferred",
			`{"en_us":{"title":"Report","content":[[{"tag":"text","text":"hi"}]]},"zh_cn":{"title":"周报","content":[[{"tag":"text","text":"你好"}]]}}`,
			"周报\n你好"},
		{"en_us without zh_cn",
			`{"ja_jp":{"title":"報告","content":[]},"en_us":{"title":"Report","content":[[{"tag":"text","text":"hi"}]]}}`,
			"Report\nhi"},
		{"any other locale",
			`{"de_de":{"content":[[{"tag":"text","text":"hallo"}]]}}`,
			"hallo"},
		{"an empty preferred locale gives way",
			`{"zh_cn":{"title":"","content":[]},"en_us":{"content":[[{"tag":"text","text":"hi"}]]}}`,
			"hi"},
		{"flat element list",
			`{"title":"","content":[{"tag":"text","text":"一行\n二行 "},{"tag":"at","user_id":"ou_1"}]}`,
			"一行\n二行 @张三"},
		{"content_v2 preferred",
			`{"content":[[{"tag":"text","text":"旧"}]],"content_v2":[[{"tag":"text","text":"新"}]]}`,
			"新"},
		{"empty content_v2 ignored",
			`{"content":[[{"tag":"text","text":"旧"}]],"content_v2":[]}`,
			"旧"},
		{"files",
			`{"title":"附件","content_v2":[[{"tag":"text","text":"见附件"}]],"files":[{"file_key":"f1","file_name":"a.pdf","is_folder":false},{"file_key":"f2","file_name":"资料","is_folder":true}]}`,
			"附件\n见附件\n[文件 a.pdf]\n[文件夹 资料]"},
		{"tags",
			`{"content":[[{"tag":"text","text":"a&lt;b","un_escape":true},{"tag":"text","text":" &amp;"}],[{"tag":"emotion","emoji_type":"SMILE"},{"tag":"media","file_key":"f","image_key":"i"}],[{"tag":"hr"}],[{"tag":"text","text":"代码:"},{"tag":"code_block","language":"go","text":"fmt.Println(1)\n"},{"tag":"text","text":"完"}]]}`,
			"a<b &amp;\n[SMILE] [视频]\n---\n代码:\n```go\nfmt.Println(1)\n```\n完"},
		{"at forms",
			`{"content":[[{"tag":"at","user_id":"all"},{"tag":"at","user_id":"@_all"},{"tag":"at","user_id":"ou_1"},{"tag":"at","user_id":"ou_9","user_name":"赵六"},{"tag":"at","user_id":"ou_8"},{"tag":"at","user_id":"@_user_7"}]]}`,
			"@所有人 @所有人 @张三 @赵六 @ou_8 @_user_7"},
		{"link forms",
			`{"content":[[{"tag":"a","href":"https://a.b"},{"tag":"text","text":" "},{"tag":"a","text":"https://a.b","href":"https://a.b"},{"tag":"text","text":" "},{"tag":"a","text":"只有字"}]]}`,
			"https://a.b https://a.b 只有字"},
		{"blank paragraphs collapse",
			`{"content":[[{"tag":"text","text":"一"}],[],[],[{"tag":"text","text":"二"}],[]]}`,
			"一\n\n二"},
		{"bad elements skipped",
			`{"content":[[1,"x",{"tag":"text","text":"留下"},{"tag":"text","text":{"a":1}}]]}`,
			"留下"},
		{"not JSON", `周报`, "[富文本]"},
		{"not an object", `[[{"tag":"text","text":"x"}]]`, "[富文本]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Render("post", tc.content, "om_p", mentions); got != tc.want {
				t.Errorf("Render =\n%q\nwant\n%q", got, tc.want)
			}
		})
	}
}

func TestRenderCard(t *testing.T) {
	mentions := []Mention{{Key: "@_user_1", ID: "ou_7c", IDType: "open_id", Name: "王五"}}
	for _, tc := range []struct{ name, content, want string }{
		{"degraded, notice only", `{"title":"","elements":[[{"tag":"text","text":"[图片]请升级至最新版本客户端，以查看内容"}],[{"tag":"img","image_key":"img_x"}]]}`, "[卡片]"},
		{"degraded, ASCII comma", `{"title":"","elements":[[{"tag":"text","text":"[图片] 请升级至最新版本客户端,以查看内容"}]]}`, "[卡片]"},
		{"degraded, title and rows", `{"title":"告警","elements":[[{"tag":"text","text":"CPU "},{"tag":"a","text":"详情","href":"https://a.b"}],[{"tag":"button","text":"确认"}],[{"tag":"note","elements":[{"tag":"text","text":"来自"},{"tag":"img"},{"tag":"text","text":"监控"}]}],[{"tag":"text","text":"请升级至最新版本客户端，以查看内容"}]]}`,
			"告警\nCPU [详情](https://a.b)\n[确认]\n来自 监控"},
		{"schema 2.0 with at", `{"schema":"2.0","header":{"title":{"tag":"plain_text","content":"构建结果"}},"body":{"elements":[{"tag":"markdown","content":"**失败** <at id=ou_7c></at>"}]}}`,
			"构建结果\n**失败** @王五"},
		{"unknown at stripped", `{"schema":"2.0","body":{"elements":[{"tag":"markdown","content":"找 <at id=\"ou_zz\"></at>处理"}]}}`,
			"找 处理"},
		{"at forms and font", `{"elements":[{"tag":"markdown","content":"<at user_id=\"ou_9\">赵六</at> <at id=all></at> <font color='red'>红</font><text_tag color='blue'>标签</text_tag>"}]}`,
			"@赵六 @所有人 红标签"},
		{"schema 1.0", `{"config":{"wide_screen_mode":true},"header":{"title":{"tag":"plain_text","content":"日报"},"subtitle":{"tag":"plain_text","content":"10 月"}},"elements":[
			{"tag":"div","text":{"tag":"lark_md","content":"**完成** 3 项"},"fields":[{"is_short":true,"text":{"tag":"lark_md","content":"负责人"}}]},
			{"tag":"hr"},
			{"tag":"markdown","content":"- 第一\n  - 子项"},
			{"tag":"note","elements":[{"tag":"plain_text","content":"自动生成"},{"tag":"img","img_key":"x"},{"tag":"lark_md","content":"v2"}]},
			{"tag":"column_set","columns":[{"tag":"column","elements":[{"tag":"markdown","content":"左"}]},{"tag":"column","elements":[{"tag":"div","text":{"tag":"plain_text","content":"右"}}]}]},
			{"tag":"action","actions":[{"tag":"button","text":{"tag":"plain_text","content":"查看"}},{"tag":"select_static","placeholder":{"content":"选"}}]},
			{"tag":"img","img_key":"img_y"}
		]}`,
			"日报\n10 月\n**完成** 3 项\n负责人\n- 第一\n  - 子项\n自动生成 v2\n左\n右\n[查看]\n[图片]"},
		{"i18n_elements", `{"i18n_elements":{"en_us":[{"tag":"markdown","content":"hello"}],"zh_cn":[{"tag":"markdown","content":"你好"}]}}`, "你好"},
		{"i18n content", `{"elements":[{"tag":"div","text":{"tag":"plain_text","i18n_content":{"en_us":"Hi"}}}]}`, "Hi"},
		{"containers", `{"schema":"2.0","body":{"elements":[{"tag":"collapsible_panel","header":{"title":{"tag":"plain_text","content":"更多"}},"elements":[{"tag":"form","elements":[{"tag":"markdown","content":"表单里"},{"tag":"input"}]}]}]}}`, "更多\n表单里"},
		{"template", `{"type":"template","data":{"template_id":"AAq","template_variable":{"x":"y"}}}`, "[卡片]"},
		{"card id", `{"type":"card","data":{"card_id":"7355"}}`, "[卡片]"},
		{"user_dsl", `{"user_dsl":"{\"elements\":[{\"tag\":\"markdown\",\"content\":\"内层\"}]}"}`, "内层"},
		{"not JSON", `<card>`, "[卡片]"},
		{"empty", `{}`, "[卡片]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Render("interactive", tc.content, "om_c", mentions); got != tc.want {
				t.Errorf("Render =\n%q\nwant\n%q", got, tc.want)
			}
		})
	}
}

func TestMentionedOpenIDs(t *testing.T) {
	mentions := []Mention{
		{Key: "@_user_1", ID: "ou_bot", IDType: "open_id", Name: "Helper"},
		{Key: "@_user_2", ID: "u_2", IDType: "user_id", Name: "乙"},
		{Key: "@_all", ID: "all", Name: "所有人"},
		{Key: "@_user_1", ID: "ou_bot", IDType: "open_id", Name: "Helper"},
	}
	if got, want := MentionedOpenIDs("text", `{"text":"@_user_1 @_user_2"}`, mentions), []string{"ou_bot"}; !slices.Equal(got, want) {
		t.Errorf("text: %v, want %v", got, want)
	}
	// A post may carry at elements and no mentions.
	post := `{"zh_cn":{"content":[[{"tag":"at","user_id":"ou_bot"},{"tag":"at","user_id":"@_user_3"},{"tag":"at","user_id":"all"}],[{"tag":"at","user_id":"@_user_5","open_id":"ou_e"}]]}}`
	if got, want := MentionedOpenIDs("post", post, nil), []string{"ou_bot", "ou_e"}; !slices.Equal(got, want) {
		t.Errorf("post without mentions: %v, want %v", got, want)
	}
	withKey := []Mention{{Key: "@_user_3", ID: "ou_c", IDType: "open_id"}}
	if got, want := MentionedOpenIDs("post", post, withKey), []string{"ou_c", "ou_bot", "ou_e"}; !slices.Equal(got, want) {
		t.Errorf("post with mentions: %v, want %v", got, want)
	}
	if got := MentionedOpenIDs("post", `garbage`, nil); len(got) != 0 {
		t.Errorf("garbage: %v", got)
	}
}

func TestMentionsAll(t *testing.T) {
	for _, tc := range []struct {
		typ, content string
		mentions     []Mention
		want         bool
	}{
		{"text", `{"text":"@_all 开会"}`, nil, true},
		{"text", `{"text":"开会"}`, []Mention{{Key: "@_all", ID: "all"}}, true},
		{"text", `{"text":"@_user_1 开会"}`, []Mention{{Key: "@_user_1", ID: "ou_1"}}, false},
		{"text", `@_all raw`, nil, true},
		{"post", `{"content":[[{"tag":"at","user_id":"all"}]]}`, nil, true},
		{"post", `{"content":[[{"tag":"at","user_id":"ou_1"}]]}`, nil, false},
		{"post", `{"content":[[{"tag":"text","text":"@_all"}]]}`, nil, false},
		{"image", `{"image_key":"@_all"}`, nil, false},
	} {
		if got := MentionsAll(tc.typ, tc.content, tc.mentions); got != tc.want {
			t.Errorf("MentionsAll(%s, %s) = %v, want %v", tc.typ, tc.content, got, tc.want)
		}
	}
}

// The renderers' output is valid UTF-8 even when the content is not.
func TestRenderInvalidUTF8(t *testing.T) {
	bad := "a\xffb"
	for _, typ := range []string{"text", "post", "interactive", "file"} {
		if got := Render(typ, bad, "om\xfe", []Mention{{Key: "@_user_1", Name: "\xff"}}); !utf8.ValidString(got) || got == "" {
			t.Errorf("%s: %q", typ, got)
		}
	}
	if got := Render("text", bad, "", nil); got != "a\uFFFDb" {
		t.Errorf("text = %q", got)
	}
}
