package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/titanous/json5"
)

// SyntaxError is a config file that is not JSON5, placed at a 1-based line
// and column, the column counted in characters as editors count them.
// Mistakes a Chinese keyboard makes (a full-width comma, a curly quote)
// and a missing comma are also said in Chinese.
type SyntaxError struct {
	Line, Column int
	// Msg says what is wrong, in English.
	Msg string
	// Zh says it in Chinese, without the position; "" when it is not said
	// in Chinese.
	Zh string
	// Err is the decoder's own error, when the decoder found the problem.
	Err error
}

// Error reads `syntax error at line 3, column 12: full-width comma "，":
// use "," instead / 第 3 行第 12 列：全角逗号 "，"：请改为半角 ","`.
func (e *SyntaxError) Error() string {
	s := fmt.Sprintf("syntax error at line %d, column %d: %s", e.Line, e.Column, e.Msg)
	if e.Zh != "" {
		s += fmt.Sprintf(" / 第 %d 行第 %d 列：%s", e.Line, e.Column, e.Zh)
	}
	return s
}

func (e *SyntaxError) Unwrap() error { return e.Err }

// lookalike is a character a Chinese (full-width) keyboard types where
// JSON5 wants an ASCII one.
type lookalike struct {
	en, zh string
	// ascii is the character meant.
	ascii string
}

// lookalikes are the characters a Chinese input method types for the
// ASCII keys JSON5 is written with.
var lookalikes = map[rune]lookalike{
	'，':      {"full-width comma", "全角逗号", ","},
	'：':      {"full-width colon", "全角冒号", ":"},
	'“':      {"curly quote", "中文引号", `"`},
	'”':      {"curly quote", "中文引号", `"`},
	'‘':      {"curly quote", "中文引号", "'"},
	'’':      {"curly quote", "中文引号", "'"},
	'＂':      {"full-width quote", "全角引号", `"`},
	'＇':      {"full-width quote", "全角引号", "'"},
	'｛':      {"full-width brace", "全角花括号", "{"},
	'｝':      {"full-width brace", "全角花括号", "}"},
	'［':      {"full-width bracket", "全角方括号", "["},
	'］':      {"full-width bracket", "全角方括号", "]"},
	'【':      {"Chinese bracket", "中文方括号", "["},
	'】':      {"Chinese bracket", "中文方括号", "]"},
	'（':      {"full-width parenthesis", "全角括号", "("},
	'）':      {"full-width parenthesis", "全角括号", ")"},
	'　':      {"ideographic (full-width) space", "全角空格", " "},
	'\u00a0': {"no-break space", "不换行空格", " "},
	'\ufeff': {"byte order mark", "字节顺序标记（BOM）", " "},
}

// mistake describes the character r as a keyboard mistake, ok false when
// it is not one. Other full-width forms of ASCII characters (U+FF01 to
// U+FF5E, such as "１" or "－") are named generically.
func mistake(r rune) (en, zh string, ok bool) {
	l, known := lookalikes[r]
	if !known && r >= 0xff01 && r <= 0xff5e {
		l, known = lookalike{"full-width character", "全角字符", string(r - 0xfee0)}, true
	}
	if !known {
		return "", "", false
	}
	if l.ascii == " " {
		return fmt.Sprintf("%s %s: use an ordinary space instead", l.en, show(string(r))),
			fmt.Sprintf("%s %s：请改为半角空格", l.zh, show(string(r))), true
	}
	return fmt.Sprintf("%s %s: use %s instead", l.en, show(string(r)), show(l.ascii)),
		fmt.Sprintf("%s %s：请改为半角 %s", l.zh, show(string(r)), show(l.ascii)), true
}

// show quotes a character for a message: "，", or '"' for the double
// quote itself.
func show(s string) string {
	if s == `"` {
		return `'"'`
	}
	return `"` + s + `"`
}

// syntaxError places a decoder error in data.
func syntaxError(data []byte, err error) error {
	if se, ok := errors.AsType[*json5.SyntaxError](err); ok {
		// Offset counts the bytes read, the offending one included.
		return decoderError(data, int(se.Offset)-1, se)
	}
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return syntaxAt(data, len(data), "unexpected end of the file", err)
	}
	return fmt.Errorf("syntax: %w", err)
}

// decoderError places the decoder's syntax error at byte off of data,
// naming the whole character there rather than its first byte, and a
// missing comma where the comma belongs.
func decoderError(data []byte, off int, se *json5.SyntaxError) error {
	off = max(0, min(off, len(data)))
	for off > 0 && off < len(data) && !utf8.RuneStart(data[off]) {
		off-- // the decoder reads bytes; name the character they belong to
	}
	msg := se.Error()
	rest, ok := strings.CutPrefix(msg, "invalid character ")
	if !ok || off == len(data) {
		return syntaxAt(data, off, msg, se)
	}
	// rest is the quoted byte and what the decoder was reading:
	// 'ï' after object key:value pair.
	context := ""
	if i := strings.Index(rest[min(1, len(rest)):], "' "); i >= 0 {
		context = rest[i+3:]
	}
	r, _ := utf8.DecodeRune(data[off:])
	if _, _, ok := mistake(r); ok {
		return syntaxAt(data, off, "", se)
	}
	if (context == "after object key:value pair" || context == "after array element") && startsItem(r) {
		missing := &SyntaxError{Msg: `missing ","`, Zh: `缺少逗号：请在此处加上半角 ","`, Err: se}
		return missing.at(data, tokenEnd(data, off))
	}
	text := "invalid character " + quoteRune(data[off:])
	if context != "" {
		text += " " + context
	}
	return syntaxAt(data, off, text, se)
}

// startsItem reports whether r may begin a key or a value, which after a
// value means the comma between them is missing.
func startsItem(r rune) bool {
	return unicode.IsLetter(r) || unicode.IsDigit(r) || strings.ContainsRune(`_$"'{[+-.`, r)
}

// quoteRune quotes the character at the start of b: '标', or '\xef' for a
// byte that is not UTF-8.
func quoteRune(b []byte) string {
	r, size := utf8.DecodeRune(b)
	if r == utf8.RuneError && size <= 1 {
		return fmt.Sprintf(`'\x%02x'`, b[0])
	}
	if r == '\'' {
		return `'\''`
	}
	q := fmt.Sprintf("%+q", r) // ASCII-only for control characters
	if unicode.IsPrint(r) {
		q = fmt.Sprintf("%q", r)
	}
	return q
}

// syntaxAt reports a problem at byte offset off of data: the keyboard
// mistake at off when there is one, else msg.
func syntaxAt(data []byte, off int, msg string, err error) error {
	e := &SyntaxError{Msg: msg, Err: err}
	if off < len(data) {
		r, _ := utf8.DecodeRune(data[off:])
		if en, zh, ok := mistake(r); ok {
			e.Msg, e.Zh = en, zh
		}
	}
	return e.at(data, off)
}

// at places e at byte offset off of data.
func (e *SyntaxError) at(data []byte, off int) *SyntaxError {
	e.Line, e.Column = position(data, off)
	return e
}

// position returns the 1-based line and column of the byte at offset off
// (len(data) for the end), counting columns in characters as editors do.
func position(data []byte, off int) (line, col int) {
	before := data[:max(0, min(off, len(data)))]
	lineStart := bytes.LastIndexByte(before, '\n') + 1
	return 1 + bytes.Count(before, []byte("\n")), 1 + utf8.RuneCount(before[lineStart:])
}

// tokenEnd returns the offset just after the last byte before off that is
// neither white space nor in a comment: where a missing comma belongs.
// data[:off] is JSON5 the decoder accepted, so its strings and comments
// are whole.
func tokenEnd(data []byte, off int) int {
	end := 0
	for i := 0; i < off; i++ {
		switch c := data[i]; {
		case c == '"' || c == '\'':
			for i++; i < off && data[i] != c; i++ {
				if data[i] == '\\' {
					i++
				}
			}
			end = min(i+1, off)
		case c == '/' && i+1 < off && data[i+1] == '/':
			for i < off && data[i] != '\n' {
				i++
			}
		case c == '/' && i+1 < off && data[i+1] == '*':
			j := bytes.Index(data[i+2:off], []byte("*/"))
			if j < 0 {
				return end
			}
			i += 2 + j + 1
		case c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\f':
		default:
			end = i + 1
		}
	}
	return end
}
