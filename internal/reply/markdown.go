package reply

import (
	"regexp"
	"strings"
)

// Line patterns of FlattenMarkdown.
var (
	mdHeading = regexp.MustCompile(`^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$`)
	mdRule    = regexp.MustCompile(`^\s{0,3}([-*_])(\s*[-*_]){2,}\s*$`)
	mdTask    = regexp.MustCompile(`^(\s*)[-*+]\s+\[([ xX])\]\s+(.*)$`)
	mdBullet  = regexp.MustCompile(`^(\s*)[-*+]\s+(.*)$`)
	mdOrdered = regexp.MustCompile(`^(\s*)(\d{1,9})[.)]\s+(.*)$`)
	mdQuote   = regexp.MustCompile(`^\s{0,3}>\s?(.*)$`)
	mdFence   = regexp.MustCompile("^\\s{0,3}(```|~~~)")

	mdImage  = regexp.MustCompile(`!\[([^\]]*)\]\(([^)\s]*)(?:\s+"[^"]*")?\)`)
	mdLink   = regexp.MustCompile(`\[([^\]]*)\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)
	mdBold   = regexp.MustCompile(`\*\*([^*\n]+?)\*\*|__([^_\n]+?)__`)
	mdItalic = regexp.MustCompile(`(^|[^*\w])\*([^*\s][^*\n]*?)\*([^*\w]|$)`)
	mdStrike = regexp.MustCompile(`~~([^~\n]+?)~~`)
	mdCode   = regexp.MustCompile("`([^`\n]+)`")
	blanks   = regexp.MustCompile(`\n{3,}`)
)

// FlattenMarkdown rewrites markdown as plain text for chats that show
// markup literally (QQ): headings become 【heading】 after a blank line,
// list items •, ◦ and · by depth, tasks ✅ and ⬜, emphasis and code
// markers go, links read "label（url）", images [图片:alt], quotes ｜,
// rules ————————, and code fences are dropped with their content kept
// verbatim. Runs of blank lines collapse to one. Anything it does not
// recognise passes through unchanged.
func FlattenMarkdown(s string) string {
	lines := strings.Split(strings.ReplaceAll(s, "\r\n", "\n"), "\n")
	out := make([]string, 0, len(lines))
	inCode := false
	for _, line := range lines {
		if mdFence.MatchString(line) {
			inCode = !inCode
			continue
		}
		if inCode {
			out = append(out, line)
			continue
		}
		out = append(out, flattenLine(line, &out)...)
	}
	for i, l := range out {
		out[i] = strings.TrimRight(l, " \t")
	}
	text := blanks.ReplaceAllString(strings.Join(out, "\n"), "\n\n")
	return strings.TrimSpace(text)
}

// flattenLine converts one line; a heading may add a blank line before.
func flattenLine(line string, prev *[]string) []string {
	if g := mdHeading.FindStringSubmatch(line); g != nil {
		head := "【" + inline(g[2]) + "】"
		if n := len(*prev); n > 0 && strings.TrimSpace((*prev)[n-1]) != "" {
			return []string{"", head}
		}
		return []string{head}
	}
	if mdRule.MatchString(line) {
		return []string{"————————"}
	}
	if g := mdTask.FindStringSubmatch(line); g != nil {
		box := "⬜"
		if g[2] != " " {
			box = "✅"
		}
		return []string{bullet(g[1]) + box + " " + inline(g[3])}
	}
	if g := mdBullet.FindStringSubmatch(line); g != nil {
		return []string{bullet(g[1]) + inline(g[2])}
	}
	if g := mdOrdered.FindStringSubmatch(line); g != nil {
		return []string{g[1] + g[2] + ". " + inline(g[3])}
	}
	if g := mdQuote.FindStringSubmatch(line); g != nil {
		return []string{"｜" + inline(g[1])}
	}
	return []string{inline(line)}
}

// bullet is the marker of a list item indented by indent: • at the top,
// ◦ one level in, · deeper.
func bullet(indent string) string {
	width := 0
	for _, r := range indent {
		if r == '\t' {
			width += 4
		} else {
			width++
		}
	}
	switch level := width / 2; {
	case level == 0:
		return "• "
	case level == 1:
		return "  ◦ "
	default:
		return "    · "
	}
}

// inline removes emphasis and code markers and rewrites links and images.
func inline(s string) string {
	s = mdImage.ReplaceAllStringFunc(s, func(m string) string {
		alt := mdImage.FindStringSubmatch(m)[1]
		if strings.TrimSpace(alt) == "" {
			return "[图片]"
		}
		return "[图片:" + alt + "]"
	})
	s = mdLink.ReplaceAllStringFunc(s, func(m string) string {
		g := mdLink.FindStringSubmatch(m)
		label, url := strings.TrimSpace(g[1]), g[2]
		if label == "" || label == url {
			return url
		}
		return label + "（" + url + "）"
	})
	s = mdCode.ReplaceAllString(s, "$1")
	s = mdBold.ReplaceAllString(s, "$1$2")
	s = mdStrike.ReplaceAllString(s, "$1")
	s = mdItalic.ReplaceAllString(s, "$1$2$3")
	return s
}

// skipDecoration is what may surround a SKIP reply: heading brackets,
// bullets, emphasis and punctuation.
const skipDecoration = " \t\r\n【】•◦·*#->_`~。.!！:：[]"

// IsSkip reports whether a digest reply says there is nothing worth
// reporting: SKIP in any case, once markdown is flattened and decoration
// is stripped (**SKIP**, ## SKIP, - skip).
func IsSkip(text string) bool {
	return strings.EqualFold(strings.Trim(FlattenMarkdown(text), skipDecoration), "SKIP")
}
