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

// TruncatedMarker ends a transcript line that was cut to fit, as it ends
// an inbound message cut to messages.inbound.maxChars.
const TruncatedMarker = "（已截断）"

// Transcript renders msgs, oldest first, keeping the newest lines whose
// total length (in characters, with the newlines between them) stays
// within maxChars.
func Transcript(msgs []msg.Message, loc *time.Location, maxChars int) []string {
	return newest(transcriptLines(msgs, loc), maxChars)
}

// CutTranscript is Transcript for a transcript that is all there is to
// read (a digest, a summary): when even the newest line is longer than
// maxChars, that line is kept, cut to maxChars characters with
// TruncatedMarker at its end, so its time and speaker stay. It is empty
// only when msgs is.
func CutTranscript(msgs []msg.Message, loc *time.Location, maxChars int) []string {
	lines := transcriptLines(msgs, loc)
	if kept := newest(lines, maxChars); len(kept) > 0 || len(lines) == 0 {
		return kept
	}
	return []string{cut(lines[len(lines)-1], maxChars)}
}

// cut shortens line to max characters, the last of them TruncatedMarker
// when there is room for it.
func cut(line string, max int) string {
	runes := []rune(line)
	if len(runes) <= max {
		return line
	}
	marker := utf8.RuneCountInString(TruncatedMarker)
	if max <= marker {
		return string(runes[:max])
	}
	return string(runes[:max-marker]) + TruncatedMarker
}

func transcriptLines(msgs []msg.Message, loc *time.Location) []string {
	lines := make([]string, len(msgs))
	for i, m := range msgs {
		lines[i] = TranscriptLine(m, loc)
	}
	return lines
}

// newest keeps the newest lines whose total length, with the newlines
// between them, stays within maxChars.
func newest(lines []string, maxChars int) []string {
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
