package reply

import (
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
)

type blocks struct {
	mu  sync.Mutex
	got []string
}

func (b *blocks) add(s string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.got = append(b.got, s)
}

func (b *blocks) list() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.got...)
}

func TestChunkerParagraphs(t *testing.T) {
	var b blocks
	c := NewChunker(ChunkOptions{MinChars: 10, MaxChars: 100, BreakOn: BreakParagraph}, b.add)
	for _, d := range []string{"First para", "graph here.\n", "\nSecond ", "paragraph.\n\nThird"} {
		c.Push(d)
	}
	if diff := cmp.Diff([]string{"First paragraph here.", "Second paragraph."}, b.list()); diff != "" {
		t.Errorf("before flush (-want +got):\n%s", diff)
	}
	c.Flush()
	if got := b.list(); len(got) != 3 || got[2] != "Third" {
		t.Errorf("after flush: %q", got)
	}
}

func TestChunkerMinCharsWaits(t *testing.T) {
	var b blocks
	c := NewChunker(ChunkOptions{MinChars: 50, MaxChars: 100, BreakOn: BreakParagraph}, b.add)
	c.Push("Short.\n\nAlso short.\n\n")
	if got := b.list(); len(got) != 0 {
		t.Errorf("blocks under minChars were sent: %q", got)
	}
	c.Flush()
	if got := b.list(); len(got) != 1 || got[0] != "Short.\n\nAlso short." {
		t.Errorf("flush: %q", got)
	}
}

func TestChunkerMaxCharsCutsAtBestBreak(t *testing.T) {
	var b blocks
	c := NewChunker(ChunkOptions{MinChars: 5, MaxChars: 30, BreakOn: BreakParagraph}, b.add)
	c.Push("One sentence here. Another one that runs on and on without a stop")
	got := b.list()
	if len(got) == 0 || got[0] != "One sentence here." {
		t.Fatalf("want a cut at the sentence, got %q", got)
	}
	c.Flush()
	for _, blk := range b.list() {
		if n := utf8.RuneCountInString(blk); n > 30 {
			t.Errorf("block of %d runes exceeds maxChars: %q", n, blk)
		}
	}
	if joined := strings.Join(b.list(), " "); joined != "One sentence here. Another one that runs on and on without a stop" {
		t.Errorf("text lost or changed: %q", joined)
	}
}

func TestChunkerCJKSentences(t *testing.T) {
	var b blocks
	c := NewChunker(ChunkOptions{MinChars: 4, MaxChars: 8, BreakOn: BreakSentence}, b.add)
	c.Push("你好世界。今天天气很好！我们出去走走吧")
	c.Flush()
	if diff := cmp.Diff([]string{"你好世界。", "今天天气很好！", "我们出去走走吧"}, b.list()); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestChunkerKeepsCodeFencesWhole(t *testing.T) {
	var b blocks
	c := NewChunker(ChunkOptions{MinChars: 5, MaxChars: 500, BreakOn: BreakParagraph}, b.add)
	c.Push("Code:\n\n```go\nfunc a() {}\n\nfunc b() {}\n```\n\nDone")
	got := b.list()
	for _, blk := range got {
		if strings.Count(blk, "```")%2 != 0 {
			t.Errorf("a block splits a code fence: %q", blk)
		}
	}
}

// TestChunkerNeverLeaksNo is the streaming half of the NO_REPLY rule: a
// reply streamed as "NO" + "_REPLY" must not send "NO" as a block.
func TestChunkerNeverLeaksNo(t *testing.T) {
	var b blocks
	c := NewChunker(ChunkOptions{MinChars: 1, MaxChars: 2, BreakOn: BreakSentence}, b.add)
	c.Push("NO")
	c.Push("_REP")
	c.Push("LY")
	c.Flush()
	if got := b.list(); len(got) != 0 {
		t.Errorf("silent reply leaked blocks %q", got)
	}
}

func TestChunkerIdleCoalescing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var b blocks
		c := NewChunker(ChunkOptions{MinChars: 10, MaxChars: 1000, BreakOn: BreakParagraph, Idle: time.Second}, b.add)
		c.Push("A line without a paragraph break.")
		time.Sleep(999 * time.Millisecond)
		synctest.Wait()
		if got := b.list(); len(got) != 0 {
			t.Fatalf("sent before the model went idle: %q", got)
		}
		c.Push(" More.")
		time.Sleep(999 * time.Millisecond)
		synctest.Wait()
		if got := b.list(); len(got) != 0 {
			t.Fatalf("new text must restart the idle wait: %q", got)
		}
		time.Sleep(time.Millisecond)
		synctest.Wait()
		if got := b.list(); len(got) != 1 || got[0] != "A line without a paragraph break. More." {
			t.Fatalf("after idle: %q", got)
		}
		c.Flush()
	})
}

func FuzzChunker(f *testing.F) {
	f.Add("Hello.\n\nWorld! 你好。", 3, 10)
	f.Fuzz(func(t *testing.T, text string, minC, maxC int) {
		if minC < 0 || maxC < 1 || maxC > 1000 || !utf8.ValidString(text) {
			return
		}
		var b blocks
		c := NewChunker(ChunkOptions{MinChars: minC, MaxChars: maxC}, b.add)
		for _, part := range strings.SplitAfter(text, " ") {
			c.Push(part)
		}
		c.Flush()
		if IsSilent(text) {
			return
		}
		// Blocks are trimmed and may cut inside a word, so compare the text
		// without whitespace.
		joined := strings.Join(strings.Fields(strings.Join(b.list(), "")), "")
		if want := strings.Join(strings.Fields(text), ""); joined != want {
			t.Fatalf("blocks %q lose text of %q", b.list(), text)
		}
	})
}
