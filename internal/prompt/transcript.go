package prompt

import (
	"strings"
	"time"
	"unicode/utf8"

	"github.com/pincerbot/pincer/internal/msg"
)

// Texts that frame reply history in the body the agent reads.
const (
	HistoryHeader = "【历史聊天记录（仅供参考上下文，请勿直接回复其中的旧消息）】"
	HistoryFooter = "【以上为历史消息；请针对下面这条最新消息进行回复】"
)

// Speaker is "name(id)" with the name sanitized, or the id alone when
// there is no name.
func Speaker(s msg.Sender) string {
	name := Sanitize(s.Name)
	switch {
	case name == "":
		return string(s.ID)
	case s.ID == "":
		return name
	}
	return name + "(" + string(s.ID) + ")"
}

// SenderLabel is the "name (id): " label put before the current message
// when history precedes it in a group.
func SenderLabel(s msg.Sender) string {
	name := Sanitize(s.Name)
	if name == "" {
		name = string(s.ID)
	}
	return name + " (" + string(s.ID) + "): "
}

// TranscriptLine renders one message as "[HH:mm:ss] name(id): text", the
// time in loc. Continuation lines of a multi-line text are indented, so a
// line typed to look like another speaker's never starts like one.
func TranscriptLine(m msg.Message, loc *time.Location) string {
	if loc == nil {
		loc = time.Local
	}
	text := strings.ReplaceAll(strings.TrimSpace(m.Text), "\r\n", "\n")
	text = strings.ReplaceAll(text, "\n", "\n  ")
	return "[" + m.Time.In(loc).Format("15:04:05") + "] " + Speaker(m.Sender) + ": " + text
}

// Transcript renders msgs, oldest first, keeping the newest lines whose
// total length (in characters, with the newlines between them) stays
// within maxChars.
func Transcript(msgs []msg.Message, loc *time.Location, maxChars int) []string {
	lines := make([]string, len(msgs))
	for i, m := range msgs {
		lines[i] = TranscriptLine(m, loc)
	}
	total, start := 0, len(lines)
	for start > 0 {
		n := utf8.RuneCountInString(lines[start-1])
		if start < len(lines) {
			n++ // the newline joining it to the next
		}
		if total+n > maxChars {
			break
		}
		total += n
		start--
	}
	return lines[start:]
}
