package larkmsg

import (
	"bytes"
	"cmp"
	"encoding/json"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
)

// Render returns the text an agent reads for a message of type msgType
// (the API's msg_type, or an event's message_type) with the given content;
// id is the message's id, carried by the placeholders of downloadable
// media so a tool can fetch them, and mentions are the message's own.
//
//   - text: @_user_N keys become @name, @_all becomes @所有人; links stay
//     as written.
//   - post: the title, then one line per paragraph; embedded images are
//     " [图片] " without an id (they cannot be downloaded on their own).
//   - interactive: the card's text; a template or CardKit reference, or a
//     card with no text, is [卡片].
//   - image, file, audio, media, sticker: [图片 msg=<id>], [文件 <name>
//     msg=<id>], [语音 msg=<id>] (then the transcript when there is one),
//     [视频 msg=<id>], [表情包 msg=<id>]; the msg= part is left out when id
//     is empty. folder: [文件夹 <name>].
//   - share_chat [群名片 <chat_id>], share_user [个人名片 <user_id>],
//     system messages with their template filled in, merge_forward
//     [合并转发], short forms for the rest, and [<msg_type>] for a type
//     this package does not know.
//
// Content that is not valid JSON never fails: a text message falls back
// to the raw content, any other type to its placeholder. The result is
// trimmed and valid UTF-8.
func Render(msgType, content, id string, mentions []Mention) string {
	out := strings.TrimSpace(render(msgType, content, id, mentions))
	if !utf8.ValidString(out) {
		out = strings.ToValidUTF8(out, "\uFFFD")
	}
	return out
}

func render(msgType, content, id string, mentions []Mention) string {
	switch msgType {
	case "text":
		return renderText(content, mentions)
	case "post":
		return renderPost(content, mentions)
	case "interactive":
		return renderCard(content, mentions)
	case "image":
		return placeholder("图片", "", id)
	case "file":
		return placeholder("文件", str(object(content), "file_name"), id)
	case "folder":
		return bracket("文件夹", str(object(content), "file_name"))
	case "audio":
		p := placeholder("语音", "", id)
		if s := strings.TrimSpace(str(object(content), "speech_to_text")); s != "" {
			p += " " + s
		}
		return p
	case "media", "video":
		return placeholder("视频", "", id)
	case "sticker":
		return placeholder("表情包", "", id)
	case "share_chat":
		return bracket("群名片", str(object(content), "chat_id"))
	case "share_user":
		return bracket("个人名片", str(object(content), "user_id"))
	case "system":
		return renderSystem(content)
	case "hongbao":
		if s := strings.TrimSpace(str(object(content), "text")); s != "" {
			return s
		}
		return "[红包]"
	case "share_calendar_event", "calendar", "general_calendar":
		o := object(content)
		return bracket("日程", join(" ", textOf(o["summary"]), timeRange(o["start_time"], o["end_time"])))
	case "location":
		o := object(content)
		name := str(o, "name")
		if name == "" {
			if lat, lon := str(o, "latitude"), str(o, "longitude"); lat != "" || lon != "" {
				name = lat + "," + lon
			}
		}
		return bracket("位置", name)
	case "video_chat":
		o := object(content)
		return bracket("视频会议", join(" ", textOf(o["topic"]), formatStamp(o["start_time"])))
	case "todo":
		o := object(content)
		summary := ""
		if s, ok := o["summary"].(map[string]any); ok {
			raw, _ := json.Marshal(s)
			summary = strings.Join(strings.Fields(renderPost(string(raw), nil)), " ")
		} else {
			summary = textOf(o["summary"])
		}
		due := ""
		if t := formatStamp(o["due_time"]); t != "" {
			due = "截止 " + t
		}
		return bracket("任务", join(" ", summary, due))
	case "vote":
		o := object(content)
		var opts []string
		if list, ok := o["options"].([]any); ok {
			for _, v := range list {
				if s := textOf(v); s != "" {
					opts = append(opts, s)
				}
			}
		}
		text := textOf(o["topic"])
		if len(opts) > 0 {
			text = join(": ", text, strings.Join(opts, " / "))
		}
		return bracket("投票", text)
	case "merge_forward":
		return "[合并转发]"
	case "":
		return "[消息]"
	default:
		return "[" + msgType + "]"
	}
}

// placeholder is [kind name msg=id], leaving out what is empty.
func placeholder(kind, name, id string) string {
	if id != "" {
		id = "msg=" + id
	}
	return bracket(kind, join(" ", strings.TrimSpace(name), id))
}

// bracket is [kind detail], or [kind] without a detail.
func bracket(kind, detail string) string {
	detail = strings.TrimSpace(detail)
	if detail == "" {
		return "[" + kind + "]"
	}
	return "[" + kind + " " + detail + "]"
}

// join joins the parts that are not empty.
func join(sep string, parts ...string) string {
	out := ""
	for _, p := range parts {
		if p = strings.TrimSpace(p); p == "" {
			continue
		}
		if out != "" {
			out += sep
		}
		out += p
	}
	return out
}

func renderText(content string, mentions []Mention) string {
	var v struct {
		Text string `json:"text"`
	}
	if json.Unmarshal([]byte(content), &v) != nil {
		return content
	}
	return replaceMentions(v.Text, mentions)
}

// atAll is how a mention of everyone reads.
const atAll = "@所有人"

// replaceMentions writes @name for each mention key in s, longest key
// first so that @_user_1 does not take the front of @_user_10, and
// @所有人 for @_all. It replaces in one pass: a name that looks like a
// key is not replaced again.
func replaceMentions(s string, mentions []Mention) string {
	if !strings.Contains(s, "@_") {
		return s
	}
	sorted := slices.Clone(mentions)
	slices.SortStableFunc(sorted, func(a, b Mention) int { return cmp.Compare(len(b.Key), len(a.Key)) })
	pairs := make([]string, 0, 2*len(sorted)+2)
	for _, m := range sorted {
		if text := mentionText(m); m.Key != "" && text != "" {
			pairs = append(pairs, m.Key, text)
		}
	}
	pairs = append(pairs, "@_all", atAll)
	return strings.NewReplacer(pairs...).Replace(s)
}

// mentionText is how mention m reads: @name, else @id.
func mentionText(m Mention) string {
	switch {
	case m.Key == "@_all" || m.ID == "all":
		return atAll
	case strings.TrimSpace(m.Name) != "":
		return "@" + strings.TrimSpace(m.Name)
	case m.ID != "":
		return "@" + m.ID
	}
	return ""
}

// mentionByID finds the mention of the user whose id is id.
func mentionByID(mentions []Mention, id string) (Mention, bool) {
	if id == "" {
		return Mention{}, false
	}
	for _, m := range mentions {
		if m.ID == id {
			return m, true
		}
	}
	return Mention{}, false
}

// mentionByKey finds the mention written key in the content.
func mentionByKey(mentions []Mention, key string) (Mention, bool) {
	if key == "" {
		return Mention{}, false
	}
	for _, m := range mentions {
		if m.Key == key {
			return m, true
		}
	}
	return Mention{}, false
}

// object decodes content as a JSON object, numbers kept as json.Number;
// nil when it is not one.
func object(content string) map[string]any {
	d := json.NewDecoder(strings.NewReader(content))
	d.UseNumber()
	var m map[string]any
	if d.Decode(&m) != nil {
		return nil
	}
	return m
}

// str is o[key] when it is a string or a number.
func str(o map[string]any, key string) string {
	switch v := o[key].(type) {
	case string:
		return v
	case json.Number:
		return v.String()
	}
	return ""
}

// textOf is the text of a decoded JSON value: a string or number as is, an
// object's content or text (or a locale's of its i18n fields), a list's
// items joined.
func textOf(v any) string {
	switch v := v.(type) {
	case string:
		return v
	case json.Number:
		return v.String()
	case map[string]any:
		for _, key := range []string{"content", "text"} {
			if s := textOf(v[key]); s != "" {
				return s
			}
		}
		for _, key := range []string{"i18n_content", "i18n_text", "i18n"} {
			if m, ok := v[key].(map[string]any); ok {
				if s := textOf(pickLocale(m)); s != "" {
					return s
				}
			}
		}
	case []any:
		parts := make([]string, 0, len(v))
		for _, item := range v {
			if s := textOf(item); s != "" {
				parts = append(parts, s)
			}
		}
		return strings.Join(parts, "、")
	}
	return ""
}

// pickLocale is the zh_cn value of a locale map, else en_us, else ja_jp,
// else the first of the others by key.
func pickLocale(m map[string]any) any {
	for _, key := range []string{"zh_cn", "en_us", "ja_jp"} {
		if v, ok := m[key]; ok && v != nil {
			return v
		}
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if m[k] != nil {
			return m[k]
		}
	}
	return nil
}

var systemVar = regexp.MustCompile(`\{([A-Za-z0-9_]+)\}`)

// renderSystem fills the template of a system message: each {var} takes
// the field of that name, lists joined by "、", and the divider's text.
func renderSystem(content string) string {
	o := object(content)
	tmpl := str(o, "template")
	if tmpl == "" {
		return "[系统消息]"
	}
	out := systemVar.ReplaceAllStringFunc(tmpl, func(m string) string {
		return textOf(o[m[1:len(m)-1]])
	})
	if out = strings.TrimSpace(out); out == "" {
		return "[系统消息]"
	}
	return out
}

// location is Asia/Shanghai, or the fixed +08:00 it has kept since 1991
// when the time zone database is missing.
var location = sync.OnceValue(func() *time.Location {
	if loc, err := time.LoadLocation("Asia/Shanghai"); err == nil {
		return loc
	}
	return time.FixedZone("CST", 8*3600)
})

// stampLayout is how times read: the spec's YYYY-MM-DD HH:mm.
const stampLayout = "2006-01-02 15:04"

// formatStamp formats a decoded time field in Asia/Shanghai: a number or
// numeric string of milliseconds, or of seconds when it is too small to be
// milliseconds of this era. Anything else is empty.
func formatStamp(v any) string {
	var s string
	switch v := v.(type) {
	case string:
		s = v
	case json.Number:
		s = v.String()
	default:
		return ""
	}
	n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
	if err != nil || n <= 0 {
		return ""
	}
	if n < 1e11 {
		return time.Unix(n, 0).In(location()).Format(stampLayout)
	}
	return time.UnixMilli(n).In(location()).Format(stampLayout)
}

// timeRange is "start~end", either side left out when missing.
func timeRange(start, end any) string {
	s, e := formatStamp(start), formatStamp(end)
	switch {
	case s != "" && e != "":
		return s + "~" + e
	case s != "":
		return s
	case e != "":
		return "~" + e
	}
	return ""
}

// isJSONArray tells whether raw holds a JSON array.
func isJSONArray(raw []byte) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) > 0 && raw[0] == '['
}
