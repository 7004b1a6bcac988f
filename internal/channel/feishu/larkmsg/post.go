package larkmsg

import (
	"encoding/json"
	"html"
	"slices"
	"strings"
)

// postBody is one locale's post: a title and paragraphs of elements.
type postBody struct {
	Title     flexString      `json:"title"`
	Content   json.RawMessage `json:"content"`
	ContentV2 json.RawMessage `json:"content_v2"`
	Files     json.RawMessage `json:"files"`
}

// postElem is the union of the post element tags.
type postElem struct {
	Tag       flexString `json:"tag"`
	Text      flexString `json:"text"`
	Href      flexString `json:"href"`
	UserID    flexString `json:"user_id"`
	OpenID    flexString `json:"open_id"`
	UserName  flexString `json:"user_name"`
	EmojiType flexString `json:"emoji_type"`
	ImageKey  flexString `json:"image_key"`
	Language  flexString `json:"language"`
	UnEscape  flexBool   `json:"un_escape"`
}

// postLocales is the order locales are preferred in.
var postLocales = []string{"zh_cn", "en_us", "ja_jp"}

// postBodies returns the bodies a post's content may hold, preferred one
// first: the content itself when it has post fields, else the values of
// its locale wrapper (zh_cn, en_us, ja_jp, then the rest by name). Nil
// when content is not a JSON object.
func postBodies(content string) []postBody {
	var top map[string]json.RawMessage
	if json.Unmarshal([]byte(content), &top) != nil {
		return nil
	}
	var out []postBody
	collectBodies(top, 0, &out)
	return out
}

func collectBodies(top map[string]json.RawMessage, depth int, out *[]postBody) {
	for _, k := range []string{"title", "content", "content_v2", "files"} {
		if _, ok := top[k]; ok {
			b := postBody{Content: top["content"], ContentV2: top["content_v2"], Files: top["files"]}
			_ = json.Unmarshal(top["title"], &b.Title)
			*out = append(*out, b)
			return
		}
	}
	if depth >= 2 {
		return
	}
	keys := make([]string, 0, len(top))
	for k := range top {
		if !slices.Contains(postLocales, k) {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	for _, k := range append(slices.Clone(postLocales), keys...) {
		var inner map[string]json.RawMessage
		if isObject(top[k]) && json.Unmarshal(top[k], &inner) == nil {
			collectBodies(inner, depth+1, out)
		}
	}
}

// paragraphs returns the body's paragraphs: content_v2 when it has any,
// else content. Rows are paragraphs; a run of elements given flat, not in
// rows, is one paragraph.
func (b postBody) paragraphs() [][]postElem {
	var list []json.RawMessage
	if json.Unmarshal(b.ContentV2, &list) != nil || len(list) == 0 {
		list = nil
		if json.Unmarshal(b.Content, &list) != nil {
			return nil
		}
	}
	var out [][]postElem
	var flat []postElem
	inFlat := false
	for _, entry := range list {
		switch {
		case isJSONArray(entry):
			if inFlat {
				out, flat, inFlat = append(out, flat), nil, false
			}
			var row []json.RawMessage
			_ = json.Unmarshal(entry, &row)
			para := make([]postElem, 0, len(row))
			for _, raw := range row {
				if e, ok := decodeElem(raw); ok {
					para = append(para, e)
				}
			}
			out = append(out, para)
		case isObject(entry):
			if e, ok := decodeElem(entry); ok {
				flat = append(flat, e)
				inFlat = true
			}
		}
	}
	if inFlat {
		out = append(out, flat)
	}
	return out
}

func decodeElem(raw json.RawMessage) (postElem, bool) {
	var e postElem
	if !isObject(raw) || json.Unmarshal(raw, &e) != nil {
		return postElem{}, false
	}
	return e, true
}

// renderPost renders a post: title, paragraphs, then attached files. It
// takes the first locale that has any text; content that is not a JSON
// object is [富文本].
func renderPost(content string, mentions []Mention) string {
	bodies := postBodies(content)
	if bodies == nil {
		return "[富文本]"
	}
	for _, b := range bodies {
		if s := b.render(mentions); s != "" {
			return s
		}
	}
	return ""
}

func (b postBody) render(mentions []Mention) string {
	var lines []string
	if t := strings.TrimSpace(string(b.Title)); t != "" {
		lines = append(lines, t)
	}
	for _, para := range b.paragraphs() {
		lines = append(lines, renderParagraph(para, mentions))
	}
	var files []json.RawMessage
	_ = json.Unmarshal(b.Files, &files)
	for _, raw := range files {
		var f struct {
			FileName flexString `json:"file_name"`
			IsFolder flexBool   `json:"is_folder"`
		}
		if !isObject(raw) || json.Unmarshal(raw, &f) != nil {
			continue
		}
		kind := "文件"
		if f.IsFolder {
			kind = "文件夹"
		}
		lines = append(lines, bracket(kind, string(f.FileName)))
	}
	// Blank paragraphs space a post out; keep at most one in a row.
	out := lines[:0]
	for _, l := range lines {
		if strings.TrimSpace(l) == "" && (len(out) == 0 || strings.TrimSpace(out[len(out)-1]) == "") {
			continue
		}
		out = append(out, l)
	}
	return strings.TrimSpace(strings.Join(out, "\n"))
}

// PostImageKeys returns the image_keys of the images embedded in a post,
// in order and each once, from the locale Render reads (the first that
// has any text). Each can be downloaded through the post's message id as
// an image resource.
func PostImageKeys(content string) []string {
	for _, b := range postBodies(content) {
		if b.render(nil) == "" {
			continue
		}
		var keys []string
		for _, para := range b.paragraphs() {
			for _, e := range para {
				k := strings.TrimSpace(string(e.ImageKey))
				if e.Tag == "img" && k != "" && !slices.Contains(keys, k) {
					keys = append(keys, k)
				}
			}
		}
		return keys
	}
	return nil
}

// embeddedImage is how an image inside a post or card reads: it has no
// message id of its own to download it by.
const embeddedImage = " [图片] "

func renderParagraph(elems []postElem, mentions []Mention) string {
	var sb strings.Builder
	afterAt, afterBlock := false, false
	for _, e := range elems {
		piece, block := "", false
		switch e.Tag {
		case "text", "md":
			piece = string(e.Text)
			if e.UnEscape {
				piece = html.UnescapeString(piece)
			}
		case "a":
			piece = link(string(e.Text), string(e.Href))
		case "at":
			piece = postAt(e, mentions)
		case "img":
			piece = embeddedImage
		case "media":
			piece = " [视频] "
		case "emotion":
			if e.EmojiType != "" {
				piece = "[" + string(e.EmojiType) + "]"
			}
		case "hr":
			piece, block = "---", true
		case "code_block":
			piece, block = "```"+string(e.Language)+"\n"+strings.TrimRight(string(e.Text), "\n")+"\n```", true
		default:
			piece = string(e.Text)
		}
		if piece == "" {
			continue
		}
		if (block || afterBlock) && sb.Len() > 0 && !strings.HasSuffix(sb.String(), "\n") {
			sb.WriteByte('\n')
		} else if afterAt && !startsWithSpace(piece) {
			sb.WriteByte(' ')
		}
		sb.WriteString(piece)
		afterAt, afterBlock = e.Tag == "at", block
	}
	return strings.TrimRight(sb.String(), " ")
}

func startsWithSpace(s string) bool {
	return s != "" && strings.ContainsRune(" \t\n", rune(s[0]))
}

// link reads as [text](href), or the one of them there is.
func link(text, href string) string {
	text, href = strings.TrimSpace(text), strings.TrimSpace(href)
	switch {
	case href == "":
		return text
	case text == "" || text == href:
		return href
	}
	return "[" + text + "](" + href + ")"
}

// postAt is how an at element reads: user_id is a mention key, an
// open_id or "all".
func postAt(e postElem, mentions []Mention) string {
	uid := strings.TrimSpace(string(e.UserID))
	if uid == "" {
		uid = strings.TrimSpace(string(e.OpenID))
	}
	if uid == "all" || uid == "@_all" {
		return atAll
	}
	if m, ok := mentionByKey(mentions, uid); ok {
		if t := mentionText(m); t != "" {
			return t
		}
	}
	if m, ok := mentionByID(mentions, uid); ok && strings.TrimSpace(m.Name) != "" {
		return mentionText(m)
	}
	if name := strings.TrimSpace(string(e.UserName)); name != "" {
		return "@" + strings.TrimPrefix(name, "@")
	}
	if uid != "" {
		return "@" + strings.TrimPrefix(uid, "@")
	}
	return ""
}

// postAts returns the at elements of every body of a post.
func postAts(content string) []postElem {
	var out []postElem
	for _, b := range postBodies(content) {
		for _, para := range b.paragraphs() {
			for _, e := range para {
				if e.Tag == "at" {
					out = append(out, e)
				}
			}
		}
	}
	return out
}

// MentionedOpenIDs returns the open_ids a message mentions, each once in
// the order first met: those of mentions, then for a post those its at
// elements carry (a post may come with at elements and no mentions).
// Mentions of everyone are not included; see MentionsAll.
func MentionedOpenIDs(msgType, content string, mentions []Mention) []string {
	var ids []string
	add := func(id string) {
		if id != "" && id != "all" && !slices.Contains(ids, id) {
			ids = append(ids, id)
		}
	}
	for _, m := range mentions {
		if m.Key != "@_all" && isOpenID(m) {
			add(m.ID)
		}
	}
	if msgType == "post" {
		for _, e := range postAts(content) {
			uid := string(e.UserID)
			if m, ok := mentionByKey(mentions, uid); ok {
				if isOpenID(m) {
					add(m.ID)
				}
			} else if strings.HasPrefix(uid, "ou_") {
				add(uid)
			}
			if strings.HasPrefix(string(e.OpenID), "ou_") {
				add(string(e.OpenID))
			}
		}
	}
	return ids
}

func isOpenID(m Mention) bool {
	return m.IDType == "open_id" || (m.IDType == "" && strings.HasPrefix(m.ID, "ou_"))
}

// MentionsAll tells whether a message mentions everyone: a mention entry
// for all, @_all in a text's content (it may come with no mention entry),
// or an at element for all in a post.
func MentionsAll(msgType, content string, mentions []Mention) bool {
	for _, m := range mentions {
		if m.Key == "@_all" || m.ID == "all" {
			return true
		}
	}
	switch msgType {
	case "text":
		var v struct {
			Text string `json:"text"`
		}
		if json.Unmarshal([]byte(content), &v) != nil {
			return strings.Contains(content, "@_all")
		}
		return strings.Contains(v.Text, "@_all")
	case "post":
		for _, e := range postAts(content) {
			if uid := strings.TrimSpace(string(e.UserID)); uid == "all" || uid == "@_all" {
				return true
			}
		}
	}
	return false
}
