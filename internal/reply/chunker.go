package reply

import (
	"strings"
	"sync"
	"time"
	"unicode/utf8"
)

// Break is where streamed text is preferably cut into blocks.
type Break string

// Break preferences, coarsest first.
const (
	BreakParagraph Break = "paragraph"
	BreakNewline   Break = "newline"
	BreakSentence  Break = "sentence"
)

// ChunkOptions configure block streaming.
type ChunkOptions struct {
	// MinChars is the smallest block sent before the reply ends; shorter
	// text waits for more.
	MinChars int
	// MaxChars is the largest block; longer text is cut at the best break
	// within it.
	MaxChars int
	// BreakOn is the preferred break.
	BreakOn Break
	// Idle sends the buffered text (when at least MinChars) after the
	// model has paused this long; 0 disables it.
	Idle time.Duration
}

// Chunker cuts streaming reply text into blocks. Push and Flush may be
// called from one goroutine while the idle timer fires on another; emit is
// always called with the chunker's lock held, so blocks come out in order.
type Chunker struct {
	opts ChunkOptions
	emit func(block string)

	mu     sync.Mutex
	buf    string // text not yet emitted
	all    strings.Builder
	timer  *time.Timer
	closed bool
	// cuts counts the cuts made; mark* are the state at Mark.
	cuts                       int
	markBuf, markAll, markCuts int
}

// NewChunker returns a Chunker that hands blocks to emit.
func NewChunker(o ChunkOptions, emit func(block string)) *Chunker {
	if o.MaxChars <= 0 {
		o.MaxChars = 1200
	}
	o.MinChars = min(max(o.MinChars, 1), o.MaxChars)
	if o.BreakOn == "" {
		o.BreakOn = BreakParagraph
	}
	return &Chunker{opts: o, emit: emit}
}

// Push adds streamed text and emits every block that is ready.
func (c *Chunker) Push(delta string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return
	}
	c.buf += delta
	c.all.WriteString(delta)
	c.cut(false)
	if c.opts.Idle > 0 {
		if c.timer == nil {
			c.timer = time.AfterFunc(c.opts.Idle, c.onIdle)
		} else {
			c.timer.Reset(c.opts.Idle)
		}
	}
}

// Flush emits whatever is left, at the end of the reply. A reply that is
// the silent token emits nothing.
func (c *Chunker) Flush() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	if c.timer != nil {
		c.timer.Stop()
	}
	if IsSilent(c.all.String()) {
		return
	}
	if strings.TrimSpace(c.buf) != "" {
		c.emit(strings.TrimSpace(c.buf))
	}
	c.buf = ""
}

func (c *Chunker) onIdle() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.closed {
		c.cut(true)
	}
}

// cut emits the ready blocks. Hard cuts happen at MaxChars; soft ones at the
// preferred break once MinChars are buffered, or at any break when idle.
func (c *Chunker) cut(idle bool) {
	if MaySilence(c.all.String()) {
		return // it may yet be NO_REPLY: never leak "NO"
	}
	for utf8.RuneCountInString(c.buf) > c.opts.MaxChars {
		limit := byteOffset(c.buf, c.opts.MaxChars)
		at := lastBreak(c.buf[:limit], breaksFrom(c.opts.BreakOn), false)
		if at <= 0 {
			at = limit
		}
		c.send(at)
	}
	if utf8.RuneCountInString(c.buf) < c.opts.MinChars {
		return
	}
	kinds := []Break{c.opts.BreakOn}
	if idle {
		kinds = breaksFrom(c.opts.BreakOn)
	}
	if at := lastBreak(c.buf, kinds, true); at > 0 && utf8.RuneCountInString(c.buf[:at]) >= c.opts.MinChars {
		c.send(at)
	}
}

func (c *Chunker) send(at int) {
	c.cuts++
	block := strings.TrimSpace(c.buf[:at])
	c.buf = strings.TrimLeft(c.buf[at:], " \t\n")
	if block != "" {
		c.emit(block)
	}
}

// breaksFrom lists the breaks to try, preferred first, then finer ones, then
// plain whitespace.
func breaksFrom(b Break) []Break {
	all := []Break{BreakParagraph, BreakNewline, BreakSentence, "space"}
	for i, k := range all {
		if k == b {
			return all[i:]
		}
	}
	return all
}

// lastBreak returns the byte offset just after the last break of the first
// kind in kinds that occurs in s, or 0. With outsideFence, breaks inside an
// open ``` code fence do not count.
func lastBreak(s string, kinds []Break, outsideFence bool) int {
	for _, k := range kinds {
		for end := len(s); end > 0; {
			at := lastOf(s[:end], k)
			if at <= 0 {
				break
			}
			if !outsideFence || strings.Count(s[:at], "```")%2 == 0 {
				return at
			}
			end = at - 1
		}
	}
	return 0
}

func lastOf(s string, k Break) int {
	switch k {
	case BreakParagraph:
		if i := strings.LastIndex(s, "\n\n"); i >= 0 {
			return i + 2
		}
	case BreakNewline:
		if i := strings.LastIndexByte(s, '\n'); i >= 0 {
			return i + 1
		}
	case BreakSentence:
		for i := len(s); i > 0; {
			r, size := utf8.DecodeLastRuneInString(s[:i])
			i -= size
			switch r {
			case '。', '！', '？', '…':
				return i + size
			case '.', '!', '?':
				if i+size == len(s) || s[i+size] == ' ' || s[i+size] == '\n' {
					return i + size
				}
			}
		}
	default:
		if i := strings.LastIndexAny(s, " \t\n"); i >= 0 {
			return i + 1
		}
	}
	return 0
}

// byteOffset returns the byte offset of rune n in s.
func byteOffset(s string, n int) int {
	for i := range s {
		if n == 0 {
			return i
		}
		n--
	}
	return len(s)
}

// Mark remembers how much text has been pushed, for Rollback.
func (c *Chunker) Mark() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.markBuf, c.markAll, c.markCuts = len(c.buf), c.all.Len(), c.cuts
}

// Rollback drops the text pushed since Mark, when none of it has been cut
// into a block yet, and reports whether it could: the text of a model call
// that failed before anything of it was sent.
func (c *Chunker) Rollback() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cuts != c.markCuts || c.markBuf > len(c.buf) {
		return false
	}
	c.buf = c.buf[:c.markBuf]
	all := c.all.String()[:c.markAll]
	c.all.Reset()
	c.all.WriteString(all)
	return true
}
