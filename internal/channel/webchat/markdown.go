package webchat

import (
	"bytes"
	"net/url"
	"strings"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	"github.com/yuin/goldmark/parser"
	"github.com/yuin/goldmark/renderer/html"
	"github.com/yuin/goldmark/text"
	"github.com/yuin/goldmark/util"
)

// markdown renders replies: GitHub-flavoured tables, strikethrough and
// bare links, soft line breaks kept as breaks (chat text means them), and
// no raw HTML (html.WithUnsafe is not set, and safeLinks turns what raw
// HTML there is into visible text).
var markdown = goldmark.New(
	goldmark.WithExtensions(
		extension.NewTable(extension.WithTableCellAlignMethod(extension.TableCellAlignAttribute)),
		extension.Strikethrough,
		extension.Linkify,
	),
	goldmark.WithParserOptions(parser.WithASTTransformers(util.Prioritized(safeLinks{}, 0))),
	goldmark.WithRendererOptions(html.WithHardWraps()),
)

// RenderMarkdown renders a reply's Markdown as HTML that is safe to insert
// into the page: raw HTML in text shows as text, links keep only http,
// https and mailto targets and open in a new tab, and images become links.
func RenderMarkdown(text string) string {
	var b bytes.Buffer
	if err := markdown.Convert([]byte(text), &b); err != nil {
		// Convert fails only when writing to the buffer fails, which it
		// does not; show the text escaped rather than nothing.
		return "<p>" + htmlEscape(text) + "</p>"
	}
	return b.String()
}

func htmlEscape(s string) string { return string(util.EscapeHTML([]byte(s))) }

// safeURL returns dest when it is an absolute http, https or mailto URL
// ("www.…" counts as http), else "".
func safeURL(dest string) string {
	d := strings.TrimSpace(dest)
	if strings.HasPrefix(strings.ToLower(d), "www.") {
		d = "http://" + d
	}
	u, err := url.Parse(d)
	if err != nil {
		return ""
	}
	switch strings.ToLower(u.Scheme) {
	case "http", "https":
		if u.Host == "" {
			return ""
		}
		return d
	case "mailto":
		if u.Opaque == "" {
			return ""
		}
		return d
	}
	return ""
}

// safeLinks rewrites the parsed reply before it is rendered: links and
// autolinks with a target outside safeURL lose the link and keep their
// text, images become links to the image, raw inline HTML becomes plain
// text and HTML blocks become code blocks.
type safeLinks struct{}

func (safeLinks) Transform(doc *ast.Document, reader text.Reader, _ parser.Context) {
	source := reader.Source()
	var nodes []ast.Node
	_ = ast.Walk(doc, func(n ast.Node, entering bool) (ast.WalkStatus, error) {
		if entering {
			switch n.(type) {
			case *ast.Link, *ast.AutoLink, *ast.Image, *ast.RawHTML, *ast.HTMLBlock:
				nodes = append(nodes, n)
			}
		}
		return ast.WalkContinue, nil
	})
	for _, n := range nodes {
		switch n := n.(type) {
		case *ast.Link:
			if dest := safeURL(string(n.Destination)); dest != "" {
				n.Destination = []byte(dest)
				n.Title = nil
				markExternal(n)
			} else {
				unwrap(n)
			}
		case *ast.AutoLink:
			label := string(n.Label(source))
			dest := string(n.URL(source))
			if n.AutoLinkType == ast.AutoLinkEmail && !strings.HasPrefix(strings.ToLower(dest), "mailto:") {
				dest = "mailto:" + dest
			}
			var repl ast.Node = ast.NewString([]byte(label))
			if dest = safeURL(dest); dest != "" {
				l := ast.NewLink()
				l.Destination = []byte(dest)
				l.AppendChild(l, ast.NewString([]byte(label)))
				markExternal(l)
				repl = l
			}
			n.Parent().ReplaceChild(n.Parent(), n, repl)
		case *ast.Image:
			dest := safeURL(string(n.Destination))
			if dest == "" || inLink(n) {
				unwrap(n)
				continue
			}
			l := ast.NewLink()
			l.Destination = []byte(dest)
			for c := n.FirstChild(); c != nil; {
				next := c.NextSibling()
				l.AppendChild(l, c)
				c = next
			}
			if !l.HasChildren() {
				l.AppendChild(l, ast.NewString([]byte(dest)))
			}
			markExternal(l)
			n.Parent().ReplaceChild(n.Parent(), n, l)
		case *ast.RawHTML:
			var b bytes.Buffer
			for i := range n.Segments.Len() {
				seg := n.Segments.At(i)
				b.Write(seg.Value(source))
			}
			n.Parent().ReplaceChild(n.Parent(), n, ast.NewString(b.Bytes()))
		case *ast.HTMLBlock:
			cb := ast.NewCodeBlock()
			lines := text.NewSegments()
			for i := range n.Lines().Len() {
				lines.Append(n.Lines().At(i))
			}
			if n.HasClosure() {
				lines.Append(n.ClosureLine)
			}
			cb.SetLines(lines)
			n.Parent().ReplaceChild(n.Parent(), n, cb)
		}
	}
}

// markExternal makes a link open in a new tab without handing the page
// to it.
func markExternal(l *ast.Link) {
	l.SetAttributeString("target", "_blank")
	l.SetAttributeString("rel", "noopener noreferrer nofollow")
}

// inLink reports whether n is inside a link, where it must not become one.
func inLink(n ast.Node) bool {
	for p := n.Parent(); p != nil; p = p.Parent() {
		if _, ok := p.(*ast.Link); ok {
			return true
		}
	}
	return false
}

// unwrap replaces n by its children.
func unwrap(n ast.Node) {
	parent := n.Parent()
	for c := n.FirstChild(); c != nil; {
		next := c.NextSibling()
		parent.InsertBefore(parent, n, c)
		c = next
	}
	parent.RemoveChild(parent, n)
}
