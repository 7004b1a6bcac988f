package reply

import (
	"testing"
)

func TestFlattenMarkdown(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"heading after text gets a blank line", "intro\n## 关键结论\nbody", "intro\n\n【关键结论】\nbody"},
		{"heading first", "# 今日总结", "【今日总结】"},
		{"closing hashes", "### Title ###", "【Title】"},
		{"bullets by depth", "- 待办\n  - 子项\n    - 更深\n* star\n+ plus", "• 待办\n  ◦ 子项\n    · 更深\n• star\n• plus"},
		{"tasks", "- [x] 已完成\n- [ ] 待做", "• ✅ 已完成\n• ⬜ 待做"},
		{"ordered keeps indent", "1. one\n  2) two", "1. one\n  2. two"},
		{"emphasis and code", "**加粗** and *斜体* and __b__ and ~~删~~ and `代码`", "加粗 and 斜体 and b and 删 and 代码"},
		{"links", "[清单](https://a.example/x) [https://b.example](https://b.example) [](https://c.example)", "清单（https://a.example/x） https://b.example https://c.example"},
		{"images", "![图](https://i.example/a.png) ![](https://i.example/b.png)", "[图片:图] [图片]"},
		{"quote", "> 引用\n>more", "｜引用\n｜more"},
		{"rules", "a\n---\n***\n___\nb", "a\n————————\n————————\n————————\nb"},
		{"code fence kept verbatim", "```go\n**not bold** # no\n- x\n```\nafter", "**not bold** # no\n- x\nafter"},
		{"blank runs and trailing spaces", "a  \n\n\n\nb\t", "a\n\nb"},
		{"unknown markup passes", "2*3*4 = 24, snake_case_name, a_b_", "2*3*4 = 24, snake_case_name, a_b_"},
		{"malformed link passes", "[unclosed](http://x", "[unclosed](http://x"},
		{"empty", "  \n ", ""},
	}
	for _, tt := range tests {
		if got := FlattenMarkdown(tt.in); got != tt.want {
			t.Errorf("%s:\ngot  %q\nwant %q", tt.name, got, tt.want)
		}
	}
}

func TestIsSkip(t *testing.T) {
	for _, s := range []string{"SKIP", "skip", " Skip\n", "**SKIP**", "## SKIP", "- skip", "SKIP。", "`SKIP`"} {
		if !IsSkip(s) {
			t.Errorf("%q is SKIP", s)
		}
	}
	for _, s := range []string{"SKIP this part: x", "skipped", "没有 SKIP", ""} {
		if IsSkip(s) {
			t.Errorf("%q is not SKIP", s)
		}
	}
}

func FuzzFlattenMarkdown(f *testing.F) {
	f.Add("# h\n- a\n  - b\n```\ncode\n```\n[l](u) ![i](p) **b** *i*")
	f.Fuzz(func(t *testing.T, s string) {
		out := FlattenMarkdown(s)
		if FlattenMarkdown(out) == "" && out != "" {
			t.Fatalf("flattening %q emptied %q", s, out)
		}
	})
}
