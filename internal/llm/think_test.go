package llm

import (
	"strings"
	"testing"
)

func splitAll(deltas ...string) (text, reasoning string) {
	var s ThinkSplitter
	var t, r strings.Builder
	add := func(a, b string) {
		if s.TookBack() {
			// What was text so far was reasoning.
			r.WriteString(t.String())
			t.Reset()
		}
		t.WriteString(a)
		r.WriteString(b)
	}
	for _, d := range deltas {
		add(s.Push(d))
	}
	add(s.End())
	return t.String(), r.String()
}

func TestThinkSplitter(t *testing.T) {
	for _, tt := range []struct {
		name            string
		deltas          []string
		text, reasoning string
	}{
		{"a think block, then the answer", []string{"<think>x</think>答案"}, "答案", "x"},
		{"split anywhere", []string{"<thi", "nk>x</th", "ink>答", "案"}, "答案", "x"},
		{"with a type attribute", []string{`<think type="reasoning">…</think>` + "\nNO_REPLY"}, "\nNO_REPLY", "…"},
		{"thinking", []string{"<thinking>…</thinking>"}, "", "…"},
		{"reasoning", []string{"<reasoning>…</reasoning>"}, "", "…"},
		{"thought", []string{"<thought>hm</thought>ok"}, "ok", "hm"},
		{"any case", []string{"<THINK>x</Think > y"}, " y", "x"},
		{"unclosed at the end is reasoning", []string{"<think>still", " thinking"}, "", "still thinking"},
		{"a piece of a closing tag at the end", []string{"<think>x</thi"}, "", "x</thi"},
		{"an empty block first (Qwen3)", []string{"<think>\n\n</think>\n\nhi"}, "\n\nhi", "\n\n"},
		{"self-closing", []string{"<think/>hi"}, "hi", ""},
		{"after whitespace", []string{"\n  <think>x</think>hi"}, "\n  hi", "x"},
		{"at the start of a line", []string{"a\n<think>b</think>\nc"}, "a\n\nc", "b"},
		{"two blocks", []string{"<think>a</think><think>b</think>c"}, "c", "ab"},
		{"a < inside reasoning", []string{"<think>a < b</think>c"}, "c", "a < b"},
		{"another closing tag is reasoning", []string{"<think>x</thinking>y"}, "", "x</thinking>y"},
		// Text that talks about the tag keeps it.
		{"in a sentence", []string{"R1 的输出里有<think>标签"}, "R1 的输出里有<think>标签", ""},
		{"in a code span", []string{"Use `<think>` tags"}, "Use `<think>` tags", ""},
		{"in a code span at a line start", []string{"`<think>` is the tag"}, "`<think>` is the tag", ""},
		{"in a code fence", []string{"```\n<think>\nx\n</think>\n```\nok"}, "```\n<think>\nx\n</think>\n```\nok", ""},
		{"in a tilde fence, split", []string{"~", "~~xml\n<thi", "nk>x\n~~~\n<think>y</think>z"}, "~~~xml\n<think>x\n~~~\nz", "y"},
		{"another tag", []string{"<thinker>hi"}, "<thinker>hi", ""},
		{"a tag name that goes on", []string{"<think-tank>"}, "<think-tank>", ""},
		{"a space after <", []string{"< think>x"}, "< think>x", ""},
		{"a piece of a tag at the end is text", []string{"ok\n<thi"}, "ok\n<thi", ""},
		// The prompt opened the block: the reply is reasoning, a closing
		// tag that ends its line, then the answer.
		{"the prompt opened the block", []string{"用户想知道天气，我应该", "简短回答。</th", "ink>\n\n今天晴。"}, "今天晴。", "用户想知道天气，我应该简短回答。"},
		{"the prompt opened it, split after the tag", []string{"想", "\n一想</think>", " \r\n", "\n", "好"}, "好", "想\n一想"},
		{"the prompt opened it, on a line of its own", []string{"想一想\n</think>\n好"}, "好", "想一想\n"},
		{"the prompt opened it, nothing after", []string{"想一想</thinking>"}, "", "想一想"},
		{"the prompt opened it: reasoning that wrote an opening tag", []string{"想 <think> 一想</think>\n好"}, "想 <think> 一想</think>\n好", ""},
		{"a closing tag in a sentence is text", []string{"用 </think> 结束"}, "用 </think> 结束", ""},
		{"both tags talked about", []string{"模型用 <think> 开始推理，用 </think>\n结束"}, "模型用 <think> 开始推理，用 </think>\n结束", ""},
		{"a closing tag after a block is text", []string{"<think>a</think>b</think>\nc"}, "b</think>\nc", "a"},
		{"a closing tag after the first is text", []string{"a</think>\nb</think>\nc"}, "b</think>\nc", "a"},
		{"a closing tag in a fence is text", []string{"```\nx</think>\n```"}, "```\nx</think>\n```", ""},
		{"a closing tag in a code span is text", []string{"`</think>`\nok"}, "`</think>`\nok", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			text, reasoning := splitAll(tt.deltas...)
			if text != tt.text || reasoning != tt.reasoning {
				t.Errorf("text %q reasoning %q, want %q and %q", text, reasoning, tt.text, tt.reasoning)
			}
		})
	}
}

// TestThinkSplitterHoldsOnlyTags: text shows as soon as it cannot be a
// tag, and a piece of a tag never shows.
func TestThinkSplitterHoldsOnlyTags(t *testing.T) {
	var s ThinkSplitter
	for _, step := range []struct{ in, text, reasoning string }{
		{"<", "", ""},
		{"thi", "", ""},
		{"nk>a", "", "a"},
		{"b</", "", "b"},
		{"think>", "", ""},
		{"Hi", "Hi", ""},
		{" <think> x", " <think> x", ""},
	} {
		text, reasoning := s.Push(step.in)
		if text != step.text || reasoning != step.reasoning {
			t.Errorf("Push(%q) = %q, %q; want %q, %q", step.in, text, reasoning, step.text, step.reasoning)
		}
	}
}

// FuzzThinkSplitter: any split of a text gives what the text gives whole;
// nothing is made up; text without '<' is all text; and what a closed
// block holds is all reasoning, the text after it read as if it started
// the reply.
func FuzzThinkSplitter(f *testing.F) {
	for _, s := range []string{"<think>x</think>答案", "<think type=\"r\">a</think>\nNO_REPLY", "<thinking>", "```\n<think>\n```", "a\n<reasoning>b", "<think/>", "`<think>`"} {
		f.Add(s, "y", uint8(2))
	}
	f.Fuzz(func(t *testing.T, text, after string, step uint8) {
		n := int(step%9) + 1
		var pieces []string
		for i := 0; i < len(text); i += n {
			pieces = append(pieces, text[i:min(i+n, len(text))])
		}
		wt, wr := splitAll(text)
		st, sr := splitAll(pieces...)
		if st != wt || sr != wr {
			t.Fatalf("split %q: %q, %q; whole: %q, %q", pieces, st, sr, wt, wr)
		}
		if len(wt)+len(wr) > len(text) {
			t.Fatalf("%q gave more than it had: %q, %q", text, wt, wr)
		}
		if !strings.Contains(text, "<") && (wt != text || wr != "") {
			t.Fatalf("%q without tags gave %q, %q", text, wt, wr)
		}
		if again, r := splitAll(wt); (again != wt || r != "") && !strings.Contains(wt, "</") {
			t.Fatalf("the text of %q, %q, still holds reasoning %q", text, wt, r)
		}
		if strings.Contains(strings.ToLower(text), "</think") || strings.Contains(after, "</") {
			return
		}
		bt, br := splitAll("<think>" + text + "</think>" + after)
		at, ar := splitAll(after)
		if br != text+ar || bt != at {
			t.Fatalf("a closed block of %q then %q: %q, %q", text, after, bt, br)
		}
	})
}

// thinkVocabulary are the pieces FuzzThinkSplitterPieces builds replies of.
var thinkVocabulary = []string{
	"<think>", "</think>", "<thinking>", "</thinking>", "<reasoning>", "</reasoning>", "<THINK>", "</think >",
	"<think type=\"r\">", "<think/>", "<thi", "nk>", "</", "<", ">", "```", "~~~", "`", "\n", " ", "x", "好", "NO_REPLY",
}

// FuzzThinkSplitterPieces: replies made of tags, their pieces, fences and
// words, split anywhere, give what they give whole, and the text given
// holds no reasoning block.
func FuzzThinkSplitterPieces(f *testing.F) {
	f.Add([]byte{0, 20, 1, 21}, uint8(1))
	f.Add([]byte{15, 18, 0, 20, 18, 15, 18, 2, 20}, uint8(2))
	f.Fuzz(func(t *testing.T, picks []byte, step uint8) {
		var b strings.Builder
		for _, p := range picks {
			b.WriteString(thinkVocabulary[int(p)%len(thinkVocabulary)])
		}
		text := b.String()
		n := int(step%11) + 1
		var pieces []string
		for i := 0; i < len(text); i += n {
			pieces = append(pieces, text[i:min(i+n, len(text))])
		}
		wt, wr := splitAll(text)
		if st, sr := splitAll(pieces...); st != wt || sr != wr {
			t.Fatalf("split %q: %q, %q; whole: %q, %q", pieces, st, sr, wt, wr)
		}
		if again, r := splitAll(wt); (again != wt || r != "") && !strings.Contains(wt, "</") {
			t.Fatalf("the text of %q, %q, still holds reasoning %q", text, wt, r)
		}
	})
}
