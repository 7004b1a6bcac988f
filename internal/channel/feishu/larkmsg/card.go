package larkmsg

import (
	"regexp"
	"strings"
)

// cardPlaceholder is how a card with no text of its own reads: a template
// or CardKit reference, or a card of images and buttons only.
const cardPlaceholder = "[卡片]"

// maxCardDepth bounds how deep card components are walked.
const maxCardDepth = 32

// renderCard renders an interactive card's text: the header's title and
// subtitle, then its components in order, in any of the shapes a card is
// read in (the degraded projection of rows of inline elements, schema 1.0
// elements, schema 2.0 body.elements, i18n_elements, or a user_dsl string
// holding one of them). Mentions are resolved, style tags dropped, and so
// is the "upgrade your client" notice Feishu puts in cards it cannot
// project.
func renderCard(content string, mentions []Mention) string {
	o := object(content)
	if o == nil {
		return cardPlaceholder
	}
	if s := cardText(o, mentions, 0); s != "" {
		return s
	}
	return cardPlaceholder
}

func cardText(o map[string]any, mentions []Mention, depth int) string {
	if dsl, ok := o["user_dsl"].(string); ok && depth < 2 {
		if inner := object(dsl); inner != nil {
			if s := cardText(inner, mentions, depth+1); s != "" {
				return s
			}
		}
	}
	w := &cardWalker{mentions: mentions}
	if h, ok := o["header"].(map[string]any); ok {
		w.add(textOf(h["title"]))
		w.add(textOf(h["subtitle"]))
	}
	if t, ok := o["title"].(string); ok {
		w.add(t)
	}
	w.children(o, 0)
	if b, ok := o["body"].(map[string]any); ok {
		w.children(b, 0)
	}
	return dropUpgradeNotice(strings.Join(w.lines, "\n"))
}

// cardWalker collects a card's lines.
type cardWalker struct {
	mentions []Mention
	lines    []string
}

// add appends a line of card text once cleaned, unless it is empty.
func (w *cardWalker) add(s string) {
	if s = strings.TrimSpace(cleanCardText(s, w.mentions)); s != "" {
		w.lines = append(w.lines, s)
	}
}

// children walks a container's elements and i18n_elements.
func (w *cardWalker) children(c map[string]any, depth int) {
	w.list(c["elements"], depth+1)
	if m, ok := c["i18n_elements"].(map[string]any); ok {
		w.list(pickLocale(m), depth+1)
	}
}

func (w *cardWalker) list(v any, depth int) {
	items, _ := v.([]any)
	for _, it := range items {
		w.node(it, depth)
	}
}

func (w *cardWalker) node(v any, depth int) {
	if depth > maxCardDepth {
		return
	}
	switch x := v.(type) {
	case []any:
		// A row of the degraded projection: inline elements on one line.
		w.add(w.inline(x, "", depth+1))
	case map[string]any:
		w.component(x, depth)
	case string:
		w.add(x)
	}
}

func (w *cardWalker) component(c map[string]any, depth int) {
	switch str(c, "tag") {
	case "hr", "select_static", "multi_select_static", "select_person", "multi_select_person",
		"overflow", "date_picker", "picker_time", "picker_datetime", "input", "chart", "table":
		// Dividers and controls carry no message text.
	case "img", "image", "img_combination":
		w.add(strings.TrimSpace(embeddedImage))
	case "button":
		if t := strings.TrimSpace(textOf(c["text"])); t != "" {
			w.add("[" + t + "]")
		}
	case "note":
		items, _ := c["elements"].([]any)
		w.add(w.inline(items, " ", depth+1))
	case "div":
		w.add(textOf(c["text"]))
		fields, _ := c["fields"].([]any)
		for _, f := range fields {
			if fm, ok := f.(map[string]any); ok {
				w.add(textOf(fm["text"]))
			}
		}
		if extra, ok := c["extra"].(map[string]any); ok {
			w.component(extra, depth+1)
		}
	case "markdown", "lark_md", "plain_text":
		w.add(textOf(c))
	case "text", "a", "at", "person":
		w.add(w.inlineElem(c))
	case "column_set":
		cols, _ := c["columns"].([]any)
		for _, col := range cols {
			if cm, ok := col.(map[string]any); ok && depth < maxCardDepth {
				w.children(cm, depth+1)
			}
		}
	case "action":
		w.list(c["actions"], depth+1)
	default:
		// Containers (column, form, collapsible_panel,
		// interactive_container) and components this walker does not
		// know: their text, their header's title, then their elements.
		if h, ok := c["header"].(map[string]any); ok {
			w.add(textOf(h["title"]))
		}
		if _, ok := c["text"]; ok {
			w.add(textOf(c["text"]))
		} else if _, ok := c["content"]; ok {
			w.add(textOf(c))
		}
		w.children(c, depth)
	}
}

// inline joins a row's elements into one line. Images in rows are the
// dead ones of cards Feishu could not project; they are left out.
func (w *cardWalker) inline(row []any, sep string, depth int) string {
	if depth > maxCardDepth {
		return ""
	}
	parts := make([]string, 0, len(row))
	for _, e := range row {
		m, ok := e.(map[string]any)
		if !ok {
			continue
		}
		var s string
		switch str(m, "tag") {
		case "img", "image", "hr":
			continue
		case "note":
			items, _ := m["elements"].([]any)
			s = w.inline(items, " ", depth+1)
		default:
			s = w.inlineElem(m)
		}
		if s != "" {
			parts = append(parts, s)
		}
	}
	return strings.Join(parts, sep)
}

func (w *cardWalker) inlineElem(m map[string]any) string {
	switch str(m, "tag") {
	case "a":
		return link(textOf(m["text"]), str(m, "href"))
	case "at", "person":
		return postAt(postElem{UserID: flexString(str(m, "user_id")), OpenID: flexString(str(m, "open_id")), UserName: flexString(str(m, "user_name"))}, w.mentions)
	case "button":
		if t := strings.TrimSpace(textOf(m["text"])); t != "" {
			return "[" + t + "]"
		}
		return ""
	}
	return textOf(m)
}

var (
	cardAt     = regexp.MustCompile(`(?i)<at\b([^>]*)>(?:([^<]*)</at>)?`)
	cardAtID   = regexp.MustCompile(`(?i)\b(?:user_id|open_id|id|email)\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s"'/>]+))`)
	cardStyle  = regexp.MustCompile(`(?i)</?(?:font|text_tag|number_tag)\b[^>]*>`)
	cardUpdate = regexp.MustCompile(`(?:\[图片\]\s*)?请升级至最新版本客户端[，,]\s*以查看内容[。.]?`)
)

// cleanCardText resolves the at tags of card markdown to @name (the name
// written inside the tag, else the mention's, else nothing: an unknown id
// is dropped) and drops style tags, keeping their text.
func cleanCardText(s string, mentions []Mention) string {
	if !strings.Contains(s, "<") {
		return s
	}
	s = cardAt.ReplaceAllStringFunc(s, func(tag string) string {
		sub := cardAt.FindStringSubmatch(tag)
		id := ""
		if a := cardAtID.FindStringSubmatch(sub[1]); a != nil {
			id = strings.TrimSpace(a[1] + a[2] + a[3])
		}
		name := strings.TrimSpace(sub[2])
		switch {
		case id == "all":
			return atAll
		case name != "":
			return "@" + strings.TrimPrefix(name, "@")
		}
		if m, ok := mentionByID(mentions, id); ok {
			return mentionText(m)
		}
		return ""
	})
	for {
		next := cardStyle.ReplaceAllString(s, "")
		if next == s {
			return s
		}
		s = next
	}
}

// dropUpgradeNotice removes "请升级至最新版本客户端，以查看内容" (with either
// comma) and the dead [图片] before it, until none is left.
func dropUpgradeNotice(s string) string {
	for {
		next := cardUpdate.ReplaceAllString(s, "")
		if next == s {
			break
		}
		s = next
	}
	lines := strings.Split(s, "\n")
	out := lines[:0]
	for _, l := range lines {
		if l = strings.TrimRight(l, " \t\r"); strings.TrimSpace(l) != "" {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
