// Package htmlpage fills named texts into an embedded HTML page: the one
// substitution the web chat's and the dashboard's pages make (their title,
// their language and the texts of their locale). It does what html/template
// did for them (each text escaped as html/template escapes text in an HTML
// element, in <title> or in a quoted attribute) without linking
// text/template, whose reflective method calls keep every exported method
// of the program's types in the binary.
package htmlpage

import (
	"errors"
	"fmt"
	"io/fs"
	"regexp"
	"strings"
)

// action is the only action a page may hold: {{.name}}, where name is
// letters, digits, '_' and '.', a letter first.
var action = regexp.MustCompile(`\{\{\.([A-Za-z][A-Za-z0-9_.]*)\}\}`)

// Page is a parsed page: its text around each named field.
type Page struct {
	parts []string // len(names)+1 pieces of markup
	names []string
}

// ParseFS reads the page at name in fsys. A page with any other action
// than {{.name}} is refused.
func ParseFS(fsys fs.FS, name string) (Page, error) {
	b, err := fs.ReadFile(fsys, name)
	if err != nil {
		return Page{}, fmt.Errorf("htmlpage: %w", err)
	}
	return Parse(string(b))
}

// Parse parses src.
func Parse(src string) (Page, error) {
	var p Page
	last := 0
	for _, m := range action.FindAllStringSubmatchIndex(src, -1) {
		p.parts = append(p.parts, src[last:m[0]])
		p.names = append(p.names, src[m[2]:m[3]])
		last = m[1]
	}
	p.parts = append(p.parts, src[last:])
	for _, part := range p.parts {
		if strings.Contains(part, "{{") {
			return Page{}, errors.New("htmlpage: the page holds an action other than {{.name}}")
		}
	}
	return p, nil
}

// Names lists the fields the page names, in order, repeats included.
func (p Page) Names() []string { return append([]string(nil), p.names...) }

// Render returns the page with each {{.name}} replaced by field(name),
// escaped. It fails on the first name field does not know.
func (p Page) Render(field func(name string) (string, bool)) (string, error) {
	var b strings.Builder
	b.Grow(sum(p.parts))
	for i, part := range p.parts {
		if i > 0 {
			name := p.names[i-1]
			v, ok := field(name)
			if !ok {
				return "", fmt.Errorf("htmlpage: the page names {{.%s}}, which has no value", name)
			}
			b.WriteString(Escape(v))
		}
		b.WriteString(part)
	}
	return b.String(), nil
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
