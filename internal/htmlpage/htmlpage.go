// Package htmlpage fills the title into an embedded HTML page: the one
// substitution the web chat's and the dashboard's pages make. It does what
// html/template did for them (the title escaped as html/template escapes
// text in an HTML element or in <title>) without linking text/template,
// whose reflective method calls keep every exported method of the
// program's types in the binary.
package htmlpage

import (
	"errors"
	"fmt"
	"io/fs"
	"strings"
)

// titleAction is the only action a page may hold.
const titleAction = "{{.Title}}"

// Page is a parsed page: its text around each title.
type Page struct {
	parts []string
}

// ParseFS reads the page at name in fsys. A page with any other action
// than {{.Title}} is refused.
func ParseFS(fsys fs.FS, name string) (Page, error) {
	b, err := fs.ReadFile(fsys, name)
	if err != nil {
		return Page{}, fmt.Errorf("htmlpage: %w", err)
	}
	return Parse(string(b))
}

// Parse parses src.
func Parse(src string) (Page, error) {
	parts := strings.Split(src, titleAction)
	for _, p := range parts {
		if strings.Contains(p, "{{") {
			return Page{}, errors.New("htmlpage: the page holds an action other than " + titleAction)
		}
	}
	return Page{parts: parts}, nil
}

// Render returns the page with title, escaped, in place of each
// {{.Title}}.
func (p Page) Render(title string) string {
	t := Escape(title)
	var b strings.Builder
	b.Grow(len(t)*(len(p.parts)-1) + sum(p.parts))
	for i, part := range p.parts {
		if i > 0 {
			b.WriteString(t)
		}
		b.WriteString(part)
	}
	return b.String()
}

func sum(parts []string) int {
	n := 0
	for _, p := range parts {
		n += len(p)
	}
	return n
}

// escaper is html/template's escaping of text in HTML (its
// htmlReplacementTable).
var escaper = strings.NewReplacer(
	"\x00", "\uFFFD",
	`"`, "&#34;",
	"&", "&amp;",
	"'", "&#39;",
	"+", "&#43;",
	"<", "&lt;",
	">", "&gt;",
)

// Escape escapes s as html/template escapes a string in HTML text.
func Escape(s string) string { return escaper.Replace(s) }
