package htmlpage

import (
	"bytes"
	"html/template"
	"slices"
	"testing"
	"testing/fstest"
)

// field answers the names of fields.
func field(fields map[string]string) func(string) (string, bool) {
	return func(name string) (string, bool) {
		v, ok := fields[name]
		return v, ok
	}
}

// TestRenderAsHTMLTemplate: a page renders byte for byte as html/template
// rendered it, for values with every character it escapes, in elements
// and in quoted attributes.
func TestRenderAsHTMLTemplate(t *testing.T) {
	const src = "<!doctype html>\n<html lang=\"{{.Lang}}\"><title>{{.Title}}</title>\n<h1>{{.Title}}</h1><p>x</p>\n<h2>{{.Hello}}</h2>\n<body data-texts=\"{{.Texts}}\">\n"
	ref := template.Must(template.New("p").Parse(src))
	page, err := Parse(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{"", "pincer", "小钳子", `a<b>&"c'+d` + "\x00e", "&amp; already", `{"k":"v's"}`} {
		fields := map[string]string{"Title": v, "Lang": "zh-CN", "Hello": "你好，" + v, "Texts": v}
		var want bytes.Buffer
		if err := ref.Execute(&want, fields); err != nil {
			t.Fatal(err)
		}
		got, err := page.Render(field(fields))
		if err != nil {
			t.Fatal(err)
		}
		if got != want.String() {
			t.Errorf("value %q:\n got %q\nwant %q", v, got, want.String())
		}
	}
}

func TestOtherActionsRefused(t *testing.T) {
	for _, src := range []string{"{{.Title}}{{if .X}}{{end}}", "{{ .Title }}", "{{Title}}", "{{.1}}"} {
		if _, err := Parse(src); err == nil {
			t.Errorf("Parse(%q) accepted it", src)
		}
	}
}

func TestRenderRefusesAnUnknownName(t *testing.T) {
	page, err := Parse("<p>{{.webchat.send}}</p><p>{{.nope}}</p>")
	if err != nil {
		t.Fatal(err)
	}
	if got := page.Names(); !slices.Equal(got, []string{"webchat.send", "nope"}) {
		t.Errorf("Names() = %q", got)
	}
	if _, err := page.Render(field(map[string]string{"webchat.send": "发送"})); err == nil {
		t.Error("a page naming an unknown field rendered")
	}
}

func TestParseFS(t *testing.T) {
	fsys := fstest.MapFS{"a/index.html": {Data: []byte("<title>{{.Title}}</title>")}}
	page, err := ParseFS(fsys, "a/index.html")
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := page.Render(field(map[string]string{"Title": "x&y"})); got != "<title>x&amp;y</title>" {
		t.Errorf("got %q", got)
	}
	if _, err := ParseFS(fsys, "missing.html"); err == nil {
		t.Error("a missing page was parsed")
	}
}
