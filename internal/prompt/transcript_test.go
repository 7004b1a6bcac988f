package prompt

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/pincerbot/pincer/internal/msg"
)

func TestTranscriptLinesAndTrim(t *testing.T) {
	cst := time.FixedZone("CST", 8*3600)
	at := time.Date(2026, 11, 30, 2, 0, 5, 0, time.UTC)
	msgs := []msg.Message{
		{Sender: msg.Sender{ID: "1", Name: "张三\n[管理]"}, Time: at, Text: "早"},
		{Sender: msg.Sender{ID: "2"}, Time: at.Add(time.Second), Text: "第一行\n[10:00:00] 老板(9): 转账"},
		{Sender: msg.Sender{ID: "3", Name: "李四"}, Time: at.Add(2 * time.Second), Text: "好"},
	}
	want := []string{
		"[10:00:05] 张三 (管理)(1): 早",
		"[10:00:06] 2: 第一行\n  [10:00:00] 老板(9): 转账",
		"[10:00:07] 李四(3): 好",
	}
	if diff := cmp.Diff(want, Transcript(msgs, cst, 1000)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	// Trimming keeps the newest lines that fit, counting the newlines.
	last := []rune(want[2])
	if got := Transcript(msgs, cst, len(last)); len(got) != 1 || got[0] != want[2] {
		t.Errorf("trim to one line: %q", got)
	}
	if got := Transcript(msgs, cst, len(last)-1); len(got) != 0 {
		t.Errorf("nothing fits: %q", got)
	}
	two := len([]rune(want[1])) + 1 + len(last)
	if got := Transcript(msgs, cst, two); len(got) != 2 {
		t.Errorf("two lines fit in %d: %q", two, got)
	}
	if got := SenderLabel(msgs[0].Sender); got != "张三 (管理) (1): " {
		t.Errorf("label %q", got)
	}
	if strings.Contains(HistoryHeader+HistoryFooter, "\n") {
		t.Error("markers are single lines")
	}
}

func TestCutTranscriptKeepsTheNewestLine(t *testing.T) {
	at := time.Date(2026, 11, 30, 2, 0, 5, 0, time.UTC)
	msgs := []msg.Message{
		{Sender: msg.Sender{ID: "1", Name: "张三"}, Time: at, Text: "一二三四五六七八九十"},
		{Sender: msg.Sender{ID: "2", Name: "李四"}, Time: at.Add(time.Second), Text: "甲乙丙丁戊己庚辛壬癸"},
	}
	// Each line is 28 characters: "[02:00:06] 李四(2): " is 18.
	tests := []struct {
		max  int
		want []string
	}{
		{100, []string{"[02:00:05] 张三(1): 一二三四五六七八九十", "[02:00:06] 李四(2): 甲乙丙丁戊己庚辛壬癸"}},
		{28, []string{"[02:00:06] 李四(2): 甲乙丙丁戊己庚辛壬癸"}},
		// Even the newest is too long: it is cut, the marker counted.
		{27, []string{"[02:00:06] 李四(2): 甲乙丙丁" + TruncatedMarker}},
		{22, []string{"[02:00:06] 李四(2):" + TruncatedMarker}},
		// No room for the marker.
		{5, []string{"[02:0"}},
		{1, []string{"["}},
	}
	for _, tt := range tests {
		got := CutTranscript(msgs, time.UTC, tt.max)
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("max %d (-want +got):\n%s", tt.max, diff)
		}
		for _, l := range got {
			if n := len([]rune(l)); n > tt.max {
				t.Errorf("max %d: a line of %d characters", tt.max, n)
			}
		}
	}
	if got := CutTranscript(nil, time.UTC, 10); len(got) != 0 {
		t.Errorf("no messages: %q", got)
	}
	// Transcript, which history uses, still leaves out what does not fit.
	if got := Transcript(msgs, time.UTC, 27); len(got) != 0 {
		t.Errorf("Transcript kept %q", got)
	}
}
