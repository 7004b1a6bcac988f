package htmlpage

import (
	"bytes"
	"html/template"
	"testing"
	"testing/fstest"
)

// TestRenderAsHTMLTemplate: a page renders byte for byte as html/template
// rendered it, for titles with every character it escapes.
func TestRenderAsHTMLTemplate(t *testing.T) {
	const src = "<!doctype html>\n<title>{{.Title}}</title>\n<h1>{{.Title}}</h1><p>x</p>\n<h2>Hi, this is {{.Title}}.</h2>\n"
	ref := template.Must(template.New("p").Parse(src))
	page, err := Parse(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, title := range []string{"", "pincer", "小钳子", `a<b>&"c'+d` + "\x00e", "&amp; already"} {
		var want bytes.Buffer
		if err := ref.Execute(&want, map[string]string{"Title": title}); err != nil {
			t.Fatal(err)
		}
		if got := page.Render(title); got != want.String() {
			t.Errorf("title %q:\n got %q\nwant %q", title, got, want.String())
		}
	}
}

func TestOtherActionsRefused(t *testing.T) {
	for _, src := range []string{"<p>{{.Other}}</p>", "{{.Title}}{{if .X}}{{end}}", "{{ .Title }}"} {
		if _, err := Parse(src); err == nil {
			t.Errorf("Parse(%q) accepted it", src)
		}
	}
}

func TestParseFS(t *testing.T) {
	fsys := fstest.MapFS{"a/index.html": {Data: []byte("<title>{{.Title}}</title>")}}
	page, err := ParseFS(fsys, "a/index.html")
	if err != nil {
		t.Fatal(err)
	}
	if got := page.Render("x&y"); got != "<title>x&amp;y</title>" {
		t.Errorf("got %q", got)
	}
	if _, err := ParseFS(fsys, "missing.html"); err == nil {
		t.Error("a missing page was parsed")
	}
}
