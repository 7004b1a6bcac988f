package pipeline

import (
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/pincerbot/pincer/internal/msg"
	"github.com/pincerbot/pincer/internal/trigger"
)

// Agent-visible texts of /summary.
const (
	textSummaryFailed = "获取最近聊天记录失败："
	textSummaryEmpty  = "最近没有可以总结的聊天记录。"
)

// IsSummaryCommand reports whether m is a /summary command this pipeline
// answers (its leading mention of the bot stripped), so that whatever
// sits in front of the pipeline lets it through at once, as it does the
// other commands.
func (p *Pipeline) IsSummaryCommand(m msg.Message) bool {
	_, ok := p.summaryCount(p.chat(m.Peer), m, trigger.StripLeadingMention(m, p.opts.Bot.Self()))
	return ok
}

// ParseSummary matches a /summary command at the start of text (the
// leading mention of the bot already stripped): one of commands,
// case-insensitively, followed by the end of the text, whitespace or a
// digit. A leading integer of one to four digits after it is the count;
// anything else, 0 included, means def. The count is clamped to
// [1, maxCount].
func ParseSummary(text string, commands []string, def, maxCount int) (int, bool) {
	text = strings.TrimSpace(text)
	if text == "" {
		return 0, false
	}
	for _, c := range commands {
		if c == "" || !sameFirstByte(text[0], c[0]) {
			continue // the common case: chat that starts with anything else
		}
		n := utf8.RuneCountInString(c)
		if n == 0 || utf8.RuneCountInString(text) < n {
			continue
		}
		cut := 0
		for range n {
			_, size := utf8.DecodeRuneInString(text[cut:])
			cut += size
		}
		if !strings.EqualFold(text[:cut], c) {
			continue
		}
		rest := text[cut:]
		if r, _ := utf8.DecodeRuneInString(rest); rest != "" && !unicode.IsSpace(r) && !isDigit(r) {
			continue
		}
		count := def
		rest = strings.TrimLeftFunc(rest, unicode.IsSpace)
		digits := 0
		for digits < len(rest) && isDigit(rune(rest[digits])) {
			digits++
		}
		if digits >= 1 && digits <= 4 {
			if v, _ := strconv.Atoi(rest[:digits]); v > 0 {
				count = v
			}
		}
		return max(1, min(count, maxCount)), true
	}
	return 0, false
}

func isDigit(r rune) bool { return r >= '0' && r <= '9' }

// sameFirstByte compares two leading bytes, ASCII letters without case.
func sameFirstByte(a, b byte) bool {
	lower := func(x byte) byte {
		if 'A' <= x && x <= 'Z' {
			return x + 'a' - 'A'
		}
		return x
	}
	return lower(a) == lower(b) || a >= utf8.RuneSelf || b >= utf8.RuneSelf
}
