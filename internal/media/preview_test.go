package media

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"unicode/utf8"

	"golang.org/x/text/encoding/simplifiedchinese"
)

func TestPreview(t *testing.T) {
	pages := map[string]struct{ contentType, body string }{
		"/og": {"text/html; charset=utf-8", `<!doctype html><html><head>
			<title>Site title | Example</title>
			<meta property="og:title" content="  The   &amp; article ">
			<meta property="OG:Description" content="What it
			 says">
			</head><body><meta name="description" content="late"></body></html>`},
		"/plain": {"text/html", `<html><head><title>
			Plain  page </title><meta name="Description" content="A &lt;short&gt; one"></head></html>`},
		"/xhtml":   {"application/xhtml+xml", `<?xml version="1.0"?><html xmlns="http://www.w3.org/1999/xhtml"><head><title>X</title></head></html>`},
		"/untyped": {"", `<!DOCTYPE html><title>Untyped</title>`},
		"/long":    {"text/html", "<title>" + strings.Repeat("长", 300) + "</title><meta name=description content='" + strings.Repeat("d ", 400) + "'>"},
		"/late":    {"text/html", "<html><head><!--" + strings.Repeat("x", 600<<10) + "--><title>too late</title></head></html>"},
	}
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
		p, ok := pages[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Header()["Content-Type"] = []string{p.contentType}
		if p.contentType == "" {
			w.Header()["Content-Type"] = nil
		}
		w.Write([]byte(p.body))
	})
	f := NewFetcher(FetchOptions{AllowPrivate: true})
	for path, want := range map[string]Link{
		"/og":      {Title: "The & article", Description: "What it says"},
		"/plain":   {Title: "Plain page", Description: "A <short> one"},
		"/xhtml":   {Title: "X"},
		"/untyped": {Title: "Untyped"},
		"/late":    {},
	} {
		got, err := f.Preview(context.Background(), srv.URL+path)
		want.URL = srv.URL + path
		if err != nil || got != want {
			t.Errorf("%s: got %+v, %v; want %+v", path, got, err, want)
		}
	}
	got, err := f.Preview(context.Background(), srv.URL+"/long")
	if err != nil {
		t.Fatal(err)
	}
	if n := utf8.RuneCountInString(got.Title); n != MaxTitle || !strings.HasSuffix(got.Title, "…") {
		t.Errorf("title of %d runes: %q", n, got.Title)
	}
	if n := utf8.RuneCountInString(got.Description); n != MaxDescription {
		t.Errorf("description of %d runes", n)
	}
	if _, err := f.Preview(context.Background(), srv.URL+"/missing"); err == nil {
		t.Error("a 404 previewed")
	}
}

func TestPreviewDecodesGBK(t *testing.T) {
	page := `<html><head><meta http-equiv="Content-Type" content="text/html; charset=gbk"><title>中文标题</title><meta name="description" content="简体中文页面"></head></html>`
	gbk, err := simplifiedchinese.GBK.NewEncoder().String(page)
	if err != nil {
		t.Fatal(err)
	}
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/header" {
			w.Header().Set("Content-Type", "text/html; charset=GB2312")
		} else {
			w.Header().Set("Content-Type", "text/html")
		}
		w.Write([]byte(gbk))
	})
	f := NewFetcher(FetchOptions{AllowPrivate: true})
	for _, p := range []string{"/meta", "/header"} {
		got, err := f.Preview(context.Background(), srv.URL+p)
		if err != nil || got.Title != "中文标题" || got.Description != "简体中文页面" {
			t.Errorf("%s: %+v, %v", p, got, err)
		}
	}
}

func TestPreviewRefusesOtherTypes(t *testing.T) {
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/untyped" {
			w.Header()["Content-Type"] = nil
			w.Write(pngBytes(t, 3))
			return
		}
		w.Header().Set("Content-Type", "application/pdf")
		w.Write([]byte("%PDF-1.4"))
	})
	f := NewFetcher(FetchOptions{AllowPrivate: true})
	for _, p := range []string{"/pdf", "/untyped"} {
		if _, err := f.Preview(context.Background(), srv.URL+p); !errors.Is(err, ErrNotHTML) {
			t.Errorf("%s: got %v, want ErrNotHTML", p, err)
		}
	}
	if _, err := NewFetcher(FetchOptions{}).Preview(context.Background(), srv.URL+"/pdf"); !errors.Is(err, ErrPrivateAddress) {
		t.Errorf("loopback: got %v, want ErrPrivateAddress", err)
	}
}

func FuzzParseLink(f *testing.F) {
	f.Add([]byte(`<title>t</title><meta property="og:description" content="d">`), "text/html")
	f.Add([]byte("<meta charset=gbk><title>\xd6\xd0\xce\xc4</title>"), "")
	f.Add([]byte("<title>\xff\xfe\x00 \u2028 x</title>"), "text/html; charset=utf-8")
	f.Add([]byte(`<meta name=description content="`+strings.Repeat("字", 600)+`">`), "text/html; charset=shift_jis")
	f.Fuzz(func(t *testing.T, data []byte, contentType string) {
		l := parseLink(data, contentType)
		for _, s := range []string{l.Title, l.Description} {
			if !utf8.ValidString(s) {
				t.Fatalf("invalid UTF-8: %q", s)
			}
			if strings.ContainsAny(s, "\n\r\t\x00") || strings.HasPrefix(s, " ") || strings.HasSuffix(s, " ") {
				t.Fatalf("not one clean line: %q", s)
			}
		}
		if n := utf8.RuneCountInString(l.Title); n > MaxTitle {
			t.Fatalf("title of %d runes", n)
		}
		if n := utf8.RuneCountInString(l.Description); n > MaxDescription {
			t.Fatalf("description of %d runes", n)
		}
	})
}
