package config

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
)

// TestChineseKeyboardMistakes pins that the characters a Chinese input
// method types for JSON5's punctuation are named, with the fix, in English
// and Chinese, at their line and column (counted in characters).
func TestChineseKeyboardMistakes(t *testing.T) {
	tests := []struct {
		name, doc string
		want      SyntaxError
	}{
		{"full-width comma", "{\n  log: { level: 'debug'，format: 'json' },\n}",
			SyntaxError{Line: 2, Column: 24, Msg: `full-width comma "，": use "," instead`, Zh: `全角逗号 "，"：请改为半角 ","`}},
		{"full-width comma after wide characters", "{\n  channels: { webchat: { title: '小助手'， enabled: true } },\n}",
			SyntaxError{Line: 2, Column: 38, Msg: `full-width comma "，": use "," instead`, Zh: `全角逗号 "，"：请改为半角 ","`}},
		{"full-width colon", "{ log：{} }",
			SyntaxError{Line: 1, Column: 6, Msg: `full-width colon "：": use ":" instead`, Zh: `全角冒号 "："：请改为半角 ":"`}},
		{"curly double quote", "{\n  log: { level: “debug” },\n}",
			SyntaxError{Line: 2, Column: 17, Msg: `curly quote "“": use '"' instead`, Zh: `中文引号 "“"：请改为半角 '"'`}},
		{"curly single quote", "{ log: { level: ‘debug’ } }",
			SyntaxError{Line: 1, Column: 17, Msg: `curly quote "‘": use "'" instead`, Zh: `中文引号 "‘"：请改为半角 "'"`}},
		{"full-width brace", "{ log: ｛ level: 'debug' } }",
			SyntaxError{Line: 1, Column: 8, Msg: `full-width brace "｛": use "{" instead`, Zh: `全角花括号 "｛"：请改为半角 "{"`}},
		{"full-width bracket", "{ commands: { allowFrom: ［'*'] } }",
			SyntaxError{Line: 1, Column: 26, Msg: `full-width bracket "［": use "[" instead`, Zh: `全角方括号 "［"：请改为半角 "["`}},
		{"Chinese bracket", "{ commands: { allowFrom: 【'*'] } }",
			SyntaxError{Line: 1, Column: 26, Msg: `Chinese bracket "【": use "[" instead`, Zh: `中文方括号 "【"：请改为半角 "["`}},
		{"full-width parenthesis", "{ log: {} （",
			SyntaxError{Line: 1, Column: 11, Msg: `full-width parenthesis "（": use "(" instead`, Zh: `全角括号 "（"：请改为半角 "("`}},
		{"ideographic space", "{\n　log: {} }",
			SyntaxError{Line: 2, Column: 1, Msg: `ideographic (full-width) space "　": use an ordinary space instead`, Zh: `全角空格 "　"：请改为半角空格`}},
		{"the first mistake of several", "{ log: { level: 'debug' }， agents: { defaults: { maxTokens: ４ } } }",
			SyntaxError{Line: 1, Column: 26, Msg: `full-width comma "，": use "," instead`, Zh: `全角逗号 "，"：请改为半角 ","`}},
		{"full-width digit", "{ agents: { defaults: { maxTokens: ４ } } }",
			SyntaxError{Line: 1, Column: 36, Msg: `full-width character "４": use "4" instead`, Zh: `全角字符 "４"：请改为半角 "4"`}},
		{"after the object", "{ log: {} }，",
			SyntaxError{Line: 1, Column: 12, Msg: `full-width comma "，": use "," instead`, Zh: `全角逗号 "，"：请改为半角 ","`}},
		{"missing comma at the end of a line", "{\n  log: { level: 'debug' }\n  store: {},\n}",
			SyntaxError{Line: 2, Column: 26, Msg: `missing ","`, Zh: `缺少逗号：请在此处加上半角 ","`}},
		{"missing comma before a comment", "{\n  log: {} // 日志\n  /* 存储 */\n  store: {},\n}",
			SyntaxError{Line: 2, Column: 10, Msg: `missing ","`, Zh: `缺少逗号：请在此处加上半角 ","`}},
		{"missing comma after a string", "{ channels: { webchat: { title: '标题'\n enabled: true } } }",
			SyntaxError{Line: 1, Column: 37, Msg: `missing ","`, Zh: `缺少逗号：请在此处加上半角 ","`}},
		{"missing comma in an array", "{ commands: { allowFrom: [\n 'a'\n 'b'] } }",
			SyntaxError{Line: 2, Column: 5, Msg: `missing ","`, Zh: `缺少逗号：请在此处加上半角 ","`}},
		{"a wide character the decoder refuses", "{ log: { level: 调试 } }",
			SyntaxError{Line: 1, Column: 17, Msg: `invalid character '调' looking for beginning of value`}},
		{"byte order mark", "\ufeff{ log: { level: 'debug' }，}",
			SyntaxError{Line: 1, Column: 26, Msg: `full-width comma "，": use "," instead`, Zh: `全角逗号 "，"：请改为半角 ","`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.doc), noEnv)
			se, ok := errors.AsType[*SyntaxError](err)
			if !ok {
				t.Fatalf("got %v, want a *SyntaxError", err)
			}
			if diff := cmp.Diff(tt.want, *se, cmp.FilterPath(func(p cmp.Path) bool { return p.Last().String() == ".Err" }, cmp.Ignore())); diff != "" {
				t.Errorf("(-want +got):\n%s\nerror: %v", diff, err)
			}
		})
	}
}

func TestSyntaxErrorSaysBoth(t *testing.T) {
	_, err := Parse([]byte("{\n  log: {}，\n}"), noEnv)
	const want = `syntax error at line 2, column 10: full-width comma "，": use "," instead / 第 2 行第 10 列：全角逗号 "，"：请改为半角 ","`
	if err == nil || err.Error() != want {
		t.Errorf("got  %v\nwant %s", err, want)
	}
}

func TestByteOrderMarkIsIgnored(t *testing.T) {
	cfg, err := Parse([]byte("\ufeff{ log: { level: 'debug' } }"), noEnv)
	if err != nil || cfg.Log.Level != "debug" {
		t.Errorf("level %q, err %v", cfg.Log.Level, err)
	}
}

// FuzzSyntaxErrorPosition holds that Parse never panics and places every syntax error
// at a line and column inside the document (the column may be one past
// the line's last character, where a missing comma or the end is).
func FuzzSyntaxErrorPosition(f *testing.F) {
	for _, s := range []string{
		"", "{}", "{\n  log: { level: 'debug'，format: 'json' },\n}", "{ a：1 }", "{ title: “x” }",
		"{\n  a: 1\n  b: 2\n}", "[1 2]", "{a: 1 /* c */ b: 2}", "{ a: '\\'' b }", "\ufeff{", "{ a: \xff }",
		"{ a: 1 // x\n b }", "{ 'a\\\nb': 1 c: 2 }", "{} /* open", "{ a: ［ ] }",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, doc []byte) {
		_, err := Parse(doc, func(string) (string, bool) { return "", false })
		se, ok := errors.AsType[*SyntaxError](err)
		if !ok {
			return
		}
		body := bytes.TrimPrefix(doc, []byte("\ufeff"))
		lines := strings.Split(string(body), "\n")
		if se.Line < 1 || se.Line > len(lines) {
			t.Fatalf("line %d of %d: %v", se.Line, len(lines), err)
		}
		if n := utf8.RuneCountInString(lines[se.Line-1]); se.Column < 1 || se.Column > n+1 {
			t.Fatalf("line %d has %d characters, column %d: %v", se.Line, n, se.Column, err)
		}
	})
}
