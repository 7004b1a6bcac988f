package llm

import "strings"

// ThinkSplitter separates the reasoning a model writes into its reply's
// content from the visible text. Models served by Ollama, vLLM and
// llama.cpp, and some hosted ones (DeepSeek-R1 distills, QwQ, Qwen3), wrap
// it in <think>…</think>; <think type="…">, <thinking>, <thought> and
// <reasoning> are read the same way, in any case, and an empty
// <think/> is dropped.
//
// A tag opens reasoning only where a model starts it: at the start of the
// text, at the start of a line (after spaces), or right after an earlier
// block closed, and never inside a ``` or ~~~ code fence. So a reply that
// talks about the tag, in a sentence, an inline code span or a fenced
// example, keeps it as text. Reasoning lasts until its closing tag; a
// block still open when the text ends is reasoning to the end.
//
// Many models are served with the opening tag already in their prompt
// (Qwen3 and DeepSeek-R1 on vLLM or llama.cpp without a reasoning parser):
// their reply is the reasoning, a closing tag, then the answer. So a
// closing tag that ends its line (spaces aside) before any block opened
// or any opening tag was written, outside a code fence, makes everything
// before it reasoning: the piece of it in this Push is returned as
// reasoning, and TookBack reports that the text returned by earlier
// pushes was reasoning too.
//
// Pieces may split a tag anywhere ("<thi" + "nk>"): the splitter holds
// back the few bytes that may yet be a tag or a fence, so the text it
// returns never shows a piece of one, and what it returns for any split
// of a text is what it returns for the text whole. Use one splitter per
// model call; the zero value is ready.
type ThinkSplitter struct {
	held string
	// inside is the open block's tag name ("think"), "" in text.
	inside string
	// midLine: text other than spaces was seen since the start, the last
	// newline or the last closed block, so a tag here is text.
	midLine bool
	// fence is the character of the open code fence ('`' or '~'), 0 when
	// none is open; fenceLen is its length.
	fence    byte
	fenceLen int
	// settled: a block opened or an opening tag was written (or a
	// closing tag without one was read), so a closing tag is no longer
	// read as the end of reasoning the prompt opened.
	settled bool
	// tookBack: the last Push read such a closing tag.
	tookBack bool
}

// TookBack reports whether the last Push or End found a closing tag with
// no opening one before it: the text returned by the pushes before it
// was reasoning, not text.
func (s *ThinkSplitter) TookBack() bool { return s.tookBack }

// reasoningTags are the tag names that hold reasoning, lower case.
var reasoningTags = []string{"think", "thinking", "thought", "reasoning"}

// maxTagLen bounds an opening tag with attributes (<think type="…">):
// a longer one is text.
const maxTagLen = 256

// Push adds a piece of the content and returns the text and the
// reasoning it makes known.
func (s *ThinkSplitter) Push(delta string) (text, reasoning string) {
	return s.split(s.held+delta, false)
}

// End closes the content and returns what was still held back: a piece
// of a tag that never completed is text where text was going on, and
// reasoning inside an open block.
func (s *ThinkSplitter) End() (text, reasoning string) {
	return s.split(s.held, true)
}

func (s *ThinkSplitter) split(buf string, final bool) (string, string) {
	var text, reasoning strings.Builder
	s.held = ""
	s.tookBack = false
	i := 0
	hold := func() {
		if final {
			return
		}
		s.held = buf[i:]
		i = len(buf)
	}
	for i < len(buf) {
		if s.inside != "" {
			j := strings.IndexByte(buf[i:], '<')
			if j < 0 {
				reasoning.WriteString(buf[i:])
				break
			}
			reasoning.WriteString(buf[i : i+j])
			i += j
			n, st := closingTag(buf[i:], s.inside)
			switch {
			case st == tagMore && !final:
				hold()
			case st == tagMatch:
				i += n
				s.inside, s.midLine = "", false
			default:
				reasoning.WriteByte('<')
				i++
			}
			continue
		}
		if s.midLine {
			stops := "\n"
			if !s.settled && s.fence == 0 {
				stops = "\n<"
			}
			j := strings.IndexAny(buf[i:], stops)
			if j < 0 {
				text.WriteString(buf[i:])
				break
			}
			if buf[i+j] == '\n' {
				text.WriteString(buf[i : i+j+1])
				i += j + 1
				s.midLine = false
				continue
			}
			text.WriteString(buf[i : i+j])
			i += j
			switch n, st := s.promptClosed(buf[i:], final); {
			case st == tagMore:
				hold()
			case st == tagMatch:
				// Everything so far was reasoning the prompt opened.
				reasoning.WriteString(text.String())
				text.Reset()
				i += n
				s.settled, s.tookBack, s.midLine = true, true, false
			default:
				text.WriteByte('<')
				i++
			}
			continue
		}
		switch c := buf[i]; {
		case c == ' ' || c == '\t' || c == '\r' || c == '\n':
			text.WriteByte(c)
			i++
		case c == '`' || c == '~':
			n := 1
			for i+n < len(buf) && buf[i+n] == c {
				n++
			}
			if i+n == len(buf) && !final {
				hold() // the fence may go on
				continue
			}
			if n >= 3 {
				switch {
				case s.fence == 0:
					s.fence, s.fenceLen = c, n
				case s.fence == c && n >= s.fenceLen:
					s.fence = 0
				}
			}
			text.WriteString(buf[i : i+n])
			i += n
			s.midLine = true
		case c == '<' && s.fence == 0:
			n, name, st := openingTag(buf[i:])
			switch {
			case st == tagMore && !final:
				hold()
			case st == tagMatch && name == "":
				i += n // <think/>: an empty block
				s.settled = true
			case st == tagMatch:
				i += n
				s.inside, s.settled = name, true
			default:
				s.midLine = true
			}
		default:
			s.midLine = true
		}
	}
	return text.String(), reasoning.String()
}

type tagState int

const (
	tagNo    tagState = iota // not a reasoning tag
	tagMore                  // a prefix of one: the next bytes decide
	tagMatch                 // a whole tag
)

// openingTag reads a reasoning block's opening tag at the start of s
// (which starts with '<'): its length and name, with name "" for a
// self-closing one.
func openingTag(s string) (int, string, tagState) {
	j := 1
	for j < len(s) && isLetter(s[j]) {
		j++
	}
	name := strings.ToLower(s[1:j])
	if j == len(s) {
		for _, t := range reasoningTags {
			if strings.HasPrefix(t, name) {
				return 0, "", tagMore
			}
		}
		return 0, "", tagNo
	}
	known := false
	for _, t := range reasoningTags {
		known = known || t == name
	}
	if !known {
		return 0, "", tagNo
	}
	switch s[j] {
	case '>':
		return j + 1, name, tagMatch
	case '/':
		switch {
		case j+1 == len(s):
			return 0, "", tagMore
		case s[j+1] == '>':
			return j + 2, "", tagMatch
		}
		return 0, "", tagNo
	case ' ', '\t', '\n', '\r':
		k := strings.IndexAny(s[j:min(len(s), maxTagLen)], "<>")
		switch {
		case k < 0 && len(s) < maxTagLen:
			return 0, "", tagMore
		case k < 0 || s[j+k] == '<':
			return 0, "", tagNo
		case s[j+k-1] == '/':
			return j + k + 1, "", tagMatch
		}
		return j + k + 1, name, tagMatch
	}
	return 0, "", tagNo
}

// promptClosed reads, at the start of s (which starts with '<'), a
// closing tag that ends reasoning the prompt opened: a closing reasoning
// tag, then spaces up to a line break or the end of the text. The length
// it returns takes the spaces and line breaks after the tag too. An
// opening reasoning tag written mid-line settles the splitter (the text
// talks about tags) and is tagNo, as is anything else.
func (s *ThinkSplitter) promptClosed(b string, final bool) (int, tagState) {
	if len(b) > 1 && b[1] != '/' {
		if _, name, st := openingTag(b); st == tagMatch && name != "" {
			s.settled = true
		} else if st == tagMore && !final {
			return 0, tagMore
		}
		return 0, tagNo
	}
	n, st := 0, tagNo
	for _, name := range reasoningTags {
		switch m, got := closingTag(b, name); got {
		case tagMatch:
			n, st = m, tagMatch
		case tagMore:
			if st == tagNo {
				st = tagMore
			}
		}
		if st == tagMatch {
			break
		}
	}
	switch {
	case st == tagMore && final:
		return 0, tagNo
	case st != tagMatch:
		return 0, st
	}
	for n < len(b) && (b[n] == ' ' || b[n] == '\t' || b[n] == '\r') {
		n++
	}
	switch {
	case n == len(b) && !final:
		return 0, tagMore // what follows decides
	case n < len(b) && b[n] != '\n':
		return 0, tagNo
	}
	for n < len(b) && (b[n] == ' ' || b[n] == '\t' || b[n] == '\r' || b[n] == '\n') {
		n++
	}
	if n == len(b) && !final {
		// The spaces may go on: the answer starts after them.
		return 0, tagMore
	}
	return n, tagMatch
}

// closingTag reads </name> (any case, spaces allowed before '>') at the
// start of s, which starts with '<'.
func closingTag(s, name string) (int, tagState) {
	want := "</" + name
	if len(s) < len(want) {
		if strings.EqualFold(s, want[:len(s)]) {
			return 0, tagMore
		}
		return 0, tagNo
	}
	if !strings.EqualFold(s[:len(want)], want) {
		return 0, tagNo
	}
	j := len(want)
	for j < len(s) && j < len(want)+8 && (s[j] == ' ' || s[j] == '\t' || s[j] == '\n' || s[j] == '\r') {
		j++
	}
	switch {
	case j == len(s):
		return 0, tagMore
	case s[j] == '>':
		return j + 1, tagMatch
	}
	return 0, tagNo
}

func isLetter(b byte) bool { return b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' }
